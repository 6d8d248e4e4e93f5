"""The local run backend: runs on this machine, each through the run's supervisor.

The backend prepares the run folder (hyper-parameters, git snapshot, command), writes run.json
and the store row, then starts ``python -m workbench.training.supervisor RUN_DIR`` in a session
of its own and returns once the supervisor has started the trainer. The supervisor, not this
process, is the trainer's parent, so a run outlives the window or the CLI that started it.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from workbench.git.snapshot import take_snapshot
from workbench.platform.atomic_files import write_text_atomically
from workbench.platform.detach import start_detached
from workbench.training.errors import TrainingError
from workbench.training.hints import workbench_command
from workbench.training.log_text import tail_text
from workbench.training.metrics import final_metrics, keep_metrics_up_to
from workbench.platform.processes import is_same_process
from workbench.training.processes import kill_run, stop_run
from workbench.training.run_end import recorded_outcome
from workbench.training.run_folder import RunFolder, create_run_folder
from workbench.training.run_info import (
    COMPLETED,
    FAILED,
    LOCAL_BACKEND,
    LOST,
    STARTING,
    STOPPING,
    TERMINATED,
    RunInfo,
)
from workbench.training.run_spec import more_epochs, prepare_resume, prepare_run, trainer_environment
from workbench.training.run_store import RunStore

# A supervisor has this long to start the trainer (Python start-up on a loaded machine).
START_TIMEOUT_S = 30.0
# terminate() waits this long for the supervisor to record the end.
TERMINATE_WAIT_S = 5.0
# A run that has been "starting" this long without a supervisor was never launched.
LAUNCH_GRACE_S = 60.0


class LocalBackend:
    """Runs of the project at ``project_dir`` on this machine (a ``RunBackend``)."""

    name = LOCAL_BACKEND

    def __init__(self, project_dir: Path, store: RunStore):
        self.project_dir = Path(project_dir)
        self.store = store

    def targets(self) -> list[str]:
        """None: this machine is where a run trains when no target is named."""
        return []

    # -----------------------------------------------------------------------------------------
    # start

    def start(self, project_dir: Path | None = None, hparams_file=None, overrides=(), *, nproc: int = 1,
              target: str | None = None, resources=None, progress=None, cancel=None,
              environment: dict[str, str] | None = None, run_fields: dict | None = None) -> RunInfo:
        """Start a run of the project's training script with ``nproc`` processes; returns once
        the supervisor has started the trainer. ``environment``: more variables for the trainer
        (a dataset version's); ``run_fields``: more of the run's record (RunInfo fields).
        (``target``, ``resources``, ``progress`` and ``cancel`` are for backends that train
        elsewhere.)"""
        spec = prepare_run(self.project_dir, hparams_file, tuple(overrides), nproc)
        folder = create_run_folder(self.project_dir)
        try:
            write_text_atomically(folder.path / spec.hparams_name, spec.hparams_text)
            command = spec.command(str(Path("runs") / folder.id))
            info = RunInfo(id=folder.id, state=STARTING, run_dir=str(folder.path), project_dir=str(self.project_dir),
                           script=spec.script, hparams_file=spec.hparams_file, overrides=spec.overrides,
                           nproc=nproc, command=command, created_at=time.time(), hparams=spec.hparams,
                           hparams_copy=spec.hparams_name, warnings=list(spec.warnings), **(run_fields or {}))
            self._prepare(folder, info, command, resume_from=None, environment=environment)
        except BaseException:
            shutil.rmtree(folder.path, ignore_errors=True)
            raise
        return self._launch(folder, info)

    def _prepare(self, folder: RunFolder, info: RunInfo, command: list[str], resume_from: str | None,
                 environment: dict[str, str] | None = None) -> None:
        snapshot = take_snapshot(self.project_dir)
        snapshot.write(folder.git_json, folder.git_patch)
        info.git_commit, info.git_branch, info.git_dirty = snapshot.commit, snapshot.branch, snapshot.dirty
        folder.write_command(command, str(self.project_dir),
                             {**trainer_environment(folder.path, folder.id, resume_from), **(environment or {})})
        folder.write_info(info)
        self.store.put(info)

    def _launch(self, folder: RunFolder, info: RunInfo) -> RunInfo:
        """Start the supervisor of ``folder`` and return once it has started the trainer."""
        if start_detached("workbench.training.supervisor", [str(folder.path)], folder.supervisor_log,
                          cwd=self.project_dir) != 0:
            return self._failed_to_launch(folder, info)
        deadline = time.monotonic() + START_TIMEOUT_S
        delay = 0.005
        while time.monotonic() < deadline:
            current = folder.read_info()
            if current.state != STARTING:
                return current
            if current.supervisor_pid and not is_same_process(current.supervisor_pid, current.supervisor_start):
                current = folder.read_info()
                if current.state != STARTING:
                    return current
                return self._failed_to_launch(folder, current)
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        return self._failed_to_launch(folder, folder.read_info())

    def _failed_to_launch(self, folder: RunFolder, info: RunInfo) -> RunInfo:
        detail = tail_text(folder.supervisor_log, limit=2000).strip().splitlines()
        info.state, info.ended_at = FAILED, time.time()
        info.error = "Workbench could not start the run" + (f": {detail[-1]}" if detail else "")
        folder.write_info(info)
        self.store.put(info)
        raise TrainingError(f"{info.error}. See {folder.supervisor_log}.")

    # -----------------------------------------------------------------------------------------
    # stop and terminate

    def stop(self, info: RunInfo) -> RunInfo:
        """Ask the trainer to checkpoint and exit; returns at once with the state "stopping"."""
        self._require_active(info, "stop")
        folder = RunFolder(info.run_dir)
        folder.stop_requested.touch()
        current = self._with_group(folder, info)
        if current.pgid:
            stop_run(current.pgid, current.pid_start, current.nproc)
        # (While it is starting, the supervisor sends the signal once it has a process group.)
        current.state = STOPPING
        return current

    def terminate(self, info: RunInfo) -> RunInfo:
        """Kill the run's process group; returns once the end is recorded (a few seconds at most)."""
        self._require_active(info, "terminate")
        folder = RunFolder(info.run_dir)
        folder.terminate_requested.touch()
        current = self._with_group(folder, info)
        if current.pgid:
            kill_run(current.pgid, current.pid_start)
        deadline = time.monotonic() + TERMINATE_WAIT_S
        while time.monotonic() < deadline:
            current = folder.read_info()
            if not current.is_active:
                return current
            if not is_same_process(current.supervisor_pid, current.supervisor_start):
                break  # no supervisor to record it: do it here
            time.sleep(0.02)
        current = folder.read_info()
        if current.is_active:
            current.state, current.ended_at = TERMINATED, time.time()
            folder.write_info(current)
            self.store.put(current)
        return current

    @staticmethod
    def _with_group(folder: RunFolder, info: RunInfo) -> RunInfo:
        """``info``, re-read when it was taken before the trainer had a process group."""
        return info if info.pgid else folder.read_info()

    @staticmethod
    def _require_active(info: RunInfo, verb: str) -> None:
        if not info.is_active:
            raise TrainingError(f"Run {info.id} is not running (it is {info.state}), so there is nothing to {verb}.")

    # -----------------------------------------------------------------------------------------
    # resume

    def resume(self, info: RunInfo, new_run: bool = False, overrides=(), *, target: str | None = None,
               resources=None, progress=None, cancel=None) -> RunInfo:
        """Continue ``info`` from its last checkpoint: in the same run folder, or in a new run
        (with ``overrides`` of its hyper-parameters, e.g. more epochs). A run goes on elsewhere
        through the backend of its ``target``, never here: ``resources`` are refused."""
        overrides = list(overrides)
        if info.is_active:
            raise TrainingError(f"Run {info.id} is still {info.state}. Stop it before resuming it.")
        if resources:
            as_new_run = workbench_command(info.project_dir, "runs resume", info.id, "--new")
            if not new_run:
                raise TrainingError(f"Run {info.id} goes on in the same run only where it ran, with its resources: "
                                    f"resume it as a new run to train on another cluster or with other resources "
                                    f"(`{as_new_run} --cluster NAME`).")
            raise TrainingError(f"Run {info.id} ran on this machine: resources are for a run on a cluster. Name the "
                                "cluster to go on there (`--cluster NAME`).")
        folder = RunFolder(info.run_dir)
        latest = folder.latest_checkpoint()
        if latest is None:
            raise TrainingError(f"Run {info.id} has no checkpoint to resume from (its trainer saved none). "
                                "Start a new run instead.")
        as_new_run = workbench_command(info.project_dir, "runs resume", info.id, "--new")
        if not new_run and info.state == COMPLETED:
            raise TrainingError(f"Run {info.id} completed, so it cannot be resumed in the same run (its end would "
                                "run again and replace its outputs). To train it further, resume it as a new run "
                                f"with more epochs: `{as_new_run} --set num_epochs={more_epochs(info)}`.")
        if not new_run and overrides:
            raise TrainingError(f"Changed hyper-parameters ({' '.join(overrides)}) need a new run: resume run "
                                f"{info.id} as a new run (`{as_new_run} --set …`).")
        step = int(latest.get("step", 0))
        if new_run:
            return self._resume_as_new_run(info, folder, latest["path"], step, overrides)
        keep_metrics_up_to(folder.metrics, step)
        for stale in (folder.stop_requested, folder.terminate_requested, folder.outcome_json):
            stale.unlink(missing_ok=True)
        with open(folder.stdout_log, "a", encoding="utf-8") as log:
            log.write(f"workbench: resuming from {Path(latest['path']).name} (step {step})\n")
        folder.write_command(info.command, str(self.project_dir),
                             trainer_environment(folder.path, folder.id, latest["path"]))
        # The run keeps its start; the time trained so far is kept, and the next segment adds to it.
        info.active_seconds = info.duration or 0.0
        info.resumes = [*info.resumes, {"step": step, "time": round(time.time(), 3)}]
        info.state = STARTING
        for name in ("segment_started_at", "ended_at", "exit_code", "pid", "pgid", "pid_start", "supervisor_pid",
                     "supervisor_start"):
            setattr(info, name, None)
        info.error = ""
        folder.write_info(info)
        self.store.put(info)
        return self._launch(folder, info)

    def _resume_as_new_run(self, old: RunInfo, old_folder: RunFolder, checkpoint: str, step: int,
                           overrides: list[str]) -> RunInfo:
        folder = create_run_folder(self.project_dir)
        try:
            name = old.hparams_copy or "run.hparams"
            base = old_folder.path / name
            if not base.is_file():  # deleted by hand: its values are in run.json
                from workbench_trainkit.hparams import format_hparams

                base = folder.path / name
                write_text_atomically(base, format_hparams(old.hparams))
            spec = prepare_resume(self.project_dir, old.script, old.nproc, base, old.hparams_file, old.hparams,
                                  old.overrides, overrides)
            write_text_atomically(folder.path / spec.hparams_name, spec.hparams_text)
            command = spec.command(str(Path("runs") / folder.id))
            if old_folder.metrics.exists():
                keep_metrics_up_to(old_folder.metrics, step, into=folder.metrics)
            info = RunInfo(id=folder.id, state=STARTING, run_dir=str(folder.path), project_dir=str(self.project_dir),
                           script=old.script, hparams_file=old.hparams_file, overrides=spec.overrides,
                           nproc=old.nproc, command=command, created_at=time.time(),
                           resumed_from=f"{old.id}@{step}", hparams=spec.hparams,
                           hparams_copy=spec.hparams_name, metrics_source=old.metrics_source)
            self._prepare(folder, info, command, resume_from=checkpoint)
        except BaseException:
            shutil.rmtree(folder.path, ignore_errors=True)
            raise
        return self._launch(folder, info)

    # -----------------------------------------------------------------------------------------
    # products, state, resources

    def pull(self, info: RunInfo, progress=None, cancel=None):
        """Nothing to fetch: a run here writes its checkpoints and outputs into its folder."""
        raise TrainingError(f"Run {info.id} ran on this machine: its checkpoints and outputs are in {info.run_dir}.")

    def refresh(self, info: RunInfo) -> RunInfo:
        """``info`` as its folder has it now; "lost" (or the end the training helpers wrote)
        when its processes are gone without an end record."""
        folder = RunFolder(info.run_dir)
        current = folder.read_info()
        if current.is_active and not self._alive(current):
            current = folder.read_info()  # the supervisor may have recorded the end meanwhile
            if current.is_active and not self._alive(current):
                current = self._mark_lost(folder, current)
        return current

    def describe_resources(self, info: RunInfo) -> str:
        """How many processes the run trains with on this machine."""
        return f"{info.nproc} process{'es' if info.nproc != 1 else ''} on this machine"

    @staticmethod
    def _alive(info: RunInfo) -> bool:
        if info.supervisor_pid is None:
            # Being launched: since it was created, or resumed in the same run.
            launched = max([info.created_at] + [resume.get("time", 0) for resume in info.resumes
                                                if isinstance(resume.get("time", 0), (int, float))])
            return time.time() - launched < LAUNCH_GRACE_S
        if is_same_process(info.supervisor_pid, info.supervisor_start):
            return True
        # The supervisor is gone, but its trainer may train on (it never needed it).
        return is_same_process(info.pid, info.pid_start)

    def _mark_lost(self, folder: RunFolder, info: RunInfo) -> RunInfo:
        """The end of a run whose processes are gone with no supervisor to record it: the one
        the training helpers wrote in outcome.json during this segment, else "lost"."""
        outcome = recorded_outcome(folder, info.segment_started_at or info.started_at or info.created_at, slack=1.0)
        if outcome is not None:
            info.state, info.ended_at = outcome
            info.error = ""
        else:
            info.state = LOST
            info.ended_at = self._last_sign_of_life(folder) or time.time()
            info.error = ("The run's end was not seen: its processes ended without recording how (the computer "
                          "restarted, or its supervisor was killed). Its logs, metrics, checkpoints and outputs "
                          "are kept.")
        info.final_metrics = final_metrics(folder.metrics)
        try:
            folder.write_info(info)
        except OSError:
            pass  # a read-only project: shown as lost all the same
        return info

    @staticmethod
    def _last_sign_of_life(folder: RunFolder) -> float | None:
        times = []
        for path in (folder.stdout_log, folder.stderr_log, folder.metrics):
            try:
                times.append(os.stat(path).st_mtime)
            except OSError:
                pass
        return max(times) if times else None

"""Runs on this machine: start, stop, terminate and resume, each through the run's supervisor.

The runner prepares the run folder (hyper-parameters, git snapshot, command), writes run.json
and the store row, then starts ``python -m workbench.training.supervisor RUN_DIR`` in a session
of its own and returns once the supervisor has started the trainer. The supervisor, not this
process, is the trainer's parent, so a run outlives the window or the CLI that started it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from workbench.git.snapshot import take_snapshot
from workbench.platform.atomic_files import write_text_atomically
from workbench.training.errors import TrainingError
from workbench.training.hints import workbench_command
from workbench.training.log_text import tail_text
from workbench.platform.processes import is_same_process
from workbench.training.processes import kill_run, stop_run
from workbench.training.run_folder import RunFolder, create_run_folder
from workbench.training.run_info import COMPLETED, FAILED, STARTING, STOPPING, TERMINATED, RunInfo
from workbench.training.run_spec import prepare_resume, prepare_run, trainer_environment
from workbench.training.run_store import RunStore

# A supervisor has this long to start the trainer (Python start-up on a loaded machine).
START_TIMEOUT_S = 30.0
# terminate() waits this long for the supervisor to record the end.
TERMINATE_WAIT_S = 5.0


class LocalRunner:
    def __init__(self, project_dir: Path, store: RunStore):
        self.project_dir = Path(project_dir)
        self.store = store

    # -----------------------------------------------------------------------------------------
    # start

    def start(self, hparams_file=None, overrides=(), nproc: int = 1) -> RunInfo:
        spec = prepare_run(self.project_dir, hparams_file, overrides, nproc)
        folder = create_run_folder(self.project_dir)
        try:
            write_text_atomically(folder.path / spec.hparams_name, spec.hparams_text)
            command = spec.command(str(Path("runs") / folder.id))
            info = RunInfo(id=folder.id, state=STARTING, run_dir=str(folder.path), project_dir=str(self.project_dir),
                           script=spec.script, hparams_file=spec.hparams_file, overrides=spec.overrides,
                           nproc=nproc, command=command, created_at=time.time(), hparams=spec.hparams,
                           hparams_copy=spec.hparams_name, warnings=list(spec.warnings))
            self._prepare(folder, info, command, resume_from=None)
        except BaseException:
            shutil.rmtree(folder.path, ignore_errors=True)
            raise
        return self._launch(folder, info)

    def _prepare(self, folder: RunFolder, info: RunInfo, command: list[str], resume_from: str | None) -> None:
        snapshot = take_snapshot(self.project_dir)
        snapshot.write(folder.git_json, folder.git_patch)
        info.git_commit, info.git_branch, info.git_dirty = snapshot.commit, snapshot.branch, snapshot.dirty
        folder.write_command(command, str(self.project_dir), trainer_environment(folder.path, folder.id, resume_from))
        folder.write_info(info)
        self.store.put(info)

    def _launch(self, folder: RunFolder, info: RunInfo) -> RunInfo:
        """Start the supervisor of ``folder`` and return once it has started the trainer."""
        env = dict(os.environ)
        # The supervisor must import this very Workbench, however this process found it.
        workbench_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [workbench_root, env.get("PYTHONPATH", "")]))
        with open(folder.supervisor_log, "ab") as log:
            launcher = subprocess.Popen([sys.executable, "-m", "workbench.training.supervisor", str(folder.path)],
                                        cwd=self.project_dir, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                        stderr=log, start_new_session=True)
        # The supervisor forks and its first process exits at once: reaping it here leaves no zombie.
        if launcher.wait() != 0:
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

    def resume(self, info: RunInfo, new_run: bool = False, overrides=()) -> RunInfo:
        """Continue ``info`` from its last checkpoint: in the same run folder, or in a new run
        (with ``overrides`` of its hyper-parameters, e.g. more epochs)."""
        overrides = list(overrides)
        if info.is_active:
            raise TrainingError(f"Run {info.id} is still {info.state}. Stop it before resuming it.")
        folder = RunFolder(info.run_dir)
        latest = folder.latest_checkpoint()
        if latest is None:
            raise TrainingError(f"Run {info.id} has no checkpoint to resume from (its trainer saved none). "
                                "Start a new run instead.")
        as_new_run = workbench_command(info.project_dir, "runs resume", info.id, "--new")
        if not new_run and info.state == COMPLETED:
            raise TrainingError(f"Run {info.id} completed, so it cannot be resumed in the same run (its end would "
                                "run again and replace its outputs). To train it further, resume it as a new run "
                                f"with more epochs: `{as_new_run} --set num_epochs={_more_epochs(info)}`.")
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


def _more_epochs(info: RunInfo) -> int:
    """A number of epochs to suggest for training a completed run further."""
    epochs = info.hparams.get("num_epochs")
    return 2 * epochs if isinstance(epochs, int) and not isinstance(epochs, bool) and epochs > 0 else 20


def keep_metrics_up_to(path: Path, step: int, into: Path | None = None) -> None:
    """Keep the lines of the metrics file ``path`` at or before ``step`` (written to ``into``, or
    back to ``path``); records after the checkpoint would be trained again.

    A line without a step belongs to the step before it. The lines are kept byte for byte."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        data = b""
    kept, last_step = [], None
    for line in data.splitlines(keepends=True):
        if not line.endswith(b"\n"):
            break  # cut off by a crash: not a record
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("step"), (int, float)):
            last_step = record["step"]
        if last_step is None or last_step <= step:
            kept.append(line)
    target = into or path
    if kept or target.exists():
        from workbench.platform.atomic_files import write_atomically

        write_atomically(target, b"".join(kept))

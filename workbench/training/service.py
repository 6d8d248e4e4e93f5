"""RunService: the one entry point to a project's runs, for the window, the CLI and tests.

Each run is its folder under ``runs/`` (run.json has the last word) and a row in the project's
run store (the history, fast to list). Listing reconciles the two: a folder without a row is
added; a row whose folder was deleted is dropped, since deleting the folder is how a run is
thrown away (its logs, metrics and checkpoints are gone, so there is nothing left to show or
resume); an active run whose processes are gone without an end record takes the end the
training helpers wrote in ``outcome.json`` (completed or stopped), else becomes "lost".
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

from workbench.training.errors import TrainingError
from workbench.training.hints import workbench_command
from workbench.training.local_runner import LocalRunner
from workbench.training.metrics import MetricsTail, update_final
from workbench.training.processes import is_same_process
from workbench.training.run_folder import RunFolder, is_run_id, runs_dir
from workbench.training.run_info import COMPLETED, LOST, PENDING, RUNNING, STARTING, STOPPED, STOPPING, RunInfo
from workbench.training.run_store import RunStore

# A run that has been "starting" this long without a supervisor was never launched.
LAUNCH_GRACE_S = 60.0
WAIT_POLL_S = 0.1


class RunService:
    """The runs of the project at ``project_dir``. Safe to call from worker threads."""

    def __init__(self, project_dir: Path | str):
        self.project_dir = Path(project_dir).expanduser().resolve()
        self.store = RunStore(self.project_dir)
        self.runner = LocalRunner(self.project_dir, self.store)
        self._lock = threading.Lock()
        self._live: dict[str, tuple[MetricsTail, dict]] = {}

    @property
    def runs_dir(self) -> Path:
        return runs_dir(self.project_dir)

    # -----------------------------------------------------------------------------------------
    # reading

    def list_runs(self) -> list[RunInfo]:
        """Every run, newest first, with the states of runs whose processes died reconciled."""
        try:
            known = {info.id: info for info in self.store.all()}
            store_usable = True
        except TrainingError:
            known, store_usable = {}, False
        folders = self._folder_names()
        for run_id in [run_id for run_id in known if run_id not in folders]:
            del known[run_id]
            if store_usable:
                self.store.delete(run_id)
        for run_id in folders - known.keys():
            try:
                info = RunFolder(self.runs_dir / run_id).read_info()
            except TrainingError:
                continue  # being created, or not a run folder
            known[run_id] = info
            if store_usable:
                self._put(info)
        runs = [self._refresh(info, store_usable) for info in known.values()]
        runs.sort(key=lambda info: (info.created_at, info.id), reverse=True)
        return runs

    def get(self, run_id: str) -> RunInfo:
        """The run ``run_id`` (or the one run whose id starts with it); TrainingError if unknown."""
        return self._refresh(RunFolder(self.runs_dir / self._resolve(run_id)).read_info())

    def wait(self, run_id: str, timeout: float | None = None) -> RunInfo:
        """The run once it is no longer active, or as it is when ``timeout`` seconds have passed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            info = self.get(run_id)
            if not info.is_active or (deadline is not None and time.monotonic() >= deadline):
                return info
            time.sleep(WAIT_POLL_S)

    def log_path(self, run_id: str, stream: str = "stdout") -> Path:
        return RunFolder(self.runs_dir / self._resolve(run_id)).log(stream)

    def metrics_path(self, run_id: str) -> Path:
        return RunFolder(self.runs_dir / self._resolve(run_id)).metrics

    def run_folder(self, run_id: str) -> RunFolder:
        return RunFolder(self.runs_dir / self._resolve(run_id))

    # -----------------------------------------------------------------------------------------
    # acting

    def start(self, hparams_file=None, overrides=(), nproc: int = 1, cluster: str | None = None,
              resources=None, progress=None, cancel=None) -> RunInfo:
        """Start a run of the project's training script; returns once the trainer runs.

        ``hparams_file`` (absolute, or relative to the project) defaults to ``[training] hparams``.
        A hyper-parameter file or override that does not check out raises TrainingError (with
        ``diagnostics``) and creates nothing.

        With ``cluster`` (a cluster profile's name), the run trains there instead with
        ``resources`` (``workbench.cluster.jobs.Resources`` or a dict of its fields): this returns
        once the job is submitted (state "pending"), reporting each stage to ``progress`` and
        honouring ``cancel`` until then (see ``workbench.cluster.remote_run``). It can take a
        while (code and data are sent): call it off the GUI thread. ClusterError when the
        cluster cannot be reached or refuses a step."""
        if cluster:
            from workbench.cluster.remote_run import start_cluster_run

            return start_cluster_run(self.project_dir, cluster, resources, hparams_file, tuple(overrides),
                                     progress=progress, cancel=cancel)
        return self.runner.start(hparams_file, tuple(overrides), nproc)

    def stop(self, run_id: str) -> RunInfo:
        """Ask the run to checkpoint and exit; returns at once (state "stopping")."""
        info = self.get(run_id)
        if info.is_cluster:
            from workbench.cluster.remote_run import request_stop

            return request_stop(info)
        return self.runner.stop(info)

    def terminate(self, run_id: str) -> RunInfo:
        """Kill the run's whole process group (a cluster run: cancel its job, and wait for its
        end to be recorded, up to half a minute)."""
        info = self.get(run_id)
        if info.is_cluster:
            from workbench.cluster.remote_run import request_terminate

            info = request_terminate(info)
        else:
            info = self.runner.terminate(info)
        self._forget_live(info.id)
        return info

    def resume(self, run_id: str, new_run: bool = False, overrides=(), progress=None, cancel=None,
               cluster: str | None = None, resources=None) -> RunInfo:
        """Continue the run from its last checkpoint, in the same run or (``new_run``) a new one.

        A completed run can only go on as a new run. ``overrides`` ("key=value") change the
        hyper-parameters of the new run (e.g. ``num_epochs=20``); TrainingError for the same run.
        A cluster run goes on with a new job on its cluster (``progress`` and ``cancel`` as for
        ``start``). A new run may train on the cluster of profile ``cluster`` instead (a local
        run too), and with ``resources`` (a dict of some of Resources' fields) changed."""
        info = self.get(run_id)
        if info.is_cluster or cluster or resources:
            from workbench.cluster.remote_run import resume_cluster_run

            info = resume_cluster_run(info, new_run, tuple(overrides), progress=progress, cancel=cancel,
                                      cluster=cluster, resources=resources)
        else:
            info = self.runner.resume(info, new_run, tuple(overrides))
        self._forget_live(info.id)
        return info

    def pull(self, run_id: str, progress=None, cancel=None):
        """Fetch a cluster run's checkpoints/ and outputs/ into its folder now (only what is new
        or changed); returns ``workbench.cluster.mirror.PullReport``. TrainingError for a local
        run. The follower does this by itself when the job ends."""
        from workbench.cluster.remote_run import pull

        return pull(self.get(run_id), progress=progress, cancel=cancel)

    def delete(self, run_id: str) -> None:
        """Delete a run that is not active: its folder and its row in the history."""
        info = self.get(run_id)
        if info.is_active:
            raise TrainingError(f"Run {info.id} is still {info.state}. Stop or terminate it before deleting it.")
        shutil.rmtree(info.run_dir, ignore_errors=True)
        self.store.delete(info.id)
        self._forget_live(info.id)

    # -----------------------------------------------------------------------------------------
    # reconciling

    def _refresh(self, info: RunInfo, store_usable: bool = True) -> RunInfo:
        """``info`` as it is now: the folder's run.json for an active run, "lost" when its
        processes are gone without an end record, "stopping" once a stop was asked for."""
        if not info.is_active:
            return info
        folder = RunFolder(info.run_dir)
        try:
            current = folder.read_info()
        except TrainingError:
            return info
        if current.is_cluster:
            return self._refresh_cluster(info, current, store_usable)
        if current.is_active and not self._alive(current):
            current = folder.read_info()  # the supervisor may have recorded the end meanwhile
            if current.is_active and not self._alive(current):
                current = self._mark_lost(folder, current)
        if current.state in (STARTING, RUNNING) and folder.stop_requested.exists():
            current.state = STOPPING
        if store_usable and current.to_json() != info.to_json():
            self._put(current)
        if current.is_active:
            current.final_metrics = self._live_final(current)
        else:
            self._forget_live(current.id)
        return current

    def _refresh_cluster(self, info: RunInfo, current: RunInfo, store_usable: bool) -> RunInfo:
        """A cluster run as its follower recorded it; the follower started again when it has
        none (the job lives on the cluster whatever happened here)."""
        from workbench.cluster.remote_run import ensure_followed

        folder = RunFolder(current.run_dir)
        current = ensure_followed(current)
        if current.state in (STARTING, PENDING, RUNNING) and folder.stop_requested.exists():
            current.state = STOPPING
        if store_usable and current.to_json() != info.to_json():
            self._put(current)
        if current.is_active:
            current.final_metrics = self._live_final(current)
        else:
            self._forget_live(current.id)
        return current

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
        outcome = folder.read_outcome()
        segment_start = info.segment_started_at or info.started_at or info.created_at
        if outcome is not None and outcome["time"] >= segment_start - 1.0:
            info.state = COMPLETED if outcome["state"] == "completed" else STOPPED
            info.ended_at = float(outcome["time"])
            info.error = ""
        else:
            info.state = LOST
            info.ended_at = self._last_sign_of_life(folder) or time.time()
            info.error = ("The run's end was not seen: its processes ended without recording how (the computer "
                          "restarted, or its supervisor was killed). Its logs, metrics, checkpoints and outputs "
                          "are kept.")
        from workbench.training.metrics import final_metrics

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

    def _live_final(self, info: RunInfo) -> dict:
        """The last values of a running run's metrics, read incrementally."""
        with self._lock:
            tail, final = self._live.get(info.id) or (MetricsTail(Path(info.run_dir) / "metrics.jsonl"), {})
            records = tail.read_new()
            if tail.restarted:
                final = {}
            final = update_final(final, records)
            self._live[info.id] = (tail, final)
            return dict(final)

    def _forget_live(self, run_id: str) -> None:
        with self._lock:
            self._live.pop(run_id, None)

    def _put(self, info: RunInfo) -> None:
        try:
            self.store.put(info)
        except TrainingError:
            pass  # the folder has the record; the history catches up on the next list

    def _folder_names(self) -> set[str]:
        try:
            return {entry.name for entry in os.scandir(self.runs_dir) if entry.is_dir() and is_run_id(entry.name)}
        except FileNotFoundError:
            return set()

    def _resolve(self, run_id: str) -> str:
        """The full id of ``run_id``, which may be a unique prefix of one."""
        run_id = str(run_id).strip()
        if not is_run_id(run_id):
            raise TrainingError(f"{run_id!r} is not a run id.")
        if (self.runs_dir / run_id).is_dir():
            return run_id
        matches = sorted(name for name in self._folder_names() if name.startswith(run_id))
        if not matches:
            raise TrainingError(f"There is no run {run_id} in {self.project_dir}. "
                                f"`{workbench_command(self.project_dir, 'runs list')}` shows the runs.")
        if len(matches) > 1:
            shown = ", ".join(matches[:5]) + (" …" if len(matches) > 5 else "")
            raise TrainingError(f"{run_id} could be any of {len(matches)} runs ({shown}). Give more of the id.")
        return matches[0]

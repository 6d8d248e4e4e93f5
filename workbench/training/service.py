"""RunService: the one entry point to a project's runs, for the window, the CLI and tests.

Each run is its folder under ``runs/`` (run.json has the last word) and a row in the project's
run store (the history, fast to list). Listing reconciles the two: a folder without a row is
added; a row whose folder was deleted is dropped, since deleting the folder is how a run is
thrown away (its logs, metrics and checkpoints are gone, so there is nothing left to show or
resume); an active run whose processes are gone without an end record takes the end the
training helpers wrote in ``outcome.json`` (completed or stopped), else becomes "lost".

Every request goes to the run's backend (``workbench.training.backends``): the local one for a
run on this machine, the one a plugin registered for the backend the run records (a cluster's
"slurm" or "ssh"), or, for a new run, the one whose target (a cluster profile) was named.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

from workbench.training.backends import RunBackend, backend_for_target, registered_backend
from workbench.training.errors import TrainingError
from workbench.training.hints import workbench_command
from workbench.training.local_runner import LocalBackend
from workbench.training.metrics import MetricsTail, update_final
from workbench.training.run_folder import RunFolder, is_run_id, runs_dir
from workbench.training.run_info import LOCAL_BACKEND, PENDING, RUNNING, STARTING, STOPPING, RunInfo
from workbench.training.run_store import RunStore

WAIT_POLL_S = 0.1


class RunService:
    """The runs of the project at ``project_dir``. Safe to call from worker threads."""

    def __init__(self, project_dir: Path | str):
        self.project_dir = Path(project_dir).expanduser().resolve()
        self.store = RunStore(self.project_dir)
        self.local = LocalBackend(self.project_dir, self.store)
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

    def backend(self, name: str) -> RunBackend:
        """The backend of runs recorded with ``name`` (``RunInfo.backend``); TrainingError when
        no installed plugin provides it."""
        return self.local if name == LOCAL_BACKEND else registered_backend(name)

    def start(self, hparams_file=None, overrides=(), nproc: int = 1, cluster: str | None = None,
              resources=None, progress=None, cancel=None, dataset_version: str | None = None,
              from_version: str | None = None, register: bool = True) -> RunInfo:
        """Start a run of the project's training script; returns once the trainer runs.

        ``dataset_version`` (a number) trains on that dataset version's samples only,
        ``from_version`` (a model version's number or alias) fine-tunes its weights, and a
        completed run registers its model as the next model version unless ``register`` is
        false (see workbench.training.version_choice and registration).

        ``hparams_file`` (absolute, or relative to the project) defaults to ``[training] hparams``.
        A hyper-parameter file or override that does not check out raises TrainingError (with
        ``diagnostics``) and creates nothing.

        With ``cluster`` (a cluster profile's name), the run trains there instead, through the
        backend of that target, with ``resources`` (a dict of ``workbench.cluster.jobs.Resources``
        fields): this returns once the job is submitted (state "pending"), reporting each stage to
        ``progress`` (``RunProgress``) and honouring ``cancel`` until then. It can take a while
        (code and data are sent): call it off the GUI thread. ClusterError when the cluster
        cannot be reached or refuses a step."""
        from workbench.training.version_choice import choose_versions

        choice = choose_versions(self.project_dir, dataset_version, from_version, on_cluster=bool(cluster))
        overrides = (*overrides, *choice.overrides)
        if cluster:
            info = backend_for_target(cluster).start(self.project_dir, hparams_file, overrides, nproc=nproc,
                                                     target=cluster, resources=resources, progress=progress,
                                                     cancel=cancel)
            if not register:
                RunFolder(info.run_dir).no_register.touch()
            return info
        return self.local.start(self.project_dir, hparams_file, overrides, nproc=nproc, environment=choice.environment,
                                run_fields={"dataset_version": choice.dataset_version,
                                            "from_version": choice.from_version, "register": register})

    def stop(self, run_id: str) -> RunInfo:
        """Ask the run to checkpoint and exit; returns at once (state "stopping")."""
        info = self.get(run_id)
        return self.backend(info.backend).stop(info)

    def terminate(self, run_id: str) -> RunInfo:
        """Kill the run's whole process group (a cluster run: cancel its job, and wait for its
        end to be recorded, up to half a minute)."""
        info = self.get(run_id)
        info = self.backend(info.backend).terminate(info)
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
        backend = backend_for_target(cluster) if cluster else self.backend(info.backend)
        info = backend.resume(info, new_run, tuple(overrides), target=cluster or None, resources=resources,
                              progress=progress, cancel=cancel)
        self._forget_live(info.id)
        return info

    def pull(self, run_id: str, progress=None, cancel=None):
        """Fetch a cluster run's checkpoints/ and outputs/ into its folder now (only what is new
        or changed); returns the backend's report (``workbench.cluster.mirror.PullReport``).
        TrainingError for a local run. The follower does this by itself when the job ends."""
        info = self.get(run_id)
        return self.backend(info.backend).pull(info, progress=progress, cancel=cancel)

    def describe_resources(self, info: RunInfo) -> str:
        """What the run trains on, in a few words, as its backend says it ("" when no installed
        backend knows the run)."""
        try:
            return self.backend(info.backend).describe_resources(info)
        except TrainingError:
            return ""

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
        """``info`` as it is now: an active run as its backend finds it (the processes or job
        looked at, the end of one that is gone recorded), "stopping" once a stop was asked for."""
        if not info.is_active:
            return info
        folder = RunFolder(info.run_dir)
        try:
            current = folder.read_info()
            current = self.backend(current.backend).refresh(current)
        except TrainingError:
            return info
        if current.state in (STARTING, PENDING, RUNNING) and folder.stop_requested.exists():
            current.state = STOPPING
        if store_usable and current.to_json() != info.to_json():
            self._put(current)
        if current.is_active:
            current.final_metrics = self._live_final(current)
        else:
            self._forget_live(current.id)
        return current

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

"""Runs on a cluster: start, stop, terminate, resume and pull, for RunService and the CLI.

``start_cluster_run`` prepares a run as a local one is prepared (the same hyper-parameter checks,
the same run folder and RunInfo, with ``backend`` "slurm" or "ssh" and the cluster's fields),
then, each stage reported to ``progress`` and cancellable until the job is submitted:

    connect   to the cluster of the profile
    code      the exact code, through Git (code_sync.ship_code)
    trainkit  the training helpers, once per version (code_sync.ship_trainkit)
    data      the project's data, incrementally (data_sync.sync_data), when it has any
    submit    the hyper-parameters as used and the job script (kept locally as job.sh), submitted
    follow    the run's follower started (follower.py), which mirrors the job into the folder

The job runs in ``<work_root>/runs/<run id>`` on the cluster (its code in ``code/``), with the same
layout as the local folder. Stop and terminate are requests the follower carries out (it holds
the connection); they are written into the run folder, so one made while the cluster cannot be
reached is carried out when it can.
"""

from __future__ import annotations

import io
import json
import os
import posixpath
import shlex
import shutil
import time
from dataclasses import asdict
from pathlib import Path

from workbench.cluster.errors import ClusterError
from workbench.cluster.jobs import JobSpec, Resources, get_backend
from workbench.platform.atomic_files import write_text_atomically
from workbench.tasks import Cancelled, CancelToken
from workbench.training.backends import RunProgress
from workbench.training.errors import TrainingError
from workbench.training.hints import workbench_command
from workbench.platform.processes import is_same_process, process_start
from workbench.training.run_folder import RunFolder, create_run_folder
from workbench.training.run_info import (
    COMPLETED,
    FAILED,
    PENDING,
    STARTING,
    STOPPING,
    RunInfo,
)
from workbench.training.run_store import RunStore

STAGES = ("connect", "code", "trainkit", "data", "submit", "follow")
JOB_FILE = "job.json"          # the JobSpec, to submit the same job again on a resume
SCRIPT_FILE = "job.sh"
# A run being prepared by a process that is gone for this long was never submitted.
SUBMIT_GRACE_S = 30.0
# A follower started this recently is left time to take its lock before another is started.
FOLLOWER_START_GRACE_S = 10.0
FOLLOWER_STARTED = "follower-started"   # touched when a follower is started for a run
TERMINATE_WAIT_S = 30.0


# ---------------------------------------------------------------------------------------------
# start


def start_cluster_run(project_dir: Path | str, profile_name: str, resources: Resources | dict | None = None,
                      hparams_file=None, overrides=(), *, progress=None, cancel: CancelToken | None = None,
                      connection=None) -> RunInfo:
    """Start a run of the project's training script on the cluster of profile ``profile_name``.

    Returns once the job is submitted (state "pending"; the follower records the rest).
    TrainingError (with ``diagnostics``) for hyper-parameters that do not check out, ClusterError
    when the cluster cannot be reached or refuses a step, Cancelled when ``cancel`` was set before
    the job was submitted: then nothing of the run is left, here or there. ``connection`` (a
    connected ClusterConnection for the same profile) is used instead of a new one."""
    from workbench.training.run_spec import prepare_run

    project_dir = Path(project_dir).expanduser().resolve()
    profile = _profile(profile_name)
    # The connection is made while the run is prepared here: the one waits on the network, the
    # other on this machine's disk.
    connecting = _connect_in_background(profile, connection)
    try:
        resources = _resources(resources).with_profile_defaults(profile).check()
        backend = get_backend(profile.scheduler)
        spec = prepare_run(project_dir, hparams_file, tuple(overrides), nproc=1, check_data=False)
        data_settings = _data_settings(project_dir)
        _check_data_paths(spec, project_dir, data_settings)
        backend.script(_placeholder_job(resources))  # resources the backend cannot run are refused now
        folder = create_run_folder(project_dir)
    except BaseException:
        _close_unless_given(connecting, connection)
        raise
    info = RunInfo(id=folder.id, state=STARTING, run_dir=str(folder.path), project_dir=str(project_dir),
                   script=spec.script, hparams_file=spec.hparams_file, overrides=spec.overrides,
                   nproc=resources.world_size, created_at=time.time(), hparams=spec.hparams,
                   hparams_copy=spec.hparams_name, warnings=list(spec.warnings), backend=profile.scheduler,
                   cluster=profile.name, resources=resources.to_json(), supervisor_pid=os.getpid(),
                   supervisor_start=process_start(os.getpid()))
    launch = _Launch(project_dir, folder, info, profile, backend, progress, cancel, connection, connecting=connecting)
    try:
        write_text_atomically(folder.path / spec.hparams_name, spec.hparams_text)
        launch.save()
        return launch.run(spec.hparams_name, spec.hparams_text, spec.script, spec.args, spec.pass_hparams,
                          resources, data_settings)
    except BaseException:
        launch.abandon()
        raise


class _Launch:
    """One start (or resume) of a job, stage by stage; ``abandon`` undoes what it did."""

    def __init__(self, project_dir: Path, folder: RunFolder, info: RunInfo, profile, backend, progress, cancel,
                 connection, keep_folder: bool = False, connecting: "_Background | None" = None):
        self.project_dir, self.folder, self.info = project_dir, folder, info
        self.profile, self.backend = profile, backend
        self.progress, self.cancel = progress, cancel
        self.conn, self._own_conn = connection, connection is None
        self.connecting = connecting  # the connection being made already (_connect_in_background)
        self.keep_folder = keep_folder
        self.remote_run_dir = ""
        self.submitted = False
        self.store = RunStore(project_dir)

    def report(self, stage: str, message: str, fraction: float | None = None) -> None:
        if self.progress is not None:
            self.progress(RunProgress(message, fraction, stage=stage))

    def stage_progress(self, stage: str):
        return lambda report: self.report(stage, report.message, report.fraction)

    def check(self) -> None:
        if self.cancel is not None:
            self.cancel.raise_if_cancelled()

    def connect(self):
        self.report("connect", f"Connecting to {self.profile.name} ({self.profile.destination})")
        if self.connecting is not None:
            connecting, self.connecting = self.connecting, None
            connecting.join()
            self.conn = connecting.result if connecting.result is not None else self.conn
            if connecting.error is not None:
                raise connecting.error
        if self.conn is None:
            from workbench.cluster.connection import ClusterConnection

            self.conn = ClusterConnection(self.profile)
        self.conn.connect()
        self.check()
        return self.conn

    def run(self, hparams_name: str, hparams_text: str, script: str, args, pass_hparams: bool,
            resources: Resources, data_settings, resume_from: str | None = None,
            upload_checkpoint: Path | None = None) -> RunInfo:
        from workbench.cluster.code_sync import ship_code, ship_trainkit
        from workbench.git.snapshot import COMMIT_MAX_UNTRACKED_BYTES

        write_text_atomically(self.folder.path / "cluster.json", json.dumps(self.profile.to_json(), indent=1) + "\n")
        conn = self.connect()
        # Whether the helpers are there already is asked while the code is being shipped.
        helpers = _Background(lambda: ship_trainkit(_CommandsOnly(conn), self.profile.work_root))
        on_branch = _Background(lambda: _current_branch(self.project_dir))  # a git process, beside them
        try:
            code = ship_code(conn, self.project_dir, self.profile, self.folder.id,
                             progress=self.stage_progress("code"), cancel=self.cancel)
        finally:
            helpers.join()
            on_branch.join()
        self.remote_run_dir = posixpath.dirname(code.remote_checkout.rstrip("/"))
        self.info.git_commit, self.info.git_dirty = code.commit, code.dirty
        branch = on_branch.result
        self.info.git_branch = branch
        write_text_atomically(self.folder.git_json, json.dumps({**code.to_dict(), "branch": branch}, indent=1) + "\n")
        for path in code.untracked_skipped:
            # Said at the start and kept on the run: the job runs without these files.
            self.info.warnings.append(
                f"{path} was left out of the code sent to the cluster (untracked and over "
                f"{COMMIT_MAX_UNTRACKED_BYTES // 1_000_000} MB, or a repository of its own): commit it, "
                "or put it under a [cluster] data folder")
        self.check()
        self.report("trainkit", "Putting the training helpers on the cluster")
        trainkit = helpers.result if helpers.error is None else ship_trainkit(conn, self.profile.work_root)
        self.check()
        links = self.sync_data(conn, data_settings)
        self.check()
        self.report("submit", "Submitting the job")
        rrd = self.remote_run_dir
        if upload_checkpoint is not None:
            resume_from = self.upload_checkpoint(conn, upload_checkpoint)
        env = {"PYTHONPATH": trainkit, "PYTHONUNBUFFERED": "1", "WORKBENCH_RUN_DIR": rrd,
               "WORKBENCH_RUN_ID": self.folder.id}
        if resume_from:
            env["WORKBENCH_RESUME_FROM"] = resume_from
        workdir = code.remote_project_dir or code.remote_checkout
        job = JobSpec(run_id=self.folder.id, remote_run_dir=rrd, workdir=workdir,
                      script_args=_script_args(script, args, pass_hparams, f"{rrd}/{hparams_name}", rrd),
                      resources=resources, env=env, profile_env=dict(self.profile.env),
                      setup=self.profile.python_setup, links=links)
        return self.submit(conn, job, files={f"{rrd}/{hparams_name}": hparams_text})

    def sync_data(self, conn, data_settings) -> dict[str, str]:
        """Sync the project's data; the names to link in the code folder to the data there."""
        if data_settings is None or data_settings.empty:
            return {}
        from workbench.cluster import data_sync
        from workbench.project import load_project

        self.report("data", "Syncing the data")
        report = data_sync.sync_data(conn, self.project_dir, self.profile, load_project(self.project_dir).settings,
                                     progress=self.stage_progress("data"), cancel=self.cancel)
        remote = (report.remote_dir or data_sync.remote_data_dir(conn, self.profile, self.project_dir)).rstrip("/")
        names = [entry.strip("/").split("/")[0] for entry in data_settings.data if entry.strip("/") not in ("", ".")]
        names += [ref.name.strip("/").split("/")[0] for ref in data_settings.refs]
        links = {name: f"{remote}/{name}" for name in dict.fromkeys(names)}
        if any(entry.strip("/") in ("", ".") for entry in data_settings.data):
            links = {"": remote}  # the whole project folder is data: every name of it, merged
        return links

    def upload_checkpoint(self, conn, checkpoint: Path) -> str:
        """Put a local checkpoint in the remote run folder's checkpoints/; its remote path."""
        target = f"{self.remote_run_dir}/checkpoints/{checkpoint.name}"
        conn.run(f"mkdir -p {shlex.quote(self.remote_run_dir + '/checkpoints')}", check=True)
        conn.sftp().put(str(checkpoint), target)
        return target

    def submit(self, conn, job: JobSpec, files: dict[str, str] | None = None) -> RunInfo:
        """Submit ``job`` (writing ``files``, remote path -> text, in the same command) and
        record it; the follower is started."""
        from workbench.cluster.follower import start_follower
        from workbench.cluster.mirror import start_mirror_at

        text = self.backend.script(job)
        for log in (self.folder.stdout_log, self.folder.stderr_log):
            log.touch()  # as a local run's: there from the start, filled as the job writes
        write_text_atomically(self.folder.path / SCRIPT_FILE, text)
        write_text_atomically(self.folder.path / JOB_FILE, json.dumps(_job_json(job), indent=1) + "\n")
        self.folder.write_command(_display_command(job), job.workdir, job.env)
        self.check()  # the last moment a cancel leaves nothing behind
        job_id = self.backend.submit(conn, job, text, files=files)
        self.submitted = True
        info = self.info
        info.job_id, info.remote_run_dir = job_id, job.remote_run_dir
        info.command = _display_command(job)
        info.state, info.scheduler_state, info.scheduler_reason = PENDING, "", ""
        if not self.keep_folder:
            start_mirror_at(self.folder)
        self.save()
        self.report("follow", f"Job {job_id} submitted; following it")
        start_follower(self.folder.path)
        self.close()
        return info

    def save(self) -> None:
        self.folder.write_info(self.info)
        try:
            self.store.put(self.info)
        except TrainingError:
            pass

    def close(self) -> None:
        if self.connecting is not None:
            self.conn = _close_unless_given(self.connecting, None if self._own_conn else self.conn)
            self.connecting = None
        if self._own_conn and self.conn is not None:
            self.conn.close()

    def abandon(self) -> None:
        """After a failure or a cancel before the job was submitted: remove the run, here and on
        the cluster (a resumed run keeps its folder and is marked failed instead)."""
        if self.submitted:
            self.close()
            return
        if self.remote_run_dir and self.conn is not None and not self.keep_folder:
            try:
                self.conn.run(f"rm -rf {shlex.quote(self.remote_run_dir)}", check=False, timeout=30)
            except Exception:  # noqa: BLE001 - the cluster may be why we are here
                pass
        self.close()
        if self.keep_folder:
            return
        shutil.rmtree(self.folder.path, ignore_errors=True)
        try:
            self.store.delete(self.folder.id)
        except TrainingError:
            pass


class _Background:
    """``work()`` on a thread of its own; ``result`` or ``error`` once joined."""

    def __init__(self, work):
        import threading

        self.result, self.error = None, None
        self._thread = threading.Thread(target=self._run, args=(work,), daemon=True)
        self._thread.start()

    def _run(self, work) -> None:
        try:
            self.result = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the joining thread
            self.error = exc

    def join(self) -> None:
        self._thread.join()


def _connect_in_background(profile, connection) -> _Background:
    """``connection`` (or a new ClusterConnection to ``profile``) connecting on a thread of its
    own; joined, its ``result`` is the connection, or its ``error`` says why there is none."""

    def connect():
        if connection is not None:
            return connection.connect()
        from workbench.cluster.connection import ClusterConnection

        return ClusterConnection(profile).connect()

    return _Background(connect)


def _close_unless_given(connecting: _Background, given):
    """Wait for ``connecting`` and close the connection it made unless it is ``given`` (the
    caller's own); returns ``given``."""
    connecting.join()
    if connecting.result is not None and connecting.result is not given:
        connecting.result.close()
    return given


class _CommandsOnly:
    """The connection for work beside another's: commands only (each has a channel of its
    own), no SFTP (the connection's one SFTP client serves one thread at a time). Work that
    needs SFTP fails, and is done again afterwards on the connection itself."""

    def __init__(self, conn):
        self._conn = conn

    def run(self, command: str, timeout: float | None = None, check: bool = True,
            retry_if_dropped: bool = False):
        return self._conn.run(command, timeout=timeout, check=check, retry_if_dropped=retry_if_dropped)

    def sftp(self):
        raise ClusterError("no SFTP beside the code upload")


def _profile(name: str):
    from workbench.cluster.profiles import get_profile

    try:
        return get_profile(name)
    except ClusterError as exc:
        raise TrainingError(str(exc)) from None


def _resources(resources) -> Resources:
    if resources is None:
        return Resources()
    if isinstance(resources, Resources):
        return resources
    if isinstance(resources, dict):
        return Resources.from_json(resources)
    raise TypeError(f"resources must be Resources or a dict, not {type(resources).__name__}")


def _placeholder_job(resources: Resources) -> JobSpec:
    return JobSpec(run_id="check", remote_run_dir="/tmp/check", workdir="/tmp/check", script_args=["train.py"],
                   resources=resources)


def _data_settings(project_dir: Path):
    from workbench.cluster.data_selection import read_data_settings
    from workbench.project import load_project

    return read_data_settings(load_project(project_dir).settings, project_dir)


def _check_data_paths(spec, project_dir: Path, data_settings) -> None:
    """The local data check of a run, less what the cluster has that this machine has not: an
    absolute ``dataset_dir`` (a folder on the cluster) or one under a data reference."""
    from workbench.training.run_spec import check_data_paths

    refs = [ref.name.strip("/") for ref in data_settings.refs]

    def on_cluster(dataset_dir: str) -> bool:
        return dataset_dir.startswith("/") or any(dataset_dir.strip("/") == ref or
                                                  dataset_dir.strip("/").startswith(ref + "/") for ref in refs)

    check_data_paths(spec, elsewhere=on_cluster)


def _script_args(script: str, args, pass_hparams: bool, hparams_path: str, run_dir: str) -> list[str]:
    if args is not None:
        return [script, *[arg.replace("{hparams}", hparams_path).replace("{run_dir}", run_dir) for arg in args]]
    return [script, "--hparams", hparams_path] if pass_hparams else [script]


def _display_command(job: JobSpec) -> list[str]:
    return [job.python, *job.script_args]


def _job_json(job: JobSpec) -> dict:
    data = asdict(job)
    data["resources"] = job.resources.to_json()
    return data


def read_job(folder: RunFolder) -> JobSpec:
    data = json.loads((folder.path / JOB_FILE).read_text(encoding="utf-8"))
    data["resources"] = Resources.from_json(data.get("resources"))
    return JobSpec(**data)


# ---------------------------------------------------------------------------------------------
# following, stopping, terminating


def ensure_followed(info: RunInfo) -> RunInfo:
    """``info`` as it is, with its follower started when the run is active, submitted and
    followed by none (Workbench was closed, the computer restarted, a follower gave up). A run
    whose preparation was cut short before its job was submitted is recorded as failed."""
    from workbench.cluster.follower import is_followed, start_follower

    if not info.is_active:
        return info
    folder = RunFolder(info.run_dir)
    if not info.job_id:
        if is_same_process(info.supervisor_pid, info.supervisor_start):
            return info
        launched = max([info.created_at] + [r["time"] for r in info.resumes
                                            if isinstance(r.get("time"), (int, float))])
        if time.time() - launched < SUBMIT_GRACE_S:
            return info
        current = folder.read_info()
        if current.job_id or not current.is_active:
            return current
        current.state, current.ended_at = FAILED, time.time()
        current.error = "Workbench stopped before the job was submitted to the cluster; start the run again."
        folder.write_info(current)
        return current
    if is_followed(folder.path):
        return info
    marker = folder.path / FOLLOWER_STARTED
    try:
        if time.time() - marker.stat().st_mtime < FOLLOWER_START_GRACE_S:
            return info
    except OSError:
        pass
    try:
        marker.touch()
        start_follower(folder.path)
    except OSError:
        pass  # a read-only project: shown as it was recorded
    return info


def request_stop(info: RunInfo) -> RunInfo:
    """Ask the run's job to checkpoint and exit; returns at once (state "stopping"). The
    follower sends the signal (SIGTERM through scancel, or to the process group)."""
    _require_active(info, "stop")
    folder = RunFolder(info.run_dir)
    folder.stop_requested.touch()
    ensure_followed(info)
    info.state = STOPPING
    return info


def request_terminate(info: RunInfo, wait: float = TERMINATE_WAIT_S) -> RunInfo:
    """Cancel the job (scancel, or SIGKILL to its processes); returns once its end is recorded
    (its checkpoints and outputs pulled), or after ``wait`` seconds as it is then."""
    _require_active(info, "terminate")
    folder = RunFolder(info.run_dir)
    folder.terminate_requested.touch()
    ensure_followed(info)
    deadline = time.monotonic() + wait
    current = folder.read_info()
    while current.is_active and time.monotonic() < deadline:
        time.sleep(0.1)
        current = folder.read_info()
    return current


def active_runs_on(profile_name: str, project_dirs) -> list[RunInfo]:
    """The runs of the projects at ``project_dirs`` that are still active (starting, pending,
    running or stopping, as their run folders last recorded) on the cluster of profile
    ``profile_name``. Projects that are gone or cannot be read are passed over; nothing is
    written."""
    from workbench.training.run_folder import is_run_id, runs_dir

    found = []
    for project_dir in dict.fromkeys(Path(path).expanduser().resolve() for path in project_dirs):
        try:
            names = sorted(entry.name for entry in os.scandir(runs_dir(project_dir))
                           if entry.is_dir() and is_run_id(entry.name))
        except OSError:
            continue
        for name in names:
            try:
                info = RunFolder(runs_dir(project_dir) / name).read_info()
            except (TrainingError, OSError):
                continue
            if info.is_cluster and info.cluster == profile_name and info.is_active:
                found.append(info)
    return found


def _require_active(info: RunInfo, verb: str) -> None:
    if not info.is_active:
        raise TrainingError(f"Run {info.id} is not running (it is {info.state}), so there is nothing to {verb}.")


# ---------------------------------------------------------------------------------------------
# pulling


def pull(info: RunInfo, progress=None, cancel: CancelToken | None = None, connection=None):
    """Fetch the run's ``checkpoints/`` and ``outputs/`` from the cluster now (only what is new
    or changed); returns the PullReport. A run that has ended records its products."""
    from workbench.cluster.follower import connect_to_cluster
    from workbench.cluster.mirror import local_outputs, pull_products

    if not info.is_cluster:
        raise TrainingError(f"Run {info.id} ran on this machine: its checkpoints and outputs are in {info.run_dir}.")
    if not info.remote_run_dir:
        raise TrainingError(f"Run {info.id} never reached the cluster, so there is nothing to pull.")
    folder = RunFolder(info.run_dir)
    conn = connection or connect_to_cluster(info, folder)
    try:
        report = pull_products(conn, info.remote_run_dir, folder, cancel=cancel, progress=progress)
    except OSError as exc:
        raise ClusterError(f"Could not pull the products of run {info.id} from {info.cluster}: {exc}") from exc
    finally:
        if connection is None:
            conn.close()
    current = folder.read_info()
    if not current.is_active:
        current.products, current.pulled_at = local_outputs(folder), time.time()
        folder.write_info(current)
        try:
            RunStore(Path(info.project_dir)).put(current)
        except TrainingError:
            pass
    return report


# ---------------------------------------------------------------------------------------------
# resuming


def resume_cluster_run(info: RunInfo, new_run: bool = False, overrides=(), *, progress=None,
                       cancel: CancelToken | None = None, connection=None, cluster: str | None = None,
                       resources: Resources | dict | None = None) -> RunInfo:
    """Continue a run from its last checkpoint with a new job on a cluster: a cluster run in the
    same run (its remote folder, code and logs), or any run as a new run (the project's current
    code, the run's hyper-parameters with ``overrides``). The checkpoint is the one pulled last;
    it is uploaded when the cluster does not have it.

    A new run trains on the cluster of profile ``cluster`` (default: the run's own) with the
    run's resources, those given in ``resources`` (Resources, or a dict of some of its fields)
    changed. On another cluster, the run's partition, account and QoS are not carried over: the
    profile's defaults apply unless ``resources`` names them."""
    from workbench.training.metrics import keep_metrics_up_to
    from workbench.training.run_spec import more_epochs

    overrides = list(overrides)
    if info.is_active:
        raise TrainingError(f"Run {info.id} is still {info.state}. Stop it before resuming it.")
    as_new_run = workbench_command(info.project_dir, "runs resume", info.id, "--new")
    if not new_run and (cluster or resources):
        raise TrainingError(f"Run {info.id} goes on in the same run only where it ran, with its resources: resume it "
                            f"as a new run to train on another cluster or with other resources "
                            f"(`{as_new_run} --cluster NAME`).")
    if not new_run and not info.is_cluster:
        raise TrainingError(f"Run {info.id} ran on this machine: it goes on on a cluster only as a new run.")
    if not (cluster or info.is_cluster):
        raise TrainingError(f"Run {info.id} ran on this machine: resources are for a run on a cluster. Name the "
                            "cluster to go on there (`--cluster NAME`).")
    folder = RunFolder(info.run_dir)
    latest = folder.latest_checkpoint()
    if latest is None:
        pull_command = workbench_command(info.project_dir, "runs pull", info.id)
        where = f" (none was pulled from the cluster; `{pull_command}` fetches them)" if info.is_cluster else ""
        raise TrainingError(f"Run {info.id} has no checkpoint to resume from{where}. Start a new run instead.")
    if not new_run and info.state == COMPLETED:
        raise TrainingError(f"Run {info.id} completed, so it cannot be resumed in the same run. To train it further, "
                            f"resume it as a new run with more epochs: `{as_new_run} "
                            f"--set num_epochs={more_epochs(info)}`.")
    if not new_run and overrides:
        raise TrainingError(f"Changed hyper-parameters ({' '.join(overrides)}) need a new run: resume run "
                            f"{info.id} as a new run (`{as_new_run} --set …`).")
    step = int(latest.get("step", 0))
    if new_run:
        profile = _profile(cluster or info.cluster)
        return _resume_as_new_run(info, folder, latest, step, overrides, profile, get_backend(profile.scheduler),
                                  _resumed_resources(info, profile, resources), progress, cancel, connection,
                                  keep_metrics_up_to)
    profile = _profile(info.cluster)
    backend = get_backend(info.backend)
    return _resume_in_place(info, folder, latest, step, profile, backend, progress, cancel, connection,
                            keep_metrics_up_to)


def _resumed_resources(old: RunInfo, profile, changes: Resources | dict | None) -> Resources:
    """What a run resumed as a new run on ``profile``'s cluster asks for: the old run's resources
    (a local run's processes for one node), its partition, account and QoS only on the same
    cluster, with ``changes`` on top; refused now when the cluster's backend cannot run them."""
    if old.is_cluster:
        values = Resources.from_json(old.resources).to_json()
    else:
        values = Resources(processes_per_node=old.nproc if old.nproc > 1 else 0).to_json()
    if old.cluster != profile.name:
        values.update(partition="", account="", qos="")
    if isinstance(changes, Resources):
        changes = changes.to_json()
    values.update({key: value for key, value in (changes or {}).items() if key in values and value is not None})
    resources = Resources(**values).with_profile_defaults(profile).check()
    get_backend(profile.scheduler).script(_placeholder_job(resources))
    return resources


def _resume_in_place(info, folder, latest, step, profile, backend, progress, cancel, connection,
                     keep_metrics_up_to) -> RunInfo:
    from workbench.cluster.mirror import read_mirror_state, write_mirror_state

    job = read_job(folder)
    launch = _Launch(Path(info.project_dir), folder, info, profile, backend, progress, cancel, connection,
                     keep_folder=True)
    launch.remote_run_dir = job.remote_run_dir
    conn = launch.connect()
    try:
        rrd = job.remote_run_dir
        checkpoint_name = Path(latest["path"]).name
        remote_checkpoint = f"{rrd}/checkpoints/{checkpoint_name}"
        if conn.run(f"test -f {shlex.quote(remote_checkpoint)}", check=False).code != 0:
            remote_checkpoint = launch.upload_checkpoint(conn, Path(latest["path"]))
        # The records after the checkpoint will be trained again: cut them here and there alike.
        state = read_mirror_state(folder)
        keep_metrics_up_to(folder.metrics, step)
        base = state["bases"].get("metrics.jsonl", 0)
        if info.metrics_source == "trainer":
            data = folder.metrics.read_bytes()[base:] if folder.metrics.exists() else b""
            conn.sftp().putfo(io.BytesIO(data), f"{rrd}/metrics.jsonl")
        conn.run(f"cd {shlex.quote(rrd)} && rm -f outcome.json exit_code pid job_started stop-requested && "
                 f"echo {shlex.quote(f'workbench: resuming from {checkpoint_name} (step {step})')} >> stdout.log",
                 check=True)
        for stale in (folder.stop_requested, folder.terminate_requested, folder.outcome_json):
            stale.unlink(missing_ok=True)
        state["stderr_segment"] = folder.stderr_log.stat().st_size if folder.stderr_log.exists() else 0
        write_mirror_state(folder, state)
        job.env["WORKBENCH_RESUME_FROM"] = remote_checkpoint
        info.active_seconds = info.duration or 0.0
        info.resumes = [*info.resumes, {"step": step, "time": round(time.time(), 3)}]
        info.state = STARTING
        for name in ("segment_started_at", "ended_at", "exit_code", "job_id", "pulled_at"):
            setattr(info, name, None)
        info.error, info.scheduler_state, info.scheduler_reason = "", "", ""
        info.supervisor_pid, info.supervisor_start = os.getpid(), process_start(os.getpid())
        launch.save()
        return launch.submit(conn, job)
    except BaseException as exc:
        launch.close()
        if not launch.submitted:
            current = folder.read_info()
            if current.is_active:
                current.state, current.ended_at = FAILED, time.time()
                current.error = f"Could not resume on {info.cluster}: {exc}" if not isinstance(exc, Cancelled) \
                    else "The resume was cancelled before its job was submitted."
                folder.write_info(current)
                RunStore(Path(info.project_dir)).put(current)
        raise


def _resume_as_new_run(old, old_folder, latest, step, overrides, profile, backend, resources, progress, cancel,
                       connection, keep_metrics_up_to) -> RunInfo:
    from workbench.training.run_spec import prepare_resume

    project_dir = Path(old.project_dir)
    folder = create_run_folder(project_dir)
    try:
        name = old.hparams_copy or "run.hparams"
        base = old_folder.path / name
        if not base.is_file():
            from workbench_trainkit.hparams import format_hparams

            base = folder.path / name
            write_text_atomically(base, format_hparams(old.hparams))
        spec = prepare_resume(project_dir, old.script, resources.world_size, base, old.hparams_file, old.hparams,
                              old.overrides, overrides)
        write_text_atomically(folder.path / spec.hparams_name, spec.hparams_text)
        if old_folder.metrics.exists():
            # The new run's curve begins with the old one's up to the checkpoint; the mirror
            # appends the new job's records after them.
            keep_metrics_up_to(old_folder.metrics, step, into=folder.metrics)
        info = RunInfo(id=folder.id, state=STARTING, run_dir=str(folder.path), project_dir=str(project_dir),
                       script=old.script, hparams_file=old.hparams_file, overrides=spec.overrides,
                       nproc=resources.world_size, created_at=time.time(), resumed_from=f"{old.id}@{step}",
                       hparams=spec.hparams, hparams_copy=spec.hparams_name, metrics_source=old.metrics_source,
                       backend=profile.scheduler, cluster=profile.name, resources=resources.to_json(),
                       supervisor_pid=os.getpid(), supervisor_start=process_start(os.getpid()))
    except BaseException:
        shutil.rmtree(folder.path, ignore_errors=True)
        raise
    launch = _Launch(project_dir, folder, info, profile, backend, progress, cancel, connection)
    try:
        launch.save()
        remote_checkpoint = None
        upload = None
        if old.remote_run_dir:
            candidate = f"{old.remote_run_dir}/checkpoints/{Path(latest['path']).name}"
            conn = launch.connect()
            if conn.run(f"test -f {shlex.quote(candidate)}", check=False).code == 0:
                remote_checkpoint = candidate
        if remote_checkpoint is None:
            upload = Path(latest["path"])
        return launch.run(spec.hparams_name, spec.hparams_text, spec.script, spec.args, spec.pass_hparams, resources,
                          _data_settings(project_dir), resume_from=remote_checkpoint, upload_checkpoint=upload)
    except BaseException:
        launch.abandon()
        raise


def _current_branch(project_dir: Path) -> str | None:
    """The branch checked out in ``project_dir``'s repository (None when HEAD is detached)."""
    import subprocess

    try:
        result = subprocess.run(["git", "symbolic-ref", "-q", "--short", "HEAD"], cwd=project_dir,
                                capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() or None

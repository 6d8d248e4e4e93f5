"""The run backends of clusters: "slurm" and "ssh" (a plain SSH host), one for each scheduler a
cluster profile may name. They register through the plugin extension point, as a Kubernetes or
cloud backend would (``[project.entry-points."workbench.plugins"] cluster`` in Workbench's
pyproject), so the training capability finds them by name and never imports this package.

Both do the same work (``workbench.cluster.remote_run``: code, data, submit, follow); what
differs is the scheduler's ``JobBackend`` (``workbench.cluster.jobs.get_backend``), chosen by the
profile. A backend's targets are the names of the profiles with its scheduler.
"""

from __future__ import annotations

from pathlib import Path

from workbench.tasks import CancelToken
from workbench.training.run_info import RunInfo

SCHEDULERS = ("slurm", "ssh")


def register(extensions) -> None:
    """The plugin entry point: one run backend for each scheduler."""
    for scheduler in SCHEDULERS:
        extensions.add_run_backend(scheduler, f"workbench.cluster.backends:{scheduler}_backend")


def slurm_backend() -> "ClusterRunBackend":
    return ClusterRunBackend("slurm")


def ssh_backend() -> "ClusterRunBackend":
    return ClusterRunBackend("ssh")


class ClusterRunBackend:
    """Runs on the clusters whose profiles name the scheduler ``name`` (a ``RunBackend``)."""

    def __init__(self, name: str):
        self.name = name

    def targets(self) -> list[str]:
        """The names of the profiles with this scheduler."""
        from workbench.cluster.profiles import load_profiles

        return [profile.name for profile in load_profiles() if profile.scheduler == self.name]

    def start(self, project_dir: Path, hparams_file=None, overrides=(), *, nproc: int = 1,
              target: str | None = None, resources=None, progress=None,
              cancel: CancelToken | None = None) -> RunInfo:
        """Start a run on the cluster of profile ``target``; returns once its job is submitted.
        The choice (profile, resources, file, overrides) is remembered for the next start, from
        the window or the command line alike: as chosen (so a start that fails keeps it), then
        with the file the run used."""
        from workbench.cluster.last_choice import remember_choice
        from workbench.cluster.remote_run import start_cluster_run

        chosen = resources.to_json() if hasattr(resources, "to_json") else dict(resources or {})
        remember_choice(project_dir, target, chosen, _as_chosen(Path(project_dir), hparams_file), list(overrides))
        info = start_cluster_run(project_dir, target, resources, hparams_file, tuple(overrides),
                                 progress=progress, cancel=cancel)
        remember_choice(project_dir, target, chosen, info.hparams_file or None, list(overrides))
        return info

    def stop(self, info: RunInfo) -> RunInfo:
        from workbench.cluster.remote_run import request_stop

        return request_stop(info)

    def terminate(self, info: RunInfo) -> RunInfo:
        from workbench.cluster.remote_run import request_terminate

        return request_terminate(info)

    def resume(self, info: RunInfo, new_run: bool = False, overrides=(), *, target: str | None = None,
               resources=None, progress=None, cancel: CancelToken | None = None) -> RunInfo:
        from workbench.cluster.remote_run import resume_cluster_run

        return resume_cluster_run(info, new_run, tuple(overrides), progress=progress, cancel=cancel,
                                  cluster=target, resources=resources)

    def pull(self, info: RunInfo, progress=None, cancel: CancelToken | None = None):
        from workbench.cluster.remote_run import pull

        return pull(info, progress=progress, cancel=cancel)

    def refresh(self, info: RunInfo) -> RunInfo:
        """The run as its follower recorded it; the follower started again when it has none
        (the job lives on the cluster whatever happened here)."""
        from workbench.cluster.remote_run import ensure_followed

        return ensure_followed(info)

    def describe_resources(self, info: RunInfo) -> str:
        return resources_text(info.resources)


def resources_text(resources: dict) -> str:
    """``{"nodes": 2, "gpus_per_node": 4, …}`` as "2 nodes × 4 GPUs, 8 CPUs, 16G, 02:00:00, gpu"."""
    if not resources:
        return ""
    nodes = resources.get("nodes", 1)
    gpus = resources.get("gpus_per_node", 0)
    parts = [f"{nodes} node{'s' if nodes != 1 else ''}" + (f" × {gpus} GPU{'s' if gpus != 1 else ''}" if gpus else "")]
    cpus = resources.get("cpus")
    if cpus:
        parts.append(f"{cpus} CPU{'s' if cpus != 1 else ''}")
    for key, label in (("mem", "memory"), ("time", "time limit"), ("partition", "partition"),
                       ("account", "account"), ("qos", "QoS")):
        if resources.get(key):
            parts.append(f"{label} {resources[key]}")
    return ", ".join(parts)


def _as_chosen(project_dir: Path, hparams_file) -> str | None:
    """The hyper-parameter file as the Run on Cluster dialog offers it: project-relative."""
    if hparams_file is None or str(hparams_file) == "":
        return None
    path = Path(hparams_file).expanduser()
    if path.is_absolute():
        try:
            return path.resolve().relative_to(project_dir.resolve()).as_posix()
        except ValueError:
            return str(path)
    return path.as_posix()

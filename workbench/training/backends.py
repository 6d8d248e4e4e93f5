"""Where runs train: the ``RunBackend`` protocol, and how a run finds its backend.

A backend starts, stops, terminates, resumes, pulls and refreshes the runs that train where it
knows how: this machine ("local", ``workbench.training.local_runner``), a cluster ("slurm",
"ssh"), one day Kubernetes or a cloud. Every run records its backend's name in
``RunInfo.backend``, and ``RunService`` hands each request to that backend.

Only the local backend is built in. The others are registered by plugins through the extension
point ``workbench.plugins`` (``Extensions.add_run_backend(name, "module:factory")``); Workbench's
own cluster backends register the same way (its pyproject names the entry point), so this
package never imports the cluster and a new kind of backend needs nothing changed here.

A backend that trains elsewhere has targets, the names a user gives to train there
(``workbench train --cluster NAME``, Run on Cluster…): a cluster profile's name.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from workbench.tasks import CancelToken, Progress
from workbench.training.errors import TrainingError
from workbench.training.run_info import LOCAL_BACKEND, RunInfo


@dataclass(frozen=True)
class RunProgress(Progress):
    """A progress report of a start or resume elsewhere: ``stage`` names its step ("connect",
    "code", "trainkit", "data", "submit", "follow" for a cluster)."""

    stage: str = ""


class RunBackend(Protocol):
    """What trains runs somewhere. Methods are called on worker threads (never the GUI thread)
    and raise TrainingError with a message a user can act on."""

    name: str

    def targets(self) -> list[str]:
        """The names a user can give to train here (a cluster's profiles); [] for this machine."""

    def start(self, project_dir: Path, hparams_file=None, overrides=(), *, nproc: int = 1,
              target: str | None = None, resources=None, progress=None,
              cancel: CancelToken | None = None) -> RunInfo:
        """Start a run of the project's training script; returns once it runs (or is queued)."""

    def stop(self, info: RunInfo) -> RunInfo:
        """Ask the run to checkpoint and exit; returns at once (state "stopping")."""

    def terminate(self, info: RunInfo) -> RunInfo:
        """End the run now; returns once its end is recorded (or after a while, as it is then)."""

    def resume(self, info: RunInfo, new_run: bool = False, overrides=(), *, target: str | None = None,
               resources=None, progress=None, cancel: CancelToken | None = None) -> RunInfo:
        """Continue the run from its last checkpoint, in the same run or a new one (on
        ``target``, with ``resources`` changed, when the backend trains elsewhere)."""

    def pull(self, info: RunInfo, progress=None, cancel: CancelToken | None = None) -> Any:
        """Fetch the run's checkpoints and outputs into its folder now; a report of what came."""

    def refresh(self, info: RunInfo) -> RunInfo:
        """The active run ``info`` as it is now (its processes or job looked at, the end of one
        that is gone recorded); run.json is written when it changed."""

    def describe_resources(self, info: RunInfo) -> str:
        """What the run trains on, in a few words ("1 process", "2 nodes × 4 GPUs, 8 CPUs")."""


_lock = threading.Lock()
_registered: dict[str, RunBackend] = {}


def registered_backend(name: str) -> RunBackend:
    """The backend a plugin registered as ``name`` (one instance a process); TrainingError when
    no installed plugin provides it."""
    with _lock:
        backend = _registered.get(name)
        if backend is not None:
            return backend
        from workbench.extensions import load_extensions, load_object

        extensions = load_extensions()
        factory = extensions.run_backends.get(name)
        if factory is None:
            known = ", ".join(sorted([LOCAL_BACKEND, *extensions.run_backends]))
            raise TrainingError(f"No installed plugin trains runs on {name!r} (backends: {known}). Install the "
                                "plugin that provides it.")
        backend = _registered[name] = load_object(factory)()
        return backend


def backend_for_target(target: str) -> RunBackend:
    """The backend that trains on ``target`` (a cluster profile's name); TrainingError naming
    the targets there are when none does."""
    from workbench.extensions import load_extensions

    known: list[str] = []
    for name in sorted(load_extensions().run_backends):
        backend = registered_backend(name)
        targets = backend.targets()
        if target in targets:
            return backend
        known += targets
    listed = ", ".join(sorted(known)) or "none yet"
    raise TrainingError(f"There is no cluster profile named {target!r} (profiles: {listed}). "
                        f"Add one with `workbench cluster add {target} --host HOST`.")

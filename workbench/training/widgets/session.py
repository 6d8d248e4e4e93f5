"""The training side of one project window: the run service, called off the GUI thread.

Widgets and commands talk to this adapter, never to the service directly. Every service call
(list, start, stop, resume, terminate) runs through the window's task runner; its answer comes
back on the GUI thread.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import QObject, Signal

from workbench.qt.tasks import Operation
from workbench.training.hparams_files import find_hparams_files
from workbench.training.run_info import LATEST_CHECKPOINT

log = logging.getLogger(__name__)


def checkpoint_step(run_dir: Path) -> int | None:
    """The step of the run's last checkpoint (``checkpoints/latest.json``), None without one."""
    try:
        step = json.loads((run_dir / LATEST_CHECKPOINT).read_text(encoding="utf-8")).get("step")
    except (OSError, ValueError, AttributeError):
        return None
    return step if isinstance(step, int) and not isinstance(step, bool) else None


@dataclass
class RunRow:
    """A run as listed, with what the GUI must not find out by reading files itself."""

    info: Any  # RunInfo
    can_resume: bool
    """It can go on in the same run (stopped, failed… with a checkpoint; not completed)."""
    can_resume_as_new: bool = False
    """A new run can start from its last checkpoint."""
    checkpoint_step: int | None = None
    """The step of an active run's last checkpoint (None: none yet, or not known)."""

    @property
    def id(self) -> str:
        return self.info.id

    @classmethod
    def of(cls, info) -> "RunRow":
        """The row of ``info``, reading what it needs from the run folder (off the GUI thread)."""
        step = checkpoint_step(Path(info.run_dir)) if info.is_active else None
        return cls(info, info.can_resume, info.can_resume_as_new, step)


class TrainingSession(QObject):
    """Runs of one project: the list, and the calls that start and control them."""

    sig_runs_changed = Signal(object)
    """A fresh list of runs (``list[RunRow]``, newest first)."""

    sig_run_started = Signal(object)
    """This window started or resumed a run (its ``RunInfo``)."""

    def __init__(self, window, parent: QObject | None = None):
        super().__init__(parent if parent is not None else window)
        self.window = window
        self.project_dir = Path(window.project.root)
        self.tasks = window.tasks
        self.rows: list[RunRow] = []
        self.listed = False
        self._service = None
        self._service_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._errors_shown: Callable[[str, str], None] = window.show_error

    # --- the service, created on a worker thread ----------------------------------------------

    def service(self):
        """The project's ``RunService`` (created on first use, from a worker thread)."""
        with self._service_lock:
            if self._service is None:
                # Leave this import here: the service (and SQLite) load after the window is up.
                from workbench.training import RunService

                self._service = RunService(self.project_dir)
            return self._service

    # --- listing ------------------------------------------------------------------------------

    def refresh(self) -> None:
        """List the runs again (skipped while a listing is under way)."""
        if self.tasks.is_running("training.listRuns"):
            return
        self.tasks.run("training.listRuns", self._list_rows, on_done=self._on_listed,
                       on_error=lambda exc: log.warning("Listing runs failed: %s", exc))

    def _list_rows(self) -> list[RunRow]:
        return [RunRow.of(info) for info in self.service().list_runs()]

    def _on_listed(self, rows: list[RunRow]) -> None:
        self.rows = rows
        self.listed = True
        self.sig_runs_changed.emit(rows)

    def row(self, run_id: str) -> RunRow | None:
        return next((r for r in self.rows if r.id == run_id), None)

    @property
    def any_active(self) -> bool:
        return any(r.info.is_active for r in self.rows)

    # --- calls --------------------------------------------------------------------------------

    def call(self, name: str, method: str, *args: Any, title: str = "",
             on_done: Callable[[Any], None] | None = None, **kwargs: Any) -> Operation:
        """Run ``service.<method>(*args, **kwargs)`` on a worker; then list the runs again.
        A failure is shown to the user (the service's message says what to do)."""
        operation = Operation(name, "Training")

        def work():
            return getattr(self.service(), method)(*args, **kwargs)

        def done(result: Any) -> None:
            operation.result, operation.finished = result, True
            self.refresh()
            if on_done is not None:
                on_done(result)

        def failed(error: Exception) -> None:
            operation.error, operation.finished = error, True
            self.refresh()
            self._errors_shown(str(error), _details_of(error))

        self.tasks.run(f"training.{name}#{next(self._ids)}", work, on_done=done, on_error=failed, title=title)
        return operation

    def start(self, hparams_file: str | None = None, overrides: tuple[str, ...] = (), nproc: int = 1,
              versions: dict | None = None) -> Operation:
        """``versions``: ``dataset_version``, ``from_version`` and ``register`` as RunService.start
        takes them."""
        label = Path(hparams_file).name if hparams_file else "the project's hyper-parameters"
        return self.call("start", "start", hparams_file=hparams_file, overrides=tuple(overrides), nproc=nproc,
                         title=f"Starting a run with {label}", on_done=self.sig_run_started.emit,
                         **(versions or {}))

    def stop(self, run_id: str) -> Operation:
        return self.call("stop", "stop", run_id, title=f"Stopping {run_id}")

    def terminate(self, run_id: str) -> Operation:
        return self.call("terminate", "terminate", run_id, title=f"Terminating {run_id}")

    def resume(self, run_id: str, new_run: bool = False, overrides: tuple[str, ...] | list[str] = ()) -> Operation:
        """Resume ``run_id`` in the same run or as a new one; ``overrides`` ("key=value", a new
        run only) change its hyper-parameters, e.g. ``num_epochs=20`` to train further."""
        return self.call("resume", "resume", run_id, new_run=new_run, overrides=tuple(overrides),
                         title=f"Resuming {run_id}" + (" as a new run" if new_run else ""),
                         on_done=self.sig_run_started.emit)

    def read_resume_point(self, run_id: str, on_done: Callable[[Any, int | None], None]) -> None:
        """The project's hyper-parameter schema (None when its keys cannot be read) and the step
        of the run's last checkpoint (None if unknown), read on a worker; ``on_done(schema,
        step)`` on the GUI thread."""
        row = self.row(run_id)
        run_dir = Path(row.info.run_dir) if row is not None else None

        def work():
            from workbench_trainkit.hparams import project_schema

            try:
                schema = project_schema(self.project_dir)
            except Exception:  # noqa: BLE001 — the resume reports a broken schema with its reason
                schema = None
            return schema, checkpoint_step(run_dir) if run_dir is not None else None

        self.tasks.run("training.readResumePoint", work, on_done=lambda found: on_done(*found),
                       on_error=lambda exc: self._errors_shown(str(exc), ""))

    def find_hparams_files(self, on_done: Callable[[list[str], Any], None]) -> None:
        """The project's ``*.hparams`` files (project-relative, run folders left out) and its
        hyper-parameter schema, found on a worker; ``on_done(paths, schema)`` on the GUI thread
        (schema None when the project's keys cannot be read)."""
        def work():
            from workbench_trainkit.hparams import project_schema

            try:
                schema = project_schema(self.project_dir)
            except Exception:  # noqa: BLE001 — the start reports a broken schema with its reason
                schema = None
            return find_hparams_files(self.project_dir), schema

        self.tasks.run("training.findHparams", work, on_done=lambda found: on_done(*found),
                       on_error=lambda exc: self._errors_shown(str(exc), ""))


def _details_of(error: Exception) -> str:
    """The per-line problems of a malformed hyper-parameter file, for "Show Details…"."""
    diagnostics = getattr(error, "diagnostics", None)
    if not diagnostics:
        return ""
    return "\n".join(str(d) for d in diagnostics)

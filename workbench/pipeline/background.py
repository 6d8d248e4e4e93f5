"""Iterations started in a process of their own: ``python -m workbench pipeline start PROJECT``
(or ``resume PROJECT --version NNNN``) detached from the starter, so an iteration started from a
window goes on when the window closes, exactly as one started from a terminal.

What would make the command fail at once (a broken ``[pipeline]``, another iteration holding the
lock, an iteration that cannot be resumed) is checked first and raised as PipelineError, so the
starter hears it instead of a log file; what goes wrong later is in the iteration's record and
in the launch's log (``.workbench/pipeline/<when>-<verb>.log``)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from workbench.pipeline.declaration import read_declaration
from workbench.pipeline.errors import PipelineError
from workbench.pipeline.iterations import DONE, MANUAL, RUNNING
from workbench.pipeline.service import PipelineService

LOG_FOLDER = Path(".workbench") / "pipeline"
ERROR_PREFIX = "workbench: "
"""How the command line begins the one line that says why a command failed."""

Launcher = Callable[[str, list, Path, Path], object]
"""``launcher(module, args, log, cwd)`` runs ``python -m module *args`` detached, its output in ``log``."""


def start_detached_process(module: str, args: list, log: Path, cwd: Path) -> None:
    from workbench.platform.detach import start_detached

    start_detached(module, [str(arg) for arg in args], log, cwd=cwd, wait=False)


@dataclass
class Launch:
    """A command started on its own: its arguments, its log and the iterations known before it."""

    args: list[str]
    log: Path
    known_before: list[str]
    started_at: float

    def error_line(self) -> str:
        """The command's own one-line error, once it printed one (empty before, or never)."""
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return next((line.removeprefix(ERROR_PREFIX).strip() for line in reversed(text.splitlines())
                     if line.startswith(ERROR_PREFIX)), "")


def launch_iteration(project_dir: Path | str, resume_version: str | None = None,
                     launcher: Launcher = start_detached_process, trigger_reason: str | None = None) -> Launch:
    """Start a new iteration (or resume ``resume_version``) in a detached process; raises
    PipelineError at once when the command would be refused. The iteration records a start by
    hand, ``trigger_reason`` saying how (the window's Start or Resume by this user when None)."""
    from workbench.registry.store import os_user

    service = PipelineService(project_dir)
    trigger_reason = trigger_reason or f"{'Resume' if resume_version else 'Start'} in the window by {os_user()}"
    trigger = ["--trigger-kind", MANUAL, "--trigger-reason", trigger_reason]
    read_declaration(service.project_dir)  # a broken declaration: its one error, before anything starts
    holder = service.lock.holder()
    if holder is not None and holder.is_alive():
        raise PipelineError(f"another pipeline iteration runs on this project: {holder.describe()}. "
                            "Wait for it, or stop it first.")
    known = service.store.versions()
    args = ["pipeline", "start", str(service.project_dir), *trigger]
    if resume_version is not None:
        iteration = service.get(resume_version)
        if iteration.state == DONE:
            raise PipelineError(f"iteration {iteration.version} is done: Start runs a new one.")
        if iteration.state == RUNNING:
            raise PipelineError(f"iteration {iteration.version} is running already.")
        # The version last: the panel reads it from there.
        args = ["pipeline", "resume", str(service.project_dir), *trigger, "--version", iteration.version]
    folder = service.project_dir / LOG_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{args[1]}.log"
    launcher("workbench", args, log, service.project_dir)
    return Launch(args, log, known, time.time())

"""The ``workbench …`` commands that messages suggest, written so that they work where they are
typed: with the project in them unless the current folder is inside it (as a relative path when
that is shorter than the absolute one)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path


def project_argument(project_dir: Path | str, cwd: Path | str | None = None) -> str | None:
    """The project as a command's argument, shell-quoted; None when ``cwd`` (default: the
    current folder) is inside the project, where commands find it by themselves."""
    project = Path(project_dir).expanduser().absolute()
    try:
        here = Path(cwd).absolute() if cwd is not None else Path.cwd()
    except OSError:
        here = None  # the current folder was deleted
    if here is not None:
        try:
            here.resolve().relative_to(project.resolve())
            return None
        except ValueError:
            pass
    shown = str(project)
    if here is not None:
        relative = os.path.relpath(project, here)
        if len(relative) < len(shown):
            shown = relative
    return shlex.quote(shown)


def workbench_command(project_dir: Path | str, command: str, *rest: str, cwd: Path | str | None = None) -> str:
    """``workbench COMMAND [PROJECT] REST…``: ``workbench_command(p, "runs resume", run_id,
    "--new")`` is "workbench runs resume ../digits 2026… --new" outside the project and
    "workbench runs resume 2026… --new" inside it."""
    project = project_argument(project_dir, cwd)
    return " ".join(["workbench", command, *([project] if project else []), *rest])

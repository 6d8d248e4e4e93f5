"""Which Python runs the project's console kernel.

``workbench.toml`` may name it::

    [python]
    interpreter = ".venv/bin/python"   # relative to the project folder, or absolute, or a name on PATH

Without it, the kernel runs in the Python that runs Workbench. The setting sits in a ``[python]``
table rather than a console one because it is the project's environment, which a debugger or a
language server wants too.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from workbench.console.errors import ConsoleError
from workbench.project import PROJECT_FILE, Project

TABLE = "python"
KEY = "interpreter"
SETTING = f"[{TABLE}] {KEY}"


@dataclass(frozen=True)
class Interpreter:
    """A Python executable and where the choice came from (for messages)."""

    path: Path
    configured: bool
    """True when ``workbench.toml`` names it, False for Workbench's own Python."""

    def describe(self) -> str:
        return f"{self.path} ({SETTING} in {PROJECT_FILE})" if self.configured else f"{self.path} (Workbench's own Python)"


def project_interpreter(project: Project) -> Interpreter:
    """The interpreter ``project`` names, else Workbench's own. Raises ConsoleError for a setting
    of the wrong type or a path that is not there (the message names the fix)."""
    table = project.settings.get(TABLE, {})
    if not isinstance(table, dict):
        raise ConsoleError(f"In {project.project_file}, [{TABLE}] must be a table. Fix it; the console "
                           "needs it to know which Python to run.")
    value = table.get(KEY)
    if value is None or value == "":
        return Interpreter(Path(sys.executable), configured=False)
    if not isinstance(value, str):
        raise ConsoleError(f"In {project.project_file}, '{TABLE}.{KEY}' must be a string (the path to a "
                           "Python executable). Fix the value.")
    return Interpreter(resolve_interpreter(value, project.root), configured=True)


def resolve_interpreter(value: str, root: Path) -> Path:
    """``value`` as an executable path: relative to ``root`` when it has a folder part, looked up on
    PATH when it is a bare name ("python3"). Raises ConsoleError when there is nothing to run."""
    expanded = Path(os.path.expanduser(value))
    if not expanded.is_absolute() and len(expanded.parts) == 1:
        found = shutil.which(value)
        if found is None:
            raise ConsoleError(_missing(value, f"'{value}' is not on PATH"))
        return Path(found)
    path = expanded if expanded.is_absolute() else root / expanded
    if not path.exists():
        raise ConsoleError(_missing(value, f"{path} does not exist"))
    if path.is_dir() or not os.access(path, os.X_OK):
        raise ConsoleError(_missing(value, f"{path} is not an executable file"))
    return path


def _missing(value: str, what: str) -> str:
    return (f"The project's Python interpreter cannot be used: {what}. Set {SETTING} in {PROJECT_FILE} "
            f"to a Python that has ipykernel (for example .venv/bin/python), or remove the line to use "
            f"Workbench's own Python ({sys.executable}).")

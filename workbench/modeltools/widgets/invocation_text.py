"""A tool invocation as text: the ``workbench model …`` command that does the same as the form's
values (the log's first line, to copy into a terminal), and the one-line summary the window
shows in place of the folded form. Qt-free."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.model_index import name_in_project
from workbench.modeltools.params import Param, ToolSpec

SUMMARY_SEPARATOR = "  ·  "
# A summary names this many files of a list, and counts the rest.
SUMMARY_FILES = 3


def differs_from_default(param: Param, value: Any) -> bool:
    """Whether ``value`` is not what the tool would take anyway."""
    if value is None:
        return False
    try:
        return param.parse(value) != param.parse(param.default)
    except ModelToolError:
        return True


def command_line(spec: ToolSpec, values: dict[str, Any], project: Path | str | None = None) -> str:
    """The shell command that runs ``spec`` with ``values`` (as ParamForm.values gives them):
    the arguments, then each option whose value is not the default (a flag as ``--x`` or
    ``--no-x``), every word quoted for a POSIX shell. ``--project`` is added when the model does
    not lie in ``project`` (the CLI finds the project holding the model by itself)."""
    words = ["workbench", "model", spec.name]
    for param in spec.params:
        if param.positional:
            words += [str(item) for item in _items(values.get(param.name))]
    for param in spec.params:
        value = values.get(param.name)
        if param.positional or not differs_from_default(param, value):
            continue
        if param.type == "bool":
            words.append(param.flag if param.parse(value) else f"--no-{param.flag[2:]}")
        elif param.type in ("paths", "strings"):
            words += [param.flag, ",".join(str(item) for item in _items(value))]
        else:
            words += [param.flag, str(value)]
    if project is not None and not _inside(_first_model(spec, values), Path(project)):
        words += ["--project", str(project)]
    return " ".join(shlex.quote(word) for word in words)


def summary(spec: ToolSpec, values: dict[str, Any], project: Path | str | None = None) -> str:
    """One line for the folded form: the files (named as the project names them), then each
    parameter set to something other than its default ("Mode: dynamic")."""
    parts = []
    for param in spec.params:
        if not param.positional:
            continue
        paths = [Path(str(item)) for item in _items(values.get(param.name))]
        if len(paths) > 1 and len({path.parent for path in paths}) == 1:
            # Files of one folder: their names, and the folder once.
            files = [path.name for path in paths]
            folder = f" (in {name_in_project(project, paths[0].parent)})"
        else:
            files, folder = [name_in_project(project, path) for path in paths], ""
        if len(files) > SUMMARY_FILES:
            files = files[:SUMMARY_FILES - 1] + [f"{len(files) - SUMMARY_FILES + 1} more"]
        if files:
            parts.append(", ".join(files) + folder)
    changed = 0
    for param in spec.params:
        value = values.get(param.name)
        if param.positional or not differs_from_default(param, value):
            continue
        changed += 1
        parts.append(f"{param.title}: {_shown(param, value, project)}")
    if not changed:
        parts.append("default settings")
    return SUMMARY_SEPARATOR.join(parts)


def _shown(param: Param, value: Any, project: Path | str | None) -> str:
    if param.type == "bool":
        return "on" if param.parse(value) else "off"
    if param.type == "path":
        return name_in_project(project, Path(str(value)))
    if param.type in ("paths", "strings"):
        items = _items(value)
        if param.type == "paths":
            items = [name_in_project(project, Path(str(item))) for item in items]
        return ", ".join(str(item) for item in items)
    return str(value)


def _items(value: Any) -> list:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [item for item in value if str(item).strip()]
    return [item.strip() for item in str(value).split(",") if item.strip()]


def _first_model(spec: ToolSpec, values: dict[str, Any]) -> Path | None:
    for param in spec.params:
        if param.positional:
            items = _items(values.get(param.name))
            return Path(str(items[0])) if items else None
    return None


def _inside(path: Path | None, folder: Path) -> bool:
    if path is None:
        return False
    try:
        path.resolve().relative_to(folder.resolve())
    except (OSError, ValueError):
        return False
    return True

"""What a project window looks like when it closes, so it reopens the same way.

Stored in ``<project>/.workbench/window-state.json``. It is a convenience: a missing or damaged
file just gives the default layout.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from workbench.platform.atomic_files import write_text_atomically
from workbench.project.project_file import STATE_DIR, Project, ensure_state_dir

WINDOW_STATE_FILE = "window-state.json"


@dataclass
class OpenFile:
    """An editor tab: ``path`` relative to the project root (POSIX separators) and the cursor's
    ``line`` and ``column``, 1-based as the status bar shows them."""

    path: str
    line: int = 1
    column: int = 1


@dataclass
class WindowState:
    """The layout of a project window. Geometry and dock state are the base64 text of
    ``QMainWindow.saveGeometry()`` / ``saveState()``; paths are relative to the project root."""

    geometry_b64: str | None = None
    dock_state_b64: str | None = None
    open_files: list[OpenFile] = field(default_factory=list)
    current_file: str | None = None
    tree_expanded: list[str] = field(default_factory=list)
    front_docks: list[str] = field(default_factory=list)
    """The object names of the docks in front of their tab groups. The dock state holds this
    too, but a dock that brings itself forward when it is shown again would win otherwise."""
    documents: list[dict] = field(default_factory=list)
    """The tabs beside the editors (a diff, a history) as the commands that open them again:
    ``{"command": id, "args": {...}, "current": bool}``, in tab order."""
    first_open_dock_state_b64: str | None = None
    """The dock state a first open gave the window, for View ▸ Reset Layout."""
    first_open_front_docks: list[str] = field(default_factory=list)


class WindowStateStore:
    """Loads and saves the :class:`WindowState` of one project."""

    def __init__(self, project: Project):
        self.project = project
        self.file = project.root / STATE_DIR / WINDOW_STATE_FILE

    def load(self) -> WindowState:
        """The saved state, or the defaults when there is none or it cannot be read."""
        try:
            data = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return WindowState()
        if not isinstance(data, dict):
            return WindowState()
        return _from_json(data)

    def save(self, state: WindowState) -> None:
        """Write ``state``; does nothing in a read-only project (there is nowhere to keep it)."""
        if not self.project.writable:
            return
        ensure_state_dir(self.project.root)
        write_text_atomically(self.file, json.dumps(asdict(state), indent=2) + "\n")


def _from_json(data: dict) -> WindowState:
    """Each field checked on its own, so one bad value does not lose the rest of the layout."""

    def text_or_none(key: str) -> str | None:
        value = data.get(key)
        return value if isinstance(value, str) else None

    open_files = []
    listed = data.get("open_files")
    for item in listed if isinstance(listed, list) else []:
        if isinstance(item, dict) and isinstance(item.get("path"), str):
            line, column = item.get("line", 1), item.get("column", 1)
            open_files.append(OpenFile(
                path=item["path"],
                line=line if isinstance(line, int) and line > 0 else 1,
                column=column if isinstance(column, int) and column > 0 else 1,
            ))
    expanded = data.get("tree_expanded")
    front = data.get("front_docks")
    first_front = data.get("first_open_front_docks")
    return WindowState(
        geometry_b64=text_or_none("geometry_b64"),
        dock_state_b64=text_or_none("dock_state_b64"),
        open_files=open_files,
        current_file=text_or_none("current_file"),
        tree_expanded=[p for p in expanded if isinstance(p, str)] if isinstance(expanded, list)
        else [],
        front_docks=[d for d in front if isinstance(d, str)] if isinstance(front, list) else [],
        first_open_dock_state_b64=text_or_none("first_open_dock_state_b64"),
        first_open_front_docks=[d for d in first_front if isinstance(d, str)] if isinstance(first_front, list)
        else [],
        documents=_documents(data.get("documents")),
    )


def _documents(listed) -> list[dict]:
    documents = []
    for item in listed if isinstance(listed, list) else []:
        if isinstance(item, dict) and isinstance(item.get("command"), str) and isinstance(item.get("args", {}), dict):
            documents.append({"command": item["command"], "args": dict(item.get("args") or {}),
                              "current": bool(item.get("current"))})
    return documents

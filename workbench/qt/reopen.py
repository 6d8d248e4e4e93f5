"""What reopens a document tab (a diff, a history) when its window is opened again: the command
and arguments that made it, kept on the widget, read by the window when it saves its state.

    mark_reopenable(view, "git.showFileHistory", path="model.py")
    reopen_spec(view)  # ("git.showFileHistory", {"path": "model.py"})
"""

from __future__ import annotations

import json

from PySide6.QtCore import QObject

PROPERTY = "workbench_reopen"


def mark_reopenable(widget: QObject, command: str, **args) -> None:
    """Keep on ``widget`` that running ``command`` with ``args`` (JSON values) shows it again."""
    widget.setProperty(PROPERTY, json.dumps({"command": command, "args": args}))


def reopen_spec(widget: QObject) -> tuple[str, dict] | None:
    """The command and arguments ``mark_reopenable`` kept on ``widget``, or None."""
    text = widget.property(PROPERTY)
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("command"), str):
        return None
    return data["command"], dict(data.get("args") or {})

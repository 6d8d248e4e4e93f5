"""The editor's widgets; the project window uses ``open_editor_tab``, ``EditorTab`` and the
editor's commands (``EditorCommands``)."""

from workbench.editor.widgets.commands import EditorCommands
from workbench.editor.widgets.editor_tab import EditorTab, open_editor_tab

__all__ = ["EditorCommands", "EditorTab", "open_editor_tab"]

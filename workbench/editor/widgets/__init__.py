"""The editor's widgets; the project window uses ``open_editor_tab`` and ``EditorTab``."""

from workbench.editor.widgets.editor_tab import EditorTab, open_editor_tab

__all__ = ["EditorTab", "open_editor_tab"]

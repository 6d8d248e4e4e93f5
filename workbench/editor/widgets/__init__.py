"""The editor's widgets; the project window uses ``open_editor_tab`` and ``EditorTab``."""

from workbench.editor.widgets.pyside_none_guard import keep_none_alive

# Before any Qt call: the editor makes millions of them (see pyside_none_guard for why).
keep_none_alive()

from workbench.editor.widgets.editor_tab import EditorTab, open_editor_tab  # noqa: E402

__all__ = ["EditorTab", "open_editor_tab"]

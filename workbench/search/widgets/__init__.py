"""The search capability's widgets: the Search dock (Find in Files, Replace in Files) and
Quick Open (Ctrl+P).

``install(window)`` joins them to a project window after its first paint. Each part has an
installer of its own below; the dock's module (and Qt's widgets) load only then.
"""

from __future__ import annotations

FIND_DOCK_ID = "find-in-files"


def install(window) -> None:
    """Add the search capability's docks and commands to ``window``."""
    install_find_in_files(window)
    install_quick_open(window)


def install_quick_open(window) -> None:
    """Go ▸ Go to File… (Ctrl+P): Quick Open over the project's kept file list."""
    from workbench.search.widgets.quick_open import install_quick_open as install_popup

    install_popup(window)


def install_find_in_files(window) -> None:
    """The Search dock (tabbed with the Explorer on a first open), Edit ▸ Find in Files
    (Ctrl+Shift+F), Replace in Files (Ctrl+Shift+H) and Undo Replace in Files."""
    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtWidgets import QDockWidget

    from workbench.search.widgets.find_panel import FindInFilesPanel

    panel = FindInFilesPanel(window.project.root, window.tasks, window.open_file, window.editors)
    known = f"dock-{FIND_DOCK_ID}".encode("utf-16-be") in bytes(window.saveState().data())
    dock = window.add_dock(FIND_DOCK_ID, "Search", panel, Qt.DockWidgetArea.LeftDockWidgetArea)
    explorer = window.findChild(QDockWidget, "dock-explorer")
    if explorer is not None and not explorer.isFloating():
        # Its place on a first open: a tab behind the Explorer, as in VS Code's side bar. Also
        # when the saved layout knows it (which puts it back where the user left it): stacked
        # on its own under the Explorer meanwhile, its height would make a small window taller.
        window.tabifyDockWidget(explorer, dock)
        if not known:
            explorer.raise_()
            QTimer.singleShot(0, explorer, explorer.raise_)

    def show(text: str | None = None, replace: bool = False) -> None:
        dock.show()
        dock.raise_()
        QTimer.singleShot(0, dock, dock.raise_)  # after any raise of the Explorer still queued
        if text is None:
            text = _selected_text(window)
        if text:
            panel.find(text)
        edit = panel.replace_edit if replace and panel.find_edit.text() else panel.find_edit
        edit.setFocus()
        edit.selectAll()

    window.commands.add("search.find_in_files", "Find in Files", show, category="Search", menu="Edit",
                        shortcut="Ctrl+Shift+F")
    window.commands.add("search.replace_in_files", "Replace in Files", lambda text=None: show(text, replace=True),
                        category="Search", menu="Edit", shortcut="Ctrl+Shift+H")
    window.commands.add("search.undo_replace", "Undo Replace in Files", panel.undo_replace, category="Search",
                        menu="Edit", enabled=lambda: panel.can_undo)


def _selected_text(window) -> str:
    """The current editor's selection when it is on one line (what to search for), else ""."""
    tab = window.current_editor() if hasattr(window, "current_editor") else None
    editor = getattr(tab, "editor", None)
    if editor is None:
        return ""
    selected = editor.textCursor().selectedText()
    return selected if selected and "\u2029" not in selected else ""


def find_panel_of(window):
    """The window's Find in Files panel (None before the search capability was installed)."""
    from workbench.search.widgets.find_panel import FindInFilesPanel

    return window.findChild(FindInFilesPanel, "find-in-files-panel")

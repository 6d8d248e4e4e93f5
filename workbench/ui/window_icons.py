"""The icons of a project window: the Explorer's file-type icons, the editor tabs', the menus'
and Workbench's own application icon.

Installed after the window's first paint, with the capabilities: the icon font takes about a
second to load, and the window shows its text first.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from workbench.project.resources import resources_dir
from workbench.qt.icons import TAB_ICON_PROPERTY, ThemedIcons, icon

APPLICATION_ICON = "icons/workbench.svg"

# Menu items with an icon, by command id (the usual ones of an Edit menu, and a few more).
MENU_ICONS = {
    "edit.undo": "undo", "edit.redo": "redo", "edit.cut": "cut", "edit.copy": "copy",
    "edit.paste": "paste", "edit.find": "search", "search.find_in_files": "search",
    "workbench.settings": "settings", "view.resetLayout": "layout", "file.save": "save",
}


def application_icon() -> QIcon:
    """Workbench's icon (``resources/icons/workbench.svg``, the menu entry's too), for every window of the process."""
    return QIcon(str(resources_dir() / APPLICATION_ICON))


def set_application_icon() -> None:
    """Make Workbench's icon the icon of every window of this process (hub, project, tool)."""
    app = QApplication.instance()
    if app is not None and app.windowIcon().isNull():
        app.setWindowIcon(application_icon())


def install_window_icons(window) -> ThemedIcons:
    """Give a project window's Explorer, editor tabs and menus their icons, now and for the tabs
    that come later; returns the window's ``ThemedIcons``."""
    set_application_icon()
    icons = ThemedIcons(window)
    window.tree.set_icons(lambda name, is_folder: icons.file_icon(name, is_folder))
    for tab in window.editors():
        _set_tab_icon(window, icons, tab)
    window.sig_editor_opened.connect(lambda tab: _set_tab_icon(window, icons, tab))
    # The capabilities' document tabs (diffs, histories) name their icon; a new one is current.
    window.tabs.currentChanged.connect(lambda _index: _set_document_tab_icons(window.tabs, icons))
    _set_document_tab_icons(window.tabs, icons)
    for command_id, name in MENU_ICONS.items():
        if command_id in window.menus.actions:
            icons.set(window.menus.actions[command_id], name)
    return icons


def _set_tab_icon(window, icons: ThemedIcons, tab) -> None:
    index = window.tabs.indexOf(tab)
    if index >= 0:
        window.tabs.setTabIcon(index, icons.file_icon(Path(tab.path).name))


def _set_document_tab_icons(tabs, icons: ThemedIcons) -> None:
    for index in range(tabs.count()):
        widget = tabs.widget(index)
        name = widget.property(TAB_ICON_PROPERTY)
        if not name or widget.property(TAB_ICON_PROPERTY + "Shown"):
            continue
        widget.setProperty(TAB_ICON_PROPERTY + "Shown", True)

        def put(made: QIcon, widget=widget) -> None:
            where = tabs.indexOf(widget)
            if where < 0:
                raise RuntimeError("the tab is closed")  # ThemedIcons forgets it
            tabs.setTabIcon(where, made)

        icons.set_with(put, lambda name=name: icon(name))


def install_tool_window_icons(window) -> ThemedIcons:
    """Workbench's icon and the Run and Cancel buttons' icons on a model tool window."""
    from workbench.qt.icons import decorate_button

    set_application_icon()
    icons = ThemedIcons(window)
    for attribute, name in (("run_button", "run"), ("cancel_button", "stop")):
        button = getattr(window, attribute, None)
        if button is not None:
            decorate_button(icons, button, name)
    return icons

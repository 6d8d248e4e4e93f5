"""The Edit menu acts on the text the user is in, the View menu toggles every dock and puts the
docks back where a first open has them, and no two commands of a window share a key unless
they are meant to."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QKeySequence
from PySide6.QtWidgets import QApplication, QDockWidget, QLineEdit

from workbench.app.screenshot import settle
from workbench.project import create_from_template, load_project
from workbench.ui.project_window import ProjectWindow

# Keys two commands may share, and why: the one registered last runs while it is enabled.
DOCUMENTED_SHARED_KEYS = {
    "F5": "Train, or Debug the Python file being edited, or Continue a paused debug session",
    "Shift+F5": "Run on Cluster, or Stop Debugging while a debug session runs",
}


@pytest.fixture
def project(tmp_path):
    return load_project(create_from_template("digits", tmp_path / "digits").root)


@pytest.fixture
def open_window(qtbot):
    def open_(project) -> ProjectWindow:
        window = ProjectWindow(project)
        qtbot.addWidget(window)
        with qtbot.waitSignal(window.sig_capabilities_installed, timeout=30_000):
            window.show()
        settle(QApplication.instance(), window)
        window.activateWindow()
        qtbot.waitUntil(window.isActiveWindow)
        return window

    return open_


def place_of(window) -> dict:
    """Per dock: its area, whether it is shown, and its tab mates."""
    return {dock.objectName(): (window.dockWidgetArea(dock).name, not dock.isHidden(),
                                sorted(d.objectName() for d in window.tabifiedDockWidgets(dock)))
            for dock in window.findChildren(QDockWidget)}


def test_no_two_commands_of_a_window_share_a_key_unless_documented(open_window, project):
    window = open_window(project)
    by_key: dict[str, list[str]] = {}
    for command in window.commands.all():
        if command.shortcut:
            key = QKeySequence(command.shortcut).toString()
            by_key.setdefault(key, []).append(command.id)
    clashes = {key: ids for key, ids in by_key.items() if len(ids) > 1 and key not in DOCUMENTED_SHARED_KEYS}
    assert clashes == {}
    for key in ("Ctrl+Z", "Ctrl+Shift+Z", "Ctrl+Y", "Ctrl+X", "Ctrl+C", "Ctrl+V", "Ctrl+A",
                "Shift+Alt+Down", "Alt+Up", "Alt+Down", "Ctrl+/"):
        assert len(by_key[QKeySequence(key).toString()]) == 1, key


def test_edit_commands_act_on_the_focused_line_edit_and_on_the_editor(qtbot, open_window, project):
    window = open_window(project)
    editor = window.current_editor().editor
    editor.setPlainText("alpha\nbeta\n")
    tab = window.current_editor()
    tab.show_find()
    field = tab.find_bar.findChild(QLineEdit)
    field.setFocus()
    qtbot.waitUntil(field.hasFocus)
    field.setText("needle")
    run = window.commands.execute
    run("edit.selectAll")
    assert field.selectedText() == "needle"
    run("edit.cut")
    assert field.text() == "" and QGuiApplication.clipboard().text() == "needle"
    run("edit.undo")
    assert field.text() == "needle"
    run("edit.redo")
    assert field.text() == ""
    run("edit.paste")
    assert field.text() == "needle"

    editor.setFocus()
    qtbot.waitUntil(editor.hasFocus)
    run("edit.selectAll")
    run("edit.copy")
    assert QGuiApplication.clipboard().text().replace("\u2029", "\n") == "alpha\nbeta\n"
    # From a menu, the focus stays with the editor; from the palette it came back to it.
    tab.set_cursor_position(1)
    run("edit.duplicateLine")
    assert editor.toPlainText() == "alpha\nalpha\nbeta\n"
    assert tab.cursor_position() == (2, 1)  # on the copy
    run("edit.undo")
    assert editor.toPlainText() == "alpha\nbeta\n"


def test_alt_up_and_down_move_the_selected_lines_and_keep_them_selected(qtbot, open_window, project):
    window = open_window(project)
    tab = window.current_editor()
    editor = tab.editor
    editor.setPlainText("one\ntwo\nthree\nfour")
    editor.setFocus()
    qtbot.waitUntil(editor.hasFocus)
    tab.set_cursor_position(2)
    qtbot.keyClick(editor, Qt.Key.Key_Down, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClick(editor, Qt.Key.Key_End, Qt.KeyboardModifier.ShiftModifier)  # "two" and "three"
    qtbot.keyClick(editor, Qt.Key.Key_Down, Qt.KeyboardModifier.AltModifier)
    assert editor.toPlainText() == "one\nfour\ntwo\nthree"
    assert editor.textCursor().selectedText() == "two\u2029three"
    qtbot.keyClick(editor, Qt.Key.Key_Up, Qt.KeyboardModifier.AltModifier)
    qtbot.keyClick(editor, Qt.Key.Key_Up, Qt.KeyboardModifier.AltModifier)
    assert editor.toPlainText() == "two\nthree\none\nfour"
    qtbot.keyClick(editor, Qt.Key.Key_Up, Qt.KeyboardModifier.AltModifier)  # already at the top
    assert editor.toPlainText() == "two\nthree\none\nfour"
    window.commands.execute("edit.toggleComment")
    assert editor.toPlainText() == "# two\n# three\none\nfour"


def test_the_view_menu_toggles_each_dock_with_a_check_mark(qtbot, open_window, project):
    window = open_window(project)
    docks = window.findChildren(QDockWidget)
    view = next(a.menu() for a in window.menuBar().actions() if a.text() == "View")
    for dock in docks:
        command_id = f"view.toggle.{dock.objectName().removeprefix('dock-')}"
        action = window.menus.actions[command_id]
        assert action in view.actions() and action.isCheckable()
        shown = not dock.isHidden()
        window.commands.execute(command_id)
        if shown and not dock.isHidden():  # it was behind another dock's tab: now in front
            qtbot.waitUntil(dock.isVisible)
            window.commands.execute(command_id)
        view.aboutToShow.emit()
        assert dock.isHidden() == shown and action.isChecked() == (not shown)


def test_toggling_a_dock_behind_anothers_tab_brings_it_in_front_and_a_shown_dock_comes_in_front(
        qtbot, open_window, project):
    """Ctrl+Shift+E with Search in front of the Explorer hid the Explorer (on X11 Qt keeps a
    dock behind a tab "visible", only covered)."""
    window = open_window(project)
    explorer = window.findChild(QDockWidget, "dock-explorer")
    search = window.findChild(QDockWidget, "dock-find-in-files")

    def in_front(dock) -> bool:
        return dock.isVisible() and not dock.visibleRegion().isEmpty()

    search.raise_()
    qtbot.waitUntil(lambda: in_front(search) and not in_front(explorer))
    window.commands.execute("view.toggle.explorer")
    qtbot.waitUntil(lambda: in_front(explorer))
    assert not explorer.isHidden()
    window.commands.execute("view.toggle.explorer")  # in view: now it goes
    assert explorer.isHidden()
    search.raise_()
    window.commands.execute("view.toggle.explorer")  # shown again, and in front of Search
    qtbot.waitUntil(lambda: in_front(explorer))


def test_reset_layout_brings_back_the_first_open_layout_and_the_window_keeps_it(qtbot, open_window, project):
    window = open_window(project)
    first_open = place_of(window)
    explorer = window.findChild(QDockWidget, "dock-explorer")
    runs = window.findChild(QDockWidget, "dock-runs")
    window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, explorer)
    runs.hide()
    window.save_state()
    window.close()

    again = open_window(project)
    moved = place_of(again)
    assert moved["dock-explorer"][0] == "RightDockWidgetArea" and not moved["dock-runs"][1]
    again.commands.execute("view.resetLayout")
    assert place_of(again) == first_open
    again.close()

    third = open_window(project)
    assert place_of(third) == first_open

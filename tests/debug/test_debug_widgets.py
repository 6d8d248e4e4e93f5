"""The debugger in a project window, offscreen: gutter breakpoints kept with the project, the
Debug dock when the program stops, the editor on the current line, and the keys."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import QPoint, Qt

from tests.debug.conftest import LINE_COMMENT, LINE_SQUARE_BODY, LINE_TOTAL, LINE_VALUES, SAMPLE
from workbench.debug.widgets import controller_of, panel_of
from workbench.project import load_project
from workbench.ui.project_window import ProjectWindow

TIMEOUT_MS = 60_000


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "workbench.toml").write_text('[project]\nname = "proj"\nmain = "sample.py"\n')
    (root / "sample.py").write_text(SAMPLE)
    (root / "notes.txt").write_text("not code\n")
    return root


@pytest.fixture
def open_window(qtbot):
    windows = []

    def open_(root):
        window = ProjectWindow(load_project(root))
        window.resize(1300, 860)
        qtbot.addWidget(window)
        window.install_capabilities(("workbench.debug.widgets:install",))
        window.show()
        window.activateWindow()  # so that its shortcuts reach it
        qtbot.waitUntil(window.isActiveWindow)
        windows.append(window)
        return window

    yield open_
    for window in windows:
        controller = controller_of(window)
        if controller is not None and controller.session is not None:
            controller.session.close()
        window.tasks.wait(10_000)


def click_gutter(qtbot, tab, line: int, button=Qt.MouseButton.LeftButton) -> None:
    editor = tab.editor
    block = editor.document().findBlockByNumber(line - 1)
    y = int(editor.blockBoundingGeometry(block).translated(editor.contentOffset()).center().y())
    qtbot.mouseClick(editor.line_number_panel, button, pos=QPoint(4, y))


def test_clicking_the_gutter_toggles_a_breakpoint_kept_with_the_project(qtbot, open_window, project):
    window = open_window(project)
    tab = window.current_editor()
    controller = controller_of(window)
    click_gutter(qtbot, tab, LINE_VALUES)
    assert [b.line for b in controller.breakpoints_in(tab.path)] == [LINE_VALUES]
    state_file = project / ".workbench" / "debug.json"
    qtbot.waitUntil(lambda: state_file.is_file() and "sample.py" in state_file.read_text())
    saved = json.loads(state_file.read_text())["breakpoints"]
    assert [(b["path"], b["line"]) for b in saved] == [("sample.py", LINE_VALUES)]
    click_gutter(qtbot, tab, LINE_TOTAL)
    click_gutter(qtbot, tab, LINE_VALUES)  # off again
    assert [b.line for b in controller.breakpoints_in(tab.path)] == [LINE_TOTAL]
    window.tasks.wait(5000)
    window.close()

    again = open_window(project)
    assert [b.line for b in controller_of(again).breakpoints_in(again.current_editor().path)] == [LINE_TOTAL]


def test_breakpoints_follow_their_lines_when_lines_are_added_above(qtbot, open_window, project):
    window = open_window(project)
    tab = window.current_editor()
    controller = controller_of(window)
    click_gutter(qtbot, tab, LINE_VALUES)
    tab.set_cursor_position(1, 1)
    window.commands.execute("editor.insertText", text="# one\n# two\n")
    assert [b.line for b in controller.breakpoints_in(tab.path)] == [LINE_VALUES + 2]
    assert tab.editor.document().findBlockByNumber(LINE_VALUES + 1).text().strip().startswith("values =")
    # And back up when lines above are deleted.
    cursor = tab.editor.textCursor()
    cursor.setPosition(0)
    cursor.movePosition(cursor.MoveOperation.Down, cursor.MoveMode.KeepAnchor, 2)
    cursor.removeSelectedText()
    assert [b.line for b in controller.breakpoints_in(tab.path)] == [LINE_VALUES]


def test_toggle_breakpoint_command_and_no_gutter_breakpoints_in_text_files(qtbot, open_window, project):
    window = open_window(project)
    tab = window.current_editor()
    tab.set_cursor_position(LINE_SQUARE_BODY, 1)
    window.commands.execute("debug.toggleBreakpoint")
    assert [b.line for b in controller_of(window).breakpoints_in(tab.path)] == [LINE_SQUARE_BODY]
    text_tab = window.open_file(project / "notes.txt")
    assert getattr(text_tab, "breakpoint_gutter", None) is None
    assert not window.commands.get("debug.toggleBreakpoint").is_enabled()


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_stopped_at_a_breakpoint_the_dock_shows_stack_and_variables_and_the_editor_the_line(
        qtbot, open_window, project):
    window = open_window(project)
    tab = window.current_editor()
    controller = controller_of(window)
    panel = panel_of(window)
    click_gutter(qtbot, tab, LINE_VALUES)
    click_gutter(qtbot, tab, LINE_COMMENT)
    with qtbot.waitSignal(controller.sig_stopped, timeout=TIMEOUT_MS):
        qtbot.keyClick(tab.editor, Qt.Key.Key_F5)  # F5 in a Python file: Debug File
    # The editor is on the stopped line, marked in the gutter and highlighted.
    assert tab.breakpoint_gutter.current_line == LINE_VALUES
    assert tab.cursor_position()[0] == LINE_VALUES
    assert "stopped here" in tab.breakpoint_gutter.tooltip_for(LINE_VALUES)
    # The breakpoint on the comment says where it went, in the gutter and the console.
    moved = controller.result_for(tab.path, LINE_COMMENT)
    assert moved is not None and moved.message and moved.message in tab.breakpoint_gutter.tooltip_for(LINE_COMMENT)
    assert moved.message in panel.console.text()
    # The dock: the stack with the stopped frame current, the status line, the controls.
    stack = panel.stack
    thread = stack.topLevelItem(0)
    assert "MainThread" in thread.text(0) and thread.child(0).text(0) == f"main — sample.py:{LINE_VALUES}"
    assert panel.status.full_text().startswith(f"Stopped at a breakpoint in main (sample.py:{LINE_VALUES})")
    assert panel.buttons["continue"].isEnabled() and not panel.buttons["pause"].isEnabled()

    with qtbot.waitSignal(controller.sig_stopped, timeout=TIMEOUT_MS):
        qtbot.keyClick(tab.editor, Qt.Key.Key_F10)  # Step Over
    qtbot.waitUntil(lambda: "values" in panel.variables.loaded_names(), timeout=TIMEOUT_MS)
    values = panel.variables.loaded_names()["values"]
    assert values.display_value().startswith("float32 [3, 4] cpu  min 0  max 11  mean 5.5")
    assert tab.breakpoint_gutter.current_line == LINE_TOTAL

    # The debug console evaluates in the stopped frame.
    panel.console.input.setText("values.sum() + 1")
    qtbot.keyClick(panel.console.input, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "67.0" in panel.console.text(), timeout=TIMEOUT_MS)

    # A watch is evaluated in the frame.
    controller.add_watch("values.shape")
    qtbot.waitUntil(lambda: panel.watches.topLevelItem(0).text(1) == "(3, 4)", timeout=TIMEOUT_MS)

    with qtbot.waitSignal(controller.sig_ended, timeout=TIMEOUT_MS):
        qtbot.keyClick(tab.editor, Qt.Key.Key_F5)  # Continue: the program runs to its end
    assert tab.breakpoint_gutter.current_line is None
    assert "finished (exit code 0)" in panel.status.full_text()
    assert "total 30" in panel.console.text()


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_program_that_fails_at_once_gives_one_message_in_the_dock(qtbot, open_window, project):
    (project / "broken.py").write_text("def f(:\n    pass\n")
    window = open_window(project)
    controller = controller_of(window)
    with qtbot.waitSignal(controller.sig_ended, timeout=TIMEOUT_MS):
        window.commands.execute("debug.debugFile", path="broken.py")
    panel = panel_of(window)
    assert panel.notice.isVisibleTo(panel)
    assert "broken.py exited with code 1 before stopping at a breakpoint" in panel.notice.label.text()
    assert "SyntaxError" in panel.notice.label.text()


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_restart_runs_the_program_again_to_the_same_breakpoint_and_stop_ends_it(qtbot, open_window, project):
    window = open_window(project)
    tab = window.current_editor()
    controller = controller_of(window)
    click_gutter(qtbot, tab, LINE_SQUARE_BODY)
    with qtbot.waitSignal(controller.sig_stopped, timeout=TIMEOUT_MS):
        window.commands.execute("debug.debugFile")
    first = controller.session
    with qtbot.waitSignal(controller.sig_stopped, timeout=TIMEOUT_MS) as stopped:
        window.commands.execute("debug.restart")
    assert controller.session is not first and first.end is not None
    assert stopped.args[0].top.line == LINE_SQUARE_BODY
    with qtbot.waitSignal(controller.sig_ended, timeout=TIMEOUT_MS) as ended:
        qtbot.keyClick(tab.editor, Qt.Key.Key_F5, Qt.KeyboardModifier.ShiftModifier)  # Stop
    assert "was stopped" in ended.args[0].message and not ended.args[0].error
    assert tab.breakpoint_gutter.current_line is None
    assert not panel_of(window).buttons["stop"].isEnabled()


def test_the_gutter_menu_edits_a_breakpoints_condition_hit_count_and_log_message(qtbot, open_window, project):
    from workbench.debug.widgets.breakpoint_dialog import BreakpointDialog

    window = open_window(project)
    tab = window.current_editor()
    controller = controller_of(window)
    gutter = tab.breakpoint_gutter
    menu = gutter.menu_for(LINE_SQUARE_BODY)
    titles = [action.text() for action in menu.actions()]
    assert titles == ["Add Breakpoint", "Add Conditional Breakpoint…", "Add Log Point…"]
    next(a for a in menu.actions() if a.text() == "Add Conditional Breakpoint…").trigger()
    dialog = tab.editor.findChild(BreakpointDialog)
    assert dialog is not None and dialog.isVisible()
    dialog.condition.setText("x > 2")
    dialog.hit_condition.setText(">= 2")
    dialog.accept()
    added = controller.state.at(tab.path, LINE_SQUARE_BODY)
    assert (added.condition, added.hit_condition, added.log_message) == ("x > 2", ">= 2", "")
    assert "when x > 2, on hit >= 2" in gutter.tooltip_for(LINE_SQUARE_BODY)

    menu = gutter.menu_for(LINE_SQUARE_BODY)
    assert [a.text() for a in menu.actions()] == ["Edit Breakpoint…", "Disable Breakpoint", "Remove Breakpoint"]
    next(a for a in menu.actions() if a.text() == "Disable Breakpoint").trigger()
    assert not controller.state.at(tab.path, LINE_SQUARE_BODY).enabled
    next(a for a in gutter.menu_for(LINE_SQUARE_BODY).actions() if a.text() == "Remove Breakpoint").trigger()
    assert controller.state.at(tab.path, LINE_SQUARE_BODY) is None

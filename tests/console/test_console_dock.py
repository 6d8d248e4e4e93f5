"""The Console dock in a project window, on real kernels: a prompt that comes without the window
waiting, the editor's Run commands, inline plots, interrupt, restart, a killed kernel reported
once with Restart, and consoles that do not share a namespace."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QTextCursor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMessageBox

from workbench.console.widgets import panel_of
from workbench.qt.notice import NoticeBar

from .conftest import close_window, execute_and_wait, make_project, open_window, pump, wait_for, wait_for_run


def console_text(console) -> str:
    return console.widget._control.toPlainText()


def names(console) -> set[str]:
    return {variable.name for variable in console.variables}


def process_ended(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A child that ended but was not reaped yet is a zombie: ended too.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] == "Z"
    except OSError:
        return True


def fresh(panel):
    """The current console with an empty namespace."""
    console = panel.current()
    execute_and_wait(console, "%reset -f")
    return console


def test_showing_the_dock_starts_a_kernel_off_the_gui_thread_and_its_prompt_runs_code(qapp, tmp_path):
    root = make_project(tmp_path / "project")
    ticks: list[float] = []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start(10)
    window = open_window(root)
    panel = panel_of(window)
    began = time.monotonic()
    console = wait_for(panel.current, what="a console once the dock is shown")
    assert console.state == "starting" and not console.accepts_input()  # start() did not wait for it
    wait_for(lambda: console.accepts_input(), what="the prompt")
    took = time.monotonic() - began
    timer.stop()
    gaps = [b - a for a, b in zip(ticks, ticks[1:]) if a >= began]
    # The GUI thread kept turning while the kernel started and qtconsole loaded.
    assert gaps and max(gaps) < took / 2, (max(gaps), took)

    pid = console.kernel.pid
    assert Path(f"/proc/{pid}/cwd").resolve() == root.resolve()
    execute_and_wait(console, "6 * 7")
    assert "Out[1]: 42" in console_text(console)
    assert close_window(window) == [pid]
    wait_for(lambda: process_ended(pid), what="the kernel to end with its window")


def test_run_file_puts_the_scripts_variables_in_the_console_and_the_variables_view(console_window, panel):
    console = fresh(panel)
    tab = console_window.open_file(console_window.project.root / "script.py")
    tab.set_cursor_position(99, 1)
    tab.insert_text("\nunsaved = grid.sum()\n")  # an unsaved edit: the file is saved, then run

    sent = console_window.commands.execute("console.runFile")
    wait_for(lambda: {"grid", "label", "unsaved"} <= names(console), what="the script's variables")

    assert sent.startswith("%run ") and str(tab.path) in sent
    assert not tab.is_modified() and "unsaved = grid.sum()" in tab.path.read_text()
    assert panel.variables.row_texts("grid") == ["grid", "np.ndarray", "(3, 4)", "float32   min 0   max 11"]
    assert panel.variables.row_texts("label")[1:] == ["str", "17 chars", "'made by script.py'"]
    assert panel.variables.row_texts("unsaved")[3] == "66.0"


def test_f9_runs_the_current_line_and_steps_to_the_next_or_the_selection(console_window, panel):
    console = fresh(panel)
    tab = console_window.open_file(console_window.project.root / "cells.py")
    tab.set_cursor_position(8, 5)  # line_value = 41 + 1

    assert console_window.commands.execute("console.runSelection") == "line_value = 41 + 1"
    wait_for(lambda: "line_value" in names(console), what="the line's variable")
    assert tab.cursor_position() == (9, 1)
    assert panel.variables.row_texts("line_value")[3] == "42"

    document = tab.editor.document()
    cursor = QTextCursor(document.findBlockByNumber(0))
    cursor.setPosition(document.findBlockByNumber(3).position() + document.findBlockByNumber(3).length() - 1,
                       QTextCursor.MoveMode.KeepAnchor)  # lines 1 to 4
    tab.editor.setTextCursor(cursor)
    console_window.commands.execute("console.runSelection")
    wait_for(lambda: "first_cell" in names(console), what="the selection's variable")
    assert panel.variables.row_texts("first_cell")[1:3] == ["np.ndarray", "(2, 5)"]
    assert "line_value" in names(console)  # the console keeps what ran before


def test_run_cell_runs_the_cell_around_the_cursor_and_advance_moves_to_the_next(console_window, panel):
    console = fresh(panel)
    tab = console_window.open_file(console_window.project.root / "cells.py")
    tab.set_cursor_position(1, 1)
    wait_for_run(console, lambda: console_window.commands.execute("console.runCell"))  # the lines above the first marker
    tab.set_cursor_position(4, 3)

    code = wait_for_run(console, lambda: console_window.commands.execute("console.runCellAndAdvance"))
    assert code.startswith("# %% first cell") and "second_cell" not in code
    assert tab.cursor_position() == (6, 1)
    assert "first_cell" in names(console) and "second_cell" not in names(console)

    console_window.commands.execute("console.runCell")
    wait_for(lambda: "second_cell" in names(console), what="the second cell's variable")
    assert panel.variables.row_texts("second_cell")[3] == "10"
    assert tab.cursor_position() == (6, 1)  # Run Cell alone stays


def test_f9_and_ctrl_enter_are_keys_of_the_editor_and_ctrl_enter_in_the_console_stays_the_consoles(
        console_window, panel):
    console = fresh(panel)
    console_window.activateWindow()
    wait_for(console_window.isActiveWindow, what="the window to be active")
    tab = console_window.open_file(console_window.project.root / "cells.py")
    tab.set_cursor_position(1, 1)
    wait_for_run(console, lambda: QTest.keyClick(tab.editor, Qt.Key.Key_F9))
    assert tab.cursor_position() == (2, 1)
    tab.set_cursor_position(4, 1)
    wait_for_run(console, lambda: QTest.keyClick(tab.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier))
    assert "first_cell" in names(console)

    tab.set_cursor_position(7, 1)  # in the second cell
    console.widget._control.setFocus()
    console.widget.input_buffer = "typed_here = 5"
    QTest.keyClick(console.widget._control, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    pump(0.5)
    # In qtconsole Ctrl+Enter starts a new input line; it did not run the editor's cell.
    assert console.widget.input_buffer.startswith("typed_here = 5\n") and not console.is_busy()
    wait_for_run(console, lambda: QTest.keyClick(console.widget._control, Qt.Key.Key_Return,
                                                 Qt.KeyboardModifier.ShiftModifier))
    assert "typed_here" in names(console) and "second_cell" not in names(console)


def test_a_plot_is_drawn_inline_in_the_console(panel):
    console = fresh(panel)
    execute_and_wait(console, "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()")
    assert "<img" in console.widget._control.document().toHtml()


def test_interrupt_stops_an_endless_loop_and_the_console_goes_on(console_window, panel):
    console = fresh(panel)
    console.execute("print('loop' + 'ing', flush=True)\nwhile True:\n    pass")
    # "looping" is in the output only (not in the input): the loop runs.
    wait_for(lambda: "looping" in console_text(console), what="the loop to start")
    assert console.is_busy()

    console_window.commands.execute("console.interrupt")
    wait_for(lambda: not console.is_busy(), what="the loop to stop")
    assert "KeyboardInterrupt" in console_text(console)
    execute_and_wait(console, "after = 'still here'")
    assert "after" in names(console)


def test_restart_gives_a_new_kernel_with_an_empty_namespace_under_the_old_output(console_window, panel):
    console = fresh(panel)
    execute_and_wait(console, "before_restart = 1")
    old_pid = console.kernel.pid

    console_window.commands.execute("console.restart")
    wait_for(lambda: console.accepts_input(), what="the new kernel's prompt")
    wait_for(lambda: console.variables == [] or "before_restart" not in names(console), what="the new namespace")

    assert console.kernel.pid != old_pid
    wait_for(lambda: process_ended(old_pid), what="the old kernel to end")
    assert "Restarting the kernel" in console_text(console) and "before_restart = 1" in console_text(console)
    execute_and_wait(console, "after_restart = 2")
    assert names(console) == {"after_restart"}


def test_a_killed_kernel_is_said_once_in_the_dock_and_restart_brings_one_back(console_window, panel):
    console = panel.current()
    execute_and_wait(console, "alive = 'before'")
    os.kill(console.kernel.pid, signal.SIGKILL)

    wait_for(lambda: console.state == "dead", what="the death to be noticed")
    pump(1.0)  # later signs of the death (the heartbeat's) must not add messages
    visible = [bar for bar in panel.findChildren(NoticeBar) if bar.isVisible()]
    assert visible == [console.notice]
    assert "killed by signal 9" in console.notice.label.text() and "Restart" in console.notice.label.text()
    assert console.restart_button.isVisible()
    assert panel.tabs.tabText(panel.tabs.indexOf(console)).endswith("(no kernel)")
    assert not [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()]
    assert panel.variables.row_texts("alive") is None and console.variables == []  # they went with it
    assert not console.widget.isEnabled()  # no input to a kernel that is not there

    console.restart_button.click()
    wait_for(lambda: console.accepts_input(), what="the restarted kernel")
    assert not console.notice.isVisible()
    assert console.widget.isEnabled()
    execute_and_wait(console, "alive = True")
    assert panel.variables.row_texts("alive")[3] == "True"


def test_two_consoles_have_their_own_kernels_and_namespaces(console_window, panel):
    first = panel.current()
    execute_and_wait(first, "who = 'first'")
    console_window.commands.execute("console.new")
    second = panel.current()
    assert second is not first
    wait_for(lambda: second.accepts_input(), what="the second console")
    execute_and_wait(second, "only_here = 'second'")

    assert second.kernel.pid != first.kernel.pid
    assert "who" not in names(second) and "only_here" not in names(first)
    assert panel.variables.row_texts("only_here") is not None
    panel.tabs.setCurrentWidget(first)
    assert panel.variables.row_texts("only_here") is None and panel.variables.row_texts("who") is not None

    panel.tabs.setCurrentWidget(second)
    pid = second.kernel.pid
    console_window.commands.execute("console.close")
    assert panel.consoles() == [first]
    wait_for(lambda: process_ended(pid), what="the closed console's kernel to end")
    execute_and_wait(first, "who")
    assert "Out[" in console_text(first) and "'first'" in console_text(first)


def test_a_run_command_with_no_console_opens_one_and_runs(console_window, panel):
    for _ in panel.consoles():
        panel.close_console()
    assert panel.current() is None
    console_window.open_file(console_window.project.root / "script.py")
    console_window.commands.execute("console.runFile")
    console = panel.current()
    assert console is not None
    wait_for(lambda: "grid" in names(console), what="the script's variables in a new console")

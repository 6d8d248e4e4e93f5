"""A project whose interpreter cannot run a kernel: the Console dock says so once, in the dock,
with Restart (never a dialog), the window stays usable, and Restart after the fix works."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication, QMessageBox

from tests.waiting import pid_alive
from workbench.console.widgets import panel_of
from workbench.qt.notice import NoticeBar

from .conftest import close_window, execute_and_wait, make_project, open_window, pump, wait_for


def interpreter_script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def dialogs() -> list:
    return [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()]


def one_message(panel, console) -> str:
    """The one message the dock shows (and checks there is only one, and no dialog)."""
    assert [bar for bar in panel.findChildren(NoticeBar) if bar.isVisible()] == [console.notice]
    assert console.restart_button.isVisible()
    assert dialogs() == []
    return console.notice.label.text()


@pytest.fixture
def windows(qapp):
    opened = []

    def open_(root: Path):
        window = open_window(root)
        opened.append(window)
        return window

    yield open_
    for window in opened:
        close_window(window)


def test_a_missing_interpreter_is_said_in_the_dock_and_restart_after_the_fix_works(windows, tmp_path):
    root = make_project(tmp_path / "project", '[python]\ninterpreter = "env/bin/python"\n')
    window = windows(root)
    panel = panel_of(window)
    console = wait_for(lambda: panel.current() and panel.current().state == "dead" and panel.current(),
                       what="the console to give up")

    message = one_message(panel, console)
    assert str(root / "env" / "bin" / "python") in message and "does not exist" in message
    assert "[python] interpreter" in message and "workbench.toml" in message
    assert panel.tabs.tabText(0).endswith("(no kernel)")

    window.open_file(root / "script.py")
    window.commands.execute("console.runFile")  # a Run command on a dead console: the same one message
    pump(0.5)
    assert one_message(panel, console) == message and console.state == "dead"

    # (A symlink to a virtual environment's python would not find its environment.)
    interpreter_script(root / "env" / "bin" / "python", f'exec "{sys.executable}" "$@"')
    console.restart_button.click()
    wait_for(lambda: console.accepts_input() or console.state == "dead", what="the fixed interpreter")
    assert console.state == "ready", console.message
    assert not console.notice.isVisible() and console.kernel.interpreter.path == root / "env" / "bin" / "python"
    execute_and_wait(console, "fixed = True")
    assert [v.name for v in console.variables] == ["fixed"]


def test_an_interpreter_that_exits_at_once_is_said_with_what_it_printed(windows, tmp_path):
    interpreter_script(tmp_path / "bin" / "python", "echo 'bad interpreter: no Python here' >&2; exit 3")
    root = make_project(tmp_path / "project", f'[python]\ninterpreter = "{tmp_path / "bin" / "python"}"\n')
    panel = panel_of(windows(root))
    console = wait_for(lambda: panel.current() and panel.current().state == "dead" and panel.current(),
                       what="the console to give up")

    message = one_message(panel, console)
    assert "exited at once (code 3)" in message and "bad interpreter: no Python here" in message
    assert "Restart" in message
    pump(1.0)  # nothing else comes later
    assert one_message(panel, console) == message


def test_a_kernel_that_hangs_on_start_is_given_up_by_restart_and_after_its_time(windows, tmp_path, monkeypatch):
    import workbench.console.widgets.console_tab as console_tab

    monkeypatch.setattr(console_tab, "READY_TIMEOUT_S", 3.0)
    pids = tmp_path / "pids"
    interpreter_script(tmp_path / "bin" / "python", f'echo $$ >> "{pids}"; exec sleep 600')
    root = make_project(tmp_path / "project", f'[python]\ninterpreter = "{tmp_path / "bin" / "python"}"\n')
    window = windows(root)
    panel = panel_of(window)
    console = wait_for(panel.current, what="the console")
    wait_for(lambda: pids.is_file() and pids.read_text().strip(), what="the hanging kernel")
    first = int(pids.read_text().split()[0])
    assert console.state == "starting"

    console.restart()  # Restart while it hangs gives this start up for a new one
    wait_for(lambda: not pid_alive(first), what="the first hanging process to end")
    wait_for(lambda: console.state == "dead", what="the second start to give up")
    message = one_message(panel, console)
    assert "did not answer within 3 s" in message
    assert all(not pid_alive(int(pid)) for pid in pids.read_text().split())

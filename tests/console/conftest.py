"""What the console's widget tests share: a small project (NumPy only, so runs are quick), project
windows with the console capability installed, and waiting while Qt's events go on."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.project_windows import open_with_capabilities
from tests.waiting import wait_with_events

TIMEOUT_S = 90.0

SCRIPT = '''"""A script the tests run in the console."""
import numpy as np

grid = np.arange(12, dtype=np.float32).reshape(3, 4)
label = "made by script.py"
'''

CELLS = '''import numpy as np

# %% first cell
first_cell = np.zeros((2, 5), dtype=np.int8)

# %% second cell
second_cell = first_cell.shape[1] * 2
line_value = 41 + 1
'''


def make_project(root: Path, toml: str = "[project]\nname = \"console-test\"\n") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "workbench.toml").write_text(toml, encoding="utf-8")
    (root / "script.py").write_text(SCRIPT, encoding="utf-8")
    (root / "cells.py").write_text(CELLS, encoding="utf-8")
    return root


def wait_for(condition, timeout: float = TIMEOUT_S, what: str = ""):
    """The first truthy ``condition()``, Qt's events processed meanwhile; fails after ``timeout``."""
    return wait_with_events(condition, timeout, what)


def open_window(root: Path, entries=("workbench.console.widgets:install",)):
    """A project window on ``root`` with only the console capability (its dock in front)."""
    return open_with_capabilities(root, entries)


def close_window(window) -> list[int]:
    """Close ``window`` as a user does; returns the pids of the kernels it had."""
    from workbench.console.widgets import panel_of

    pids = [c.kernel.pid for c in panel_of(window).consoles() if c.kernel is not None]
    window.discard_changes_on_close = True
    window.close()
    window.tasks.wait(30_000)
    window.deleteLater()
    return pids


def execute_and_wait(console, code: str) -> None:
    """Run ``code`` in ``console`` as typed, and wait until it ran and the variables came back."""
    wait_for_run(console, lambda: console.execute(code), what=f"{code!r} to run")


def wait_for_run(console, start, what: str = "the run"):
    """Call ``start()`` (which sends code to ``console``); wait until the code ran and the
    variables came back. Returns what ``start`` returned."""
    executed, refreshed = [], []

    def on_executed():
        executed.append(1)
        refreshed.clear()  # the summary that counts is the one asked after this execution

    console.sig_executed.connect(on_executed)
    console.sig_variables_changed.connect(lambda: refreshed.append(1))
    try:
        result = start()
        wait_for(lambda: executed and refreshed and not console.is_busy(), what=what)
    finally:
        console.sig_executed.disconnect(on_executed)
    return result


def pump(seconds: float) -> None:
    """Let Qt's events run for a while (for things that must NOT happen meanwhile)."""
    from PySide6.QtCore import QEventLoop
    from PySide6.QtWidgets import QApplication

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        QApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
        time.sleep(0.01)


@pytest.fixture(scope="module")
def console_window(qapp, tmp_path_factory):
    """One window (and its first console's kernel) for a module's tests."""
    from workbench.console.widgets import panel_of

    window = open_window(make_project(tmp_path_factory.mktemp("console") / "project"))
    panel = panel_of(window)
    wait_for(lambda: panel.current() is not None and panel.current().state == "ready", what="the first console")
    wait_for(lambda: panel.current().accepts_input(), what="the first prompt")
    yield window
    close_window(window)


@pytest.fixture
def panel(console_window):
    from workbench.console.widgets import panel_of

    return panel_of(console_window)

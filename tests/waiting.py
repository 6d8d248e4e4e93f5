"""Waiting in tests for something another process or thread does."""

from __future__ import annotations

import time


def wait_until(condition, timeout: float = 30.0, interval: float = 0.05, what: str = ""):
    """The first truthy value of ``condition()``, polled every ``interval`` seconds; the test
    fails (AssertionError naming ``what``, or the condition) after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what or condition}")


def wait_with_events(condition, timeout: float = 90.0, what: str = ""):
    """``wait_until`` for widget tests without qtbot: Qt's events are processed while waiting,
    so queued signals and the window's tasks go on."""
    from PySide6.QtCore import QEventLoop
    from PySide6.QtWidgets import QApplication

    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or condition}")
        if QApplication.instance() is not None:
            QApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
        time.sleep(0.01)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie, ended but not yet reaped, does not)."""
    import os
    from pathlib import Path

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True

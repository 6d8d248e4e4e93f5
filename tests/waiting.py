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

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

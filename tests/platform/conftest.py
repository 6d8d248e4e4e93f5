"""What the platform tests share: real child processes, started and always ended."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def wait_until(predicate, timeout: float = 10.0, interval: float = 0.02):
    """The first true value of ``predicate()``; fails the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"not true within {timeout} s: {predicate}")
        time.sleep(interval)


@pytest.fixture
def start_python():
    """``start(code, *arguments, **popen_args) -> Popen``: a Python child running ``code`` (with
    this Workbench importable), killed (with its process group when it leads one) after the test."""
    children: list[subprocess.Popen] = []

    def start(code: str, *arguments: str, **popen_args) -> subprocess.Popen:
        child = subprocess.Popen([sys.executable, "-c", code, *arguments], cwd=ROOT, **popen_args)
        children.append(child)
        return child

    yield start
    for child in children:
        if child.poll() is None:
            try:
                if _leads_its_group(child):
                    os.killpg(child.pid, signal.SIGKILL)
                else:
                    child.kill()
            except ProcessLookupError:
                pass
        child.wait(timeout=10)


def _leads_its_group(child: subprocess.Popen) -> bool:
    try:
        return os.getpgid(child.pid) == child.pid
    except ProcessLookupError:
        return False

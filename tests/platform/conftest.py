"""What the platform tests share: real child processes, started and always ended."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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

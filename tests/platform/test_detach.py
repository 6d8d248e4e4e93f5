"""Detached processes: the starter waits for the first process only, or not at all."""

from __future__ import annotations

import os
import signal
import time

from tests.waiting import wait_until
from workbench.platform.detach import start_detached

SLOW_STARTER = """\
import os, sys, time
time.sleep(1)  # a slow start, as a Python importing Workbench on a busy machine
from workbench.platform.detach import detach
detach()
with open(sys.argv[1] + ".part", "w") as out:
    out.write(str(os.getpid()))
os.replace(sys.argv[1] + ".part", sys.argv[1])
time.sleep(30)
"""


def _end(pid_file) -> None:
    try:
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
    except (OSError, ValueError):
        pass


def test_a_start_that_does_not_wait_returns_before_python_has_started_and_the_process_goes_on(tmp_path,
                                                                                              monkeypatch):
    (tmp_path / "slow_starter.py").write_text(SLOW_STARTER)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    pid_file = tmp_path / "detached.pid"

    began = time.monotonic()
    assert start_detached("slow_starter", [str(pid_file)], tmp_path / "log", cwd=tmp_path, wait=False) is None
    returned = time.monotonic() - began
    try:
        assert returned < 0.5
        wait_until(pid_file.exists, 20, what="the detached process")
    finally:
        _end(pid_file)


def test_a_start_that_waits_returns_once_the_process_is_on_its_own(tmp_path, monkeypatch):
    (tmp_path / "slow_starter.py").write_text(SLOW_STARTER)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    pid_file = tmp_path / "detached.pid"

    began = time.monotonic()
    try:
        assert start_detached("slow_starter", [str(pid_file)], tmp_path / "log", cwd=tmp_path) == 0
        assert time.monotonic() - began >= 1
        wait_until(pid_file.exists, 20, what="the detached process")
    finally:
        _end(pid_file)

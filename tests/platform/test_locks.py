"""File locks between real processes: held by one, refused to another, let go when the holder
ends however it ends."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from tests.waiting import wait_until
from workbench.platform.locks import FileLock, is_locked, locked

HOLD = """
import sys, time
from workbench.platform.locks import FileLock
lock = FileLock(sys.argv[1])
print("held" if lock.try_acquire() else "refused", flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_a_lock_held_by_another_process_is_refused_until_that_process_is_killed(tmp_path, start_python):
    path = tmp_path / "hub.lock"
    holder = _start_holder(start_python, path)
    assert holder.stdout.readline().strip() == "held"
    assert is_locked(path)
    mine = FileLock(path)
    assert not mine.try_acquire() and not mine.held
    assert mine.holder_pid() == holder.pid
    holder.send_signal(signal.SIGKILL)  # no clean-up of its own: the system lets the lock go
    holder.wait(timeout=10)
    assert not is_locked(path)
    assert mine.try_acquire() and mine.held
    assert mine.holder_pid() == os.getpid()
    mine.release()
    assert not mine.held and not is_locked(path)


def test_another_process_is_refused_while_this_one_holds_the_lock(tmp_path, start_python):
    path = tmp_path / "project.lock"
    mine = FileLock(path)
    assert mine.try_acquire()
    other = _start_holder(start_python, path, seconds=0)
    assert other.stdout.readline().strip() == "refused"
    assert other.wait(timeout=10) == 0
    assert mine.holder_pid() == os.getpid()  # a refused try leaves the holder's pid in place
    mine.release()


def test_trying_again_for_a_while_gets_a_lock_let_go_meanwhile(tmp_path, start_python):
    path = tmp_path / "follower.lock"
    holder = _start_holder(start_python, path, seconds=0.3)
    assert holder.stdout.readline().strip() == "held"
    mine = FileLock(path)
    assert mine.try_acquire(tries=100, pause_s=0.05)
    mine.release()


def test_a_probe_never_takes_the_lock_from_its_holder(tmp_path):
    path = tmp_path / "follower.lock"
    assert not is_locked(path)  # no file: nobody holds it, and none is made
    assert not path.exists()
    mine = FileLock(path)
    assert mine.try_acquire()
    assert all(is_locked(path) for _ in range(20))
    assert mine.held
    mine.release()


def test_a_locked_block_waits_for_the_process_that_holds_the_lock(tmp_path, start_python):
    path = tmp_path / "devices.json.lock"
    holder = _start_holder(start_python, path, seconds=0.5)
    assert holder.stdout.readline().strip() == "held"
    began = time.monotonic()
    with locked(path) as lock:
        assert lock.held and holder.poll() is not None
    assert time.monotonic() - began >= 0.2
    assert not is_locked(path)
    wait_until(lambda: holder.poll() is not None)


def _start_holder(start_python, path, seconds: float = 60.0) -> subprocess.Popen:
    """A child that tries to take the lock at ``path``, says "held" or "refused", then keeps it
    for ``seconds``."""
    return start_python(HOLD, str(path), str(seconds), stdout=subprocess.PIPE, text=True)

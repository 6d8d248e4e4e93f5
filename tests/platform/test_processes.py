"""Process identity and liveness, on real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.waiting import wait_until
from workbench.platform.processes import (
    child_processes,
    command_line,
    descendant_processes,
    is_alive,
    is_same_process,
    process_group,
    process_start,
    signal_group,
    signal_name,
)

SLEEP = "import time; time.sleep(60)"


def test_a_running_process_is_alive_and_keeps_one_start(start_python):
    child = start_python(SLEEP)
    start = wait_until(lambda: process_start(child.pid))
    assert is_alive(child.pid)
    assert process_start(child.pid) == start
    assert is_same_process(child.pid, start)


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs /proc to compare with")
def test_the_start_is_the_one_proc_records_so_earlier_records_still_match():
    # /proc/<pid>/stat field 22: clock ticks after boot, what run folders have always stored.
    with open(f"/proc/{os.getpid()}/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    assert process_start(os.getpid()) == int(fields[19])


def test_a_process_that_exited_is_no_longer_alive_even_before_it_is_reaped(start_python):
    child = start_python("import sys; sys.stdin.read()", stdin=subprocess.PIPE)
    start = wait_until(lambda: process_start(child.pid))
    child.stdin.close()  # it ends; nobody reaps it yet, so it stays a zombie meanwhile
    wait_until(lambda: not is_alive(child.pid))
    assert not is_same_process(child.pid, start)
    child.wait()
    assert not is_alive(child.pid) and process_start(child.pid) is None


def test_a_pid_now_held_by_another_process_is_not_the_same_process(start_python):
    first = start_python(SLEEP)
    first_start = wait_until(lambda: process_start(first.pid))
    time.sleep(0.05)  # a start at least a few clock ticks later, as any reused pid's is
    second = start_python(SLEEP)
    second_start = wait_until(lambda: process_start(second.pid))
    assert second_start != first_start
    # What a reused pid looks like: the pid is alive, but the recorded start is another one's.
    assert not is_same_process(second.pid, first_start)
    assert is_same_process(second.pid, second_start)
    assert is_same_process(second.pid, None)  # nothing recorded: any living process will do


def test_no_pid_and_an_unknown_pid_are_not_alive():
    assert not is_alive(0) and not is_same_process(None, 1)
    assert process_start(-5) is None
    assert not is_alive(_unused_pid())


def test_children_descendants_and_command_line_of_a_real_process_tree(start_python):
    parent = start_python("import subprocess, sys, time; "
                          "child = subprocess.Popen([sys.executable, '-c', "
                          "'import subprocess, sys, time; subprocess.Popen([sys.executable, \"-c\", "
                          "\"import time; time.sleep(60)\"]); time.sleep(60)']); time.sleep(60)")
    descendants = wait_until(lambda: len(descendant_processes(parent.pid)) == 2 and descendant_processes(parent.pid))
    children = child_processes(parent.pid)
    assert len(children) == 1 and children[0] in descendants
    assert command_line(children[0])[0] == sys.executable
    assert "time.sleep(60)" in " ".join(command_line(parent.pid))
    parent.kill()
    parent.wait()
    for pid in descendants:
        os.kill(pid, signal.SIGKILL)
    assert child_processes(parent.pid) == [] and command_line(parent.pid) is None


def test_a_group_is_signalled_only_while_its_leader_is_the_recorded_process(start_python):
    leader = start_python(SLEEP, start_new_session=True)
    start = wait_until(lambda: process_start(leader.pid))
    assert process_group(leader.pid) == leader.pid
    assert not signal_group(leader.pid, start + 1, signal.SIGKILL)
    assert leader.poll() is None
    assert signal_group(leader.pid, start, signal.SIGKILL)
    assert leader.wait(timeout=10) == -signal.SIGKILL
    assert not signal_group(leader.pid, start, signal.SIGKILL)  # gone: nothing to signal


def test_signal_names():
    assert signal_name(signal.SIGTERM) == "SIGTERM" and signal_name(999) == "signal 999"


def _unused_pid() -> int:
    """A pid no process holds now (a child's, once it is reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid

"""Processes: whether one is alive, whether a pid is still the process it was, what runs under
it, and signalling a process group only while it is still ours. Read through ``psutil``, so it
holds wherever psutil does (Linux, macOS, Windows, the BSDs), not only where there is a /proc.

A pid is reused once its process is gone, so a pid alone never identifies a process: its start
time is kept with it, and a process is only the same one when both match. The start time is
counted in clock ticks after boot (hundredths of a second where there is no clock-tick rate),
the unit of ``/proc/<pid>/stat`` field 22, so a start recorded by an earlier Workbench still
matches. Ticks after boot, not psutil's seconds since the epoch: that is boot time plus ticks,
and the boot time the kernel reports moves by a second when the wall clock is adjusted, so two
processes may see one process start at two different times.
"""

from __future__ import annotations

import os
import signal

# The start time of a process whose start cannot be read (another user's process on some
# systems): it exists, but which process it is cannot be told.
UNKNOWN_START = 0


def _psutil():
    # Imported on first use: it brings subprocess and socket along, which a process that only
    # imports this module (a window starting up) may never need.
    import psutil

    return psutil


def _ticks_per_second() -> int:
    try:
        return os.sysconf("SC_CLK_TCK")
    except (AttributeError, ValueError, OSError):
        return 100


_TICKS_PER_SECOND = _ticks_per_second()


def process_start(pid: int) -> int | None:
    """The start time of the living process ``pid`` (clock ticks after boot); None when there is
    no such process or it has ended (a zombie); ``UNKNOWN_START`` (0) when it exists but its
    start cannot be read."""
    if not pid or pid < 0:
        return None
    psutil = _psutil()
    try:
        # psutil gives the start as the boot time (read afresh) plus the ticks after boot:
        # the boot time read just before takes it off again, exactly but for a clock step
        # in the microseconds between the two reads.
        booted = psutil.boot_time()
        process = psutil.Process(pid)
        started = process.create_time()
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
    except psutil.NoSuchProcess:
        return None
    except psutil.AccessDenied:
        return UNKNOWN_START
    return max(1, round((started - booted) * _TICKS_PER_SECOND))


def is_alive(pid: int) -> bool:
    """True while ``pid`` runs; a zombie counts as dead (its parent has yet to reap it)."""
    return process_start(pid) is not None


def is_same_process(pid: int | None, start: int | None) -> bool:
    """Whether ``pid`` is still the process that started at ``start`` (as ``process_start``
    gave it). An unknown start on either side (None or 0) matches any living process."""
    if not pid:
        return False
    now = process_start(pid)
    if now is None:
        return False
    return not start or now == UNKNOWN_START or now == start


def command_line(pid: int) -> list[str] | None:
    """The command line of the living process ``pid``; None when it is gone or cannot be read."""
    psutil = _psutil()
    try:
        return psutil.Process(pid).cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
        return None


def child_processes(pid: int) -> list[int]:
    """The living children of ``pid`` (none when it is gone)."""
    return sorted(child.pid for child in _children(pid, recursive=False))


def descendant_processes(pid: int) -> list[int]:
    """The living children of ``pid``, their children and so on (none when it is gone)."""
    return sorted(child.pid for child in _children(pid, recursive=True))


def _children(pid: int, recursive: bool) -> list:
    psutil = _psutil()
    try:
        children = psutil.Process(pid).children(recursive=recursive)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return []
    living = []
    for child in children:
        try:
            if child.status() != psutil.STATUS_ZOMBIE:
                living.append(child)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return living


def process_group(pid: int) -> int | None:
    """The process group of ``pid``; None when it is gone or the system has no process groups."""
    try:
        return os.getpgid(pid)
    except (AttributeError, ProcessLookupError, PermissionError):
        return None


def signal_group(pgid: int | None, leader_start: int | None, sig: int) -> bool:
    """Send ``sig`` to the process group ``pgid`` whose leader started at ``leader_start``.

    When the leader is alive it must be the same process. When it has ended, the group can only
    still exist with our processes in it (Linux does not give a pid to a new process while a
    group of that id exists), so the rest of the group is signalled. Returns whether anything
    was signalled; False where the system has no process groups.
    """
    if not pgid or pgid <= 1 or not hasattr(os, "killpg"):
        return False
    leader = process_start(pgid)
    if leader and leader_start and leader != leader_start:
        return False  # the id now belongs to someone else's process
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def signal_process(pid: int, sig: int) -> bool:
    """Send ``sig`` to ``pid``; whether it was sent (False when the process is gone or not ours)."""
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def signal_name(number: int) -> str:
    """``SIGTERM`` for 15, and so on; ``signal N`` for a number with no name here."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"

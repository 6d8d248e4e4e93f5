"""Processes of a run: who is alive, and signalling a process group only when it is still ours.

A pid is reused once its process is gone, so a pid alone never identifies a run's process: its
start time (``/proc/<pid>/stat`` field 22, clock ticks after boot) is stored with it, and a
process is only ours when both match.
"""

from __future__ import annotations

import os
import signal


def process_start(pid: int) -> int | None:
    """The start time of a living process ``pid`` (clock ticks after boot); None when there is
    no such process or it has ended (a zombie). 0 where /proc does not exist and the process
    does (the start time is then unknown)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except FileNotFoundError:
        return None
    except OSError:
        return _exists(pid)
    # The command name (field 2) is in parentheses and may hold spaces and ')': split after
    # the last ')'. Then state is field 3 and starttime field 22.
    fields = stat[stat.rfind(b")") + 2:].split()
    if not fields or fields[0] in (b"Z", b"X"):
        return None
    return int(fields[19])


def _exists(pid: int) -> int | None:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return 0
    return 0


def is_same_process(pid: int | None, start: int | None) -> bool:
    """Whether ``pid`` is still the process that started at ``start``."""
    if not pid:
        return False
    now = process_start(pid)
    if now is None:
        return False
    return start is None or now == 0 or start == 0 or now == start


def signal_group(pgid: int | None, leader_start: int | None, sig: int) -> bool:
    """Send ``sig`` to the process group ``pgid`` whose leader started at ``leader_start``.

    When the leader is alive it must be the same process. When it has ended, the group can only
    still exist with our processes in it (Linux does not give a pid to a new process while a
    group of that id exists), so the rest of the group is signalled. Returns whether anything
    was signalled.
    """
    if not pgid or pgid <= 1:
        return False
    leader = process_start(pgid)
    if leader is not None and leader_start is not None and leader and leader_start and leader != leader_start:
        return False  # the id now belongs to someone else's process
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    return True


def stop_run(pgid: int | None, leader_start: int | None, nproc: int = 1) -> bool:
    """Ask a run to checkpoint and exit: SIGTERM to its process group, or, for a torchrun run
    (``nproc`` > 1), to the workers only.

    torchrun starts each worker in a session of its own and turns a SIGTERM of its own into an
    exception with a traceback and status 1, though its workers stop cleanly. Signalled
    directly, the workers exit 0 and torchrun, seeing them done, ends with 0 too. Before
    torchrun has started its workers, the group is signalled. Returns whether anything was.
    """
    if nproc > 1 and pgid and pgid > 1 and is_same_process(pgid, leader_start):
        signalled = False
        for worker in child_processes(pgid):
            try:
                os.kill(worker, signal.SIGTERM)
                signalled = True
            except (ProcessLookupError, PermissionError):
                pass
        if signalled:
            return True
    return signal_group(pgid, leader_start, signal.SIGTERM)


def kill_run(pgid: int | None, leader_start: int | None) -> bool:
    """SIGKILL the run's process group and the groups its processes started (torchrun's
    workers each lead one). Returns whether anything was signalled."""
    groups: list[int] = []
    if pgid and pgid > 1 and is_same_process(pgid, leader_start):
        table = _process_table()
        for pid in _descendants(pgid, table):
            group = table[pid][1]
            if group not in (pgid, *groups) and group > 1:
                groups.append(group)
    killed = signal_group(pgid, leader_start, signal.SIGKILL)
    for group in groups:
        try:
            os.killpg(group, signal.SIGKILL)
            killed = True
        except (ProcessLookupError, PermissionError):
            pass
    return killed


def child_processes(pid: int) -> list[int]:
    """The living children of ``pid`` (from /proc; none where there is no /proc)."""
    return sorted(child for child, (parent, _group) in _process_table().items() if parent == pid)


def _descendants(pid: int, table: dict[int, tuple[int, int]]) -> list[int]:
    children: dict[int, list[int]] = {}
    for child, (parent, _group) in table.items():
        children.setdefault(parent, []).append(child)
    found, pending = [], list(children.get(pid, []))
    while pending:
        current = pending.pop()
        found.append(current)
        pending.extend(children.get(current, []))
    return found


def _process_table() -> dict[int, tuple[int, int]]:
    """``{pid: (parent pid, process group)}`` of every living process."""
    table = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue  # ended meanwhile
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) < 3 or fields[0] in (b"Z", b"X"):
            continue
        table[int(name)] = (int(fields[1]), int(fields[2]))
    return table


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"

"""Stopping and killing a run's processes, only while they are still the run's.

A run's processes are known by their process group and its leader's start time
(``workbench.platform.processes``): a pid is reused once its process is gone, so a group is only
signalled while its leader is still the process that started the run.
"""

from __future__ import annotations

import signal

from workbench.platform.processes import (
    child_processes,
    descendant_processes,
    is_same_process,
    process_group,
    signal_group,
    signal_process,
)


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
            signalled = signal_process(worker, signal.SIGTERM) or signalled
        if signalled:
            return True
    return signal_group(pgid, leader_start, signal.SIGTERM)


def kill_run(pgid: int | None, leader_start: int | None) -> bool:
    """SIGKILL the run's process group and the groups its processes started (torchrun's
    workers each lead one). Returns whether anything was signalled."""
    groups: list[int] = []
    if pgid and pgid > 1 and is_same_process(pgid, leader_start):
        for pid in descendant_processes(pgid):
            group = process_group(pid)
            if group is not None and group not in (pgid, *groups) and group > 1:
                groups.append(group)
    killed = signal_group(pgid, leader_start, signal.SIGKILL)
    for group in groups:
        killed = signal_group(group, None, signal.SIGKILL) or killed
    return killed

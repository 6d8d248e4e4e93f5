"""File locks that the operating system lets go when their process dies, however it dies: a
lock held for a process's whole life (the hub, a project's window, a run's follower) needs no
clean-up after a crash, and the lock file left behind is never taken for a held lock.

``flock`` on POSIX; on Windows ``msvcrt.locking`` on one byte far past the file's end (so the
pid written at its start stays readable), which is also released when the process ends (there
is no shared lock there: a probe takes the lock for an instant instead). The holder's pid is
written into the file, so a message can name it.

Not the ``filelock`` package: its locks are per-thread re-entrant objects that open the file
truncated (wiping the holder's pid that another process is about to read) and have no shared
lock, so a probe would take the lock a follower is about to take.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Iterator

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None
    import msvcrt

_POLL_S = 0.05
_WINDOWS_LOCKED_BYTE = 1 << 30


class FileLock:
    """An exclusive lock on the file at ``path`` (created when missing, with ``mode``), held
    from a successful ``try_acquire`` or ``acquire`` until ``release`` or this process's end."""

    def __init__(self, path: Path | str, mode: int = 0o600):
        self.path = Path(path)
        self.mode = mode
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock now."""
        return self._fd is not None

    def try_acquire(self, tries: int = 1, pause_s: float = _POLL_S) -> bool:
        """Take the lock without waiting; with ``tries`` > 1, try again that many times,
        ``pause_s`` apart, before giving up. Records this process's pid in the file. Whether
        the lock is held now."""
        if self._fd is not None:
            return True
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), self.mode)
        tries = max(1, tries)
        for attempt in range(tries):
            if _lock(fd, exclusive=True, wait=False):
                break
            if attempt == tries - 1:
                os.close(fd)
                return False
            time.sleep(pause_s)
        self._fd = fd
        _record_holder(fd)
        return True

    def acquire(self) -> None:
        """Take the lock, waiting for as long as another process holds it."""
        if self._fd is not None:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), self.mode)
        try:
            _lock(fd, exclusive=True, wait=True)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        _record_holder(fd)

    def release(self) -> None:
        """Let the lock go (closing the file does; a lock never taken is no error)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def holder_pid(self) -> int | None:
        """The pid the last holder wrote into the file (it may have ended since)."""
        try:
            return int(self.path.read_text().strip() or 0) or None
        except (OSError, ValueError):
            return None


@contextlib.contextmanager
def locked(path: Path | str, mode: int = 0o600) -> Iterator[FileLock]:
    """Hold the lock on ``path`` for the block, waiting for other processes to let it go."""
    lock = FileLock(path, mode)
    lock.acquire()
    try:
        yield lock
    finally:
        lock.release()


def is_locked(path: Path | str) -> bool:
    """Whether some process holds the lock on ``path`` now (False when there is no such file).

    On POSIX the probe takes a shared lock for an instant, so it never stops a holder's
    exclusive lock for longer than that; holders that may meet a probe try more than once."""
    try:
        fd = os.open(path, (os.O_RDONLY if fcntl else os.O_RDWR) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return False
    try:
        return not _lock(fd, exclusive=False, wait=False)
    finally:
        os.close(fd)


def _lock(fd: int, exclusive: bool, wait: bool) -> bool:
    """Lock the open file ``fd``; False when ``wait`` is off and another process holds it."""
    if fcntl is not None:
        operation = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | (0 if wait else fcntl.LOCK_NB)
        try:
            fcntl.flock(fd, operation)
        except (BlockingIOError, PermissionError):
            return False
        return True
    while True:
        os.lseek(fd, _WINDOWS_LOCKED_BYTE, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            if not wait:
                return False
            time.sleep(_POLL_S)


def _record_holder(fd: int) -> None:
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, f"{os.getpid()}\n".encode())

"""Where the hub listens: one folder per user holding the socket and the hub's lock file.

The lock (a file lock held for the hub's whole life) decides which process is the hub, so two
``workbench`` calls at the same moment end with exactly one, and a socket file left by a hub that
died is known to be stale because nobody holds the lock.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from workbench.platform.locks import FileLock

from .errors import IpcError

SOCKET_NAME = "hub.sock"
LOCK_NAME = "hub.lock"
LOG_NAME = "hub.log"


def runtime_dir() -> Path:
    """The per-user folder of sockets and locks, created private (0700) if missing."""
    override = os.environ.get("WORKBENCH_RUNTIME_DIR")
    if override:
        folder = Path(override)
    elif os.environ.get("XDG_RUNTIME_DIR"):
        folder = Path(os.environ["XDG_RUNTIME_DIR"]) / "workbench"
    else:
        folder = Path(os.environ.get("TMPDIR") or "/tmp") / f"workbench-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.stat()
    except OSError as exc:
        raise IpcError(
            f"Cannot use {folder} for Workbench's socket: {exc.strerror}. "
            "Set WORKBENCH_RUNTIME_DIR to a folder you own."
        ) from None
    if not stat.S_ISDIR(info.st_mode):
        raise IpcError(f"{folder} is not a folder. Remove it or set WORKBENCH_RUNTIME_DIR.")
    if info.st_uid != os.getuid():
        raise IpcError(
            f"{folder} belongs to another user, so its socket cannot be trusted. "
            "Set WORKBENCH_RUNTIME_DIR to a folder you own."
        )
    if info.st_mode & 0o077:
        os.chmod(folder, 0o700)
    return folder


def socket_path() -> Path:
    return runtime_dir() / SOCKET_NAME


def hub_log_path() -> Path:
    return runtime_dir() / LOG_NAME


def hub_lock() -> FileLock:
    """Held by the hub for its whole life: whoever takes it is the hub."""
    return FileLock(runtime_dir() / LOCK_NAME)


def project_lock(project_key: str) -> FileLock:
    """Held by the window that has the project open: one window per project, hub or no hub."""
    folder = runtime_dir() / "projects"
    folder.mkdir(mode=0o700, exist_ok=True)
    return FileLock(folder / f"{project_key}.lock")

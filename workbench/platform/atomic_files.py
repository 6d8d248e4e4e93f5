"""Writes that are never seen half-done: a temporary file beside the target, fsync, rename, and
an fsync of the folder so the rename itself survives a power cut.

``device_sdk`` and ``workbench_trainkit`` keep copies of their own: they are installed without
Workbench.
"""

from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path | str, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` so a reader sees either the old or the new file, never a mix.

    The file keeps its permission bits when it existed; a new one gets ``mode`` (or 0o644).
    """
    path = Path(path)
    try:
        keep_mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        keep_mode = 0o644 if mode is None else mode
    # Not tempfile.mkstemp: importing tempfile costs more than a window's whole start-up budget
    # for this; O_EXCL with a random name gives the same guarantee.
    tmp_name = str(path.parent / f".{path.name}.{os.urandom(6).hex()}.tmp")
    fd = os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
                 | getattr(os, "O_BINARY", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as tmp:
            tmp.write(data)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.chmod(tmp_name, keep_mode)
        os.replace(tmp_name, path)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
    sync_folder(path.parent)


def write_text_atomically(path: Path | str, text: str, encoding: str = "utf-8",
                          errors: str = "strict") -> None:
    """``write_atomically`` for text, encoded with ``encoding`` and ``errors`` (line endings
    are written as they are in ``text``)."""
    write_atomically(path, text.encode(encoding, errors))


def move_into_place(written: Path | str, target: Path | str) -> None:
    """Make the finished file ``written`` (in ``target``'s folder) become ``target``: its data
    reaches the disk before the rename, and the rename before this returns."""
    with open(written, "rb+") as handle:
        os.fsync(handle.fileno())
    os.replace(written, target)
    sync_folder(Path(target).parent)


def sync_folder(folder: Path | str) -> None:
    """Make the names last changed in ``folder`` (a rename into it) reach the disk. Nothing
    where folders cannot be opened (Windows: a rename is durable there once it returns)."""
    try:
        dir_fd = os.open(folder, os.O_RDONLY)
    except (PermissionError, IsADirectoryError):
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass  # some file systems cannot sync a folder; the rename still happened
    finally:
        os.close(dir_fd)

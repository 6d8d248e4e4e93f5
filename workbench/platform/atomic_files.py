"""Writes that are never seen half-done: a temporary file beside the target, fsync, rename."""

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
    fd = os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
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
    # The rename itself must reach the disk too, or a power cut can bring the old file back.
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_text_atomically(path: Path | str, text: str, encoding: str = "utf-8") -> None:
    write_atomically(path, text.encode(encoding))

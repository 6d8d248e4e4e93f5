"""Writes that are never seen half-done: a temporary file beside the target, fsync, rename."""

from __future__ import annotations

import os
import tempfile
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
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
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

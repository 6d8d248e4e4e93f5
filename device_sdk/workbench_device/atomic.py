"""Files replaced whole: written to a temporary file beside the target, then renamed over it, so
a reader (or an agent restarted after a crash) sees the old file or the new one, never a mix."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable, Optional


def replace_file(path: Path, write: Callable[[BinaryIO], None], prefix: Optional[str] = None,
                 mode: Optional[int] = None, durable: bool = False) -> None:
    """Make ``path`` hold what ``write(file)`` writes; the temporary file is named ``prefix``…
    (default: the target's name), gets ``mode`` when given, and is fsynced first when
    ``durable``. Whatever fails leaves ``path`` as it was and no temporary file behind."""
    fd, tmp = tempfile.mkstemp(prefix=prefix or path.name + ".", suffix=".tmp",
                               dir=str(path.parent))
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb", buffering=0) as out:
            write(out)
            if durable:
                os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise

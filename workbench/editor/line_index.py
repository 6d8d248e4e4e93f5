"""Where each line of a huge file starts, found without reading the file into Python strings.

NumPy scans a memory map for newline bytes in chunks, reporting progress after each chunk so a
viewer can show the first lines long before the last ones are found.
"""

from __future__ import annotations

import mmap
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    import numpy as np

# Files above this size open in the read-only large-file view instead of the editor.
LARGE_FILE_BYTES = 16 * 1024 * 1024

CHUNK_BYTES = 8 * 1024 * 1024


def find_line_starts(
    data: mmap.mmap | bytes,
    on_chunk: Callable[[np.ndarray, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    chunk_bytes: int = CHUNK_BYTES,
) -> np.ndarray | None:
    """Byte offsets (int64) at which each line of ``data`` starts; the first is always 0.

    ``on_chunk(new_starts, bytes_scanned)`` is called after each chunk with the starts found in
    it. Returns None when ``cancelled()`` turns true. A final line ending adds no empty line.
    """
    # Leave this import here: numpy costs a tenth of a second, and only huge files need it.
    import numpy as np

    size = len(data)
    parts = [np.zeros(1, dtype=np.int64)]
    if on_chunk is not None:
        on_chunk(parts[0], 0)
    for offset in range(0, size, chunk_bytes):
        if cancelled is not None and cancelled():
            return None
        count = min(chunk_bytes, size - offset)
        view = np.frombuffer(data, dtype=np.uint8, count=count, offset=offset)
        starts = np.flatnonzero(view == 10).astype(np.int64) + (offset + 1)
        del view  # a live view would keep the mmap from being closed
        if offset + count == size and len(starts) and starts[-1] == size:
            starts = starts[:-1]
        parts.append(starts)
        if on_chunk is not None:
            on_chunk(starts, offset + count)
    return np.concatenate(parts)


def line_bytes(data: mmap.mmap | bytes, starts: np.ndarray, line: int, size: int) -> bytes:
    """The bytes of 0-based ``line`` without its line ending."""
    begin = int(starts[line])
    end = int(starts[line + 1]) if line + 1 < len(starts) else size
    raw = data[begin:end]
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    return raw

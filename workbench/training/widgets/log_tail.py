"""Reads what was appended to a growing log file since the last read, never the whole file again.

Qt-free; the runs panel calls it from its worker thread.
"""

from __future__ import annotations

import codecs
import os
import time
from pathlib import Path

# A log opened mid-run shows its end: at most this much of what was written before.
FIRST_READ_BYTES = 256 * 1024
# A line still without its newline is shown after this long (a prompt, a progress bar).
PARTIAL_LINE_SECONDS = 1.0
CHUNK_BYTES = 1024 * 1024


class LogTail:
    """The new complete lines of one log file at each ``read_new()``."""

    def __init__(self, path: str | Path, first_read_bytes: int = FIRST_READ_BYTES):
        self.path = Path(path)
        self.first_read_bytes = first_read_bytes
        self._offset: int | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self._pending_since = 0.0
        self._drop_first_line = False
        self.skipped = False
        """True when the first read left out the start of a long log."""

    def read_new(self, now: float | None = None) -> str:
        """Text appended since the last call, whole lines only ("" when nothing new). Carriage
        returns keep only what a terminal would show last on that line."""
        now = time.monotonic() if now is None else now
        complete = ""
        data = self._read_bytes()
        if data:
            text = self._pending + self._decoder.decode(data)
            cut = text.rfind("\n") + 1
            complete, rest = text[:cut], text[cut:]
            if rest != self._pending:
                self._pending_since = now
            self._pending = rest
        if self._pending and now - self._pending_since >= PARTIAL_LINE_SECONDS:
            complete += self._pending + "\n"
            self._pending = ""
        return _as_terminal_shows(complete)

    def _read_bytes(self) -> bytes:
        try:
            size = os.stat(self.path).st_size
        except OSError:
            return b""  # not created yet
        if self._offset is None or size < self._offset:  # first read, or the file was truncated
            self._offset = 0
            self._decoder.reset()
            self._pending = ""
            self._drop_first_line = False
            if size > self.first_read_bytes:
                self._offset = size - self.first_read_bytes
                self.skipped = self._drop_first_line = True
        if size == self._offset:
            return b""
        with open(self.path, "rb") as handle:
            handle.seek(self._offset)
            data = handle.read(min(size - self._offset, CHUNK_BYTES))
        self._offset += len(data)
        if self._drop_first_line:
            # Started in the middle of the file: the first line is only a piece of one.
            newline = data.find(b"\n")
            if newline < 0:
                return b""
            self._drop_first_line = False
            data = data[newline + 1:]
        return data


def _as_terminal_shows(text: str) -> str:
    if "\r" not in text:
        return text
    lines = []
    for line in text.split("\n"):
        line = line.rstrip("\r")
        lines.append(line.rsplit("\r", 1)[-1])
    return "\n".join(lines)

"""Reads what was appended to a growing log file since the last read, never the whole file again;
``RunLogTail`` does it for a run's stdout and stderr together, in the order they arrived.

Qt-free; the runs panel calls it from its worker thread.
"""

from __future__ import annotations

import codecs
import os
import time
from pathlib import Path

from workbench.training.log_order import ORDER_FILE, STREAMS, log_path, read_order

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

    def read_new(self, now: float | None = None, limit: int | None = None) -> str:
        """Text appended since the last call, whole lines only ("" when nothing new); with
        ``limit``, only what comes before that byte of the file. Carriage returns keep only what
        a terminal would show last on that line."""
        now = time.monotonic() if now is None else now
        complete = ""
        data = self._read_bytes(limit)
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

    def _read_bytes(self, limit: int | None = None) -> bytes:
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
        end = size if limit is None else min(size, limit)
        if end <= self._offset:
            return b""
        with open(self.path, "rb") as handle:
            handle.seek(self._offset)
            # Up to a limit it is all read, so that nothing of it comes after what follows it.
            data = handle.read(end - self._offset if limit is not None else min(end - self._offset, CHUNK_BYTES))
        self._offset += len(data)
        if self._drop_first_line:
            # Started in the middle of the file: the first line is only a piece of one.
            newline = data.find(b"\n")
            if newline < 0:
                return b""
            self._drop_first_line = False
            data = data[newline + 1:]
        return data


class RunLogTail:
    """The new lines of a run's ``stdout.log`` and ``stderr.log`` at each ``read_new()``, as
    ``(stream, text)`` pieces in the order they arrived (see workbench.training.log_order);
    without a record of that order, stdout's, then stderr's."""

    def __init__(self, run_dir: str | Path, first_read_bytes: int = FIRST_READ_BYTES):
        self.run_dir = Path(run_dir)
        self.tails = {stream: LogTail(log_path(self.run_dir, stream), first_read_bytes) for stream in STREAMS}
        self._order_offset = 0

    def read_new(self, now: float | None = None) -> list[tuple[str, str]]:
        now = time.monotonic() if now is None else now
        entries, self._order_offset = read_order(self.run_dir / ORDER_FILE, self._order_offset)
        pieces: list[tuple[str, str]] = []
        for stream, end in [*entries, *((stream, None) for stream in STREAMS)]:
            text = self.tails[stream].read_new(now, limit=end)
            if not text:
                continue
            if pieces and pieces[-1][0] == stream:
                pieces[-1] = (stream, pieces[-1][1] + text)
            else:
                pieces.append((stream, text))
        return pieces


def _as_terminal_shows(text: str) -> str:
    if "\r" not in text:
        return text
    lines = []
    for line in text.split("\n"):
        line = line.rstrip("\r")
        lines.append(line.rsplit("\r", 1)[-1])
    return "\n".join(lines)

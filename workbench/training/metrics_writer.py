"""The one writer of a run's ``metrics.jsonl`` in its supervisor, for every source it reads.

The supervisor turns two sources into records: the metric lines the trainer prints (unless the
trainer writes metrics.jsonl itself) and the TensorBoard event files it writes (always: a
trainer that writes its own records may log to TensorBoard too). Both go through this writer:

- each record is one ``write`` of one whole line to the file opened for appending, so the
  lines of the two sources, and those of a trainer writing the same file, never mix (appends
  to a local file are placed and written whole, one after the other);
- a metric name belongs to the first source that gives it, and is dropped from the records of
  the others, so a loss both printed and logged to TensorBoard is drawn once, not as two
  interleaved curves;
- it tells whether someone else (the trainer) writes the file: it was created, or has grown,
  by more than this writer wrote.
"""

from __future__ import annotations

import os
import threading

from workbench.training.metrics import POSITION_NAMES, format_record
from workbench.training.run_folder import RunFolder


class RunMetricsWriter:
    """Appends records to ``folder``'s metrics.jsonl from any thread."""

    def __init__(self, folder: RunFolder):
        self.path = folder.metrics
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._written = 0
        try:
            self._size_at_start: int | None = os.stat(self.path).st_size
        except FileNotFoundError:
            self._size_at_start = None
        self._owner: dict[str, str] = {}   # metric name -> the source that gave it first
        self._created_by_other = False

    def write(self, source: str, record: dict) -> bool:
        """Append ``record`` from ``source`` ("stdout", "tensorboard"), without the metrics
        another source gave first; False when nothing was left to write."""
        with self._lock:
            kept = {}
            for name, value in record.items():
                if name not in POSITION_NAMES:
                    if self._owner.setdefault(name, source) != source:
                        continue
                kept[name] = value
            if all(name in POSITION_NAMES for name in kept):
                return False
            if self._fd is None:
                self._open()
            line = format_record(kept).encode("utf-8")
            # One write of the whole line: a local file's appends never interleave.
            self._written += os.write(self._fd, line)
            return True

    def written_by_others(self) -> bool:
        """Whether someone besides this writer (the trainer) created or added to the file."""
        with self._lock:
            try:
                size = os.stat(self.path).st_size
            except FileNotFoundError:
                return False
            if self._size_at_start is None:
                # Not there at the start: created by the trainer unless this writer made it.
                return self._fd is None or self._created_by_other or size > self._written
            return size > self._size_at_start + self._written

    def _open(self) -> None:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC
        try:
            self._fd = os.open(self.path, flags | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            self._fd = os.open(self.path, flags)
            self._created_by_other = self._size_at_start is None

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

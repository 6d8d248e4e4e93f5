"""The order in which a run's stdout and stderr arrived, for the logs and log views that show both.

A run's two streams are two files, ``stdout.log`` and ``stderr.log``. Where Workbench itself
appends to them (a cluster run's follower copies what the job wrote, a poll at a time), it notes
in ``log-order`` when it turns from one stream to the other: before bytes are appended to one
stream, every byte of the other stream not noted yet is noted, as a line ``"<stream> <size>"``.
So each line says: that stream up to that size came before whatever the other stream got next.

Reading the files in that order (``arrival_segments``) shows each note of the run where it came
(a stop's note before the output of the resume that followed it), not after all of stdout.
Without the file (a local run, whose trainer writes both files itself) the order is stdout, then
stderr, as before.
"""

from __future__ import annotations

import os
from pathlib import Path

ORDER_FILE = "log-order"
STREAMS = ("stdout", "stderr")


def log_path(run_dir: Path | str, stream: str) -> Path:
    return Path(run_dir) / f"{stream}.log"


class ArrivalRecorder:
    """Keeps ``log-order`` of the run folder at ``run_dir``: call ``before_append(stream)``
    before appending to one of its logs."""

    def __init__(self, run_dir: Path | str):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / ORDER_FILE
        self._noted = dict.fromkeys(STREAMS, 0)
        for stream, end in read_order(self.path)[0]:
            self._noted[stream] = max(self._noted[stream], end)

    def before_append(self, stream: str) -> None:
        other = STREAMS[1 - STREAMS.index(stream)]
        size = _size(log_path(self.run_dir, other))
        if size > self._noted[other]:
            with open(self.path, "a", encoding="utf-8") as out:
                out.write(f"{other} {size}\n")
            self._noted[other] = size


def read_order(path: Path | str, offset: int = 0) -> tuple[list[tuple[str, int]], int]:
    """The ``(stream, end)`` lines of a ``log-order`` file from byte ``offset`` on (whole lines
    only), and the offset after them."""
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except OSError:
        return [], offset
    whole = data[:data.rfind(b"\n") + 1]
    entries = []
    for line in whole.decode("utf-8", errors="replace").splitlines():
        stream, _, end = line.strip().partition(" ")
        if stream in STREAMS and end.isdigit():
            entries.append((stream, int(end)))
    return entries, offset + len(whole)


class ArrivalReader:
    """The byte ranges of a run's logs from ``offsets`` (default: their starts) on, in the order
    they arrived, a part at each ``segments()`` call (``log-order`` is read on from where the last
    call left it)."""

    def __init__(self, run_dir: Path | str, offsets: dict[str, int] | None = None):
        self.run_dir = Path(run_dir)
        self.position = {stream: int((offsets or {}).get(stream, 0)) for stream in STREAMS}
        self._order_offset = 0

    def segments(self, sizes: dict[str, int] | None = None) -> list[tuple[str, int, int]]:
        """``(stream, start, end)`` from where the last call ended to ``sizes`` (default: the
        logs' sizes now)."""
        entries, self._order_offset = read_order(self.run_dir / ORDER_FILE, self._order_offset)
        if sizes is None:
            sizes = {stream: _size(log_path(self.run_dir, stream)) for stream in STREAMS}
        segments = []
        for stream, end in [*entries, *((stream, sizes[stream]) for stream in STREAMS)]:
            end = min(end, sizes[stream])
            if end > self.position[stream]:
                segments.append((stream, self.position[stream], end))
                self.position[stream] = end
        return segments


def arrival_segments(run_dir: Path | str, offsets: dict[str, int] | None = None,
                     sizes: dict[str, int] | None = None) -> list[tuple[str, int, int]]:
    """``(stream, start, end)`` byte ranges of the run's logs from ``offsets`` (default: their
    starts) to ``sizes`` (default: their sizes now), in the order they arrived."""
    return ArrivalReader(run_dir, offsets).segments(sizes)


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0

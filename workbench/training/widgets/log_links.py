"""The places a log names (Python traceback lines), which the log view turns into links.

Qt-free: the view asks which link, if any, sits under a column of a line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# 'File "/path/to/train.py", line 42, in main' as Python prints each frame of a traceback.
TRACEBACK_FRAME = re.compile(r'File "(?P<path>[^"<>]+)", line (?P<line>\d+)')


@dataclass(frozen=True)
class LogLink:
    """A file and 1-based line a log line points at, and the columns [start, end) it spans."""

    path: str
    line: int
    start: int
    end: int


def find_links(text: str) -> list[LogLink]:
    """Every traceback frame location in one line of a log (``<frozen ...>`` and ``<string>``
    frames are not files, so they are not links)."""
    return [LogLink(m.group("path"), int(m.group("line")), m.start(), m.end())
            for m in TRACEBACK_FRAME.finditer(text)]


def link_at(text: str, column: int) -> LogLink | None:
    """The link under 0-based ``column`` of the line ``text``, if any."""
    for link in find_links(text):
        if link.start <= column < link.end:
            return link
    return None

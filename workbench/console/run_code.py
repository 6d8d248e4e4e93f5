"""What the editor's Run commands send to the console: a file with ``%run`` semantics, the
selection or the current line, and the ``# %%`` cell around the cursor (as Spyder and VS Code
mark cells). Plain text in, plain text out; lines are 1-based like the editor's cursor.
"""

from __future__ import annotations

import os
import re
import shlex
import textwrap
from dataclasses import dataclass
from pathlib import Path

# "# %%", "#%%" and "# %% title" start a cell, as in Spyder, VS Code and Jupytext's percent format.
CELL_MARKER = re.compile(r"^\s*#\s*%%")


@dataclass(frozen=True)
class Cell:
    """Lines ``first``..``last`` (1-based, inclusive) of a file, marker line included."""

    first: int
    last: int
    code: str
    title: str


def run_file_code(path: Path) -> str:
    """The console input that runs ``path`` as ``%run`` does: as ``__main__``, in its own
    namespace whose variables are then copied into the console's."""
    text = str(path)
    quoted = f'"{text}"' if os.name == "nt" else shlex.quote(text)
    return f"%run {quoted}"


def code_of_selection(selected: str) -> str:
    """The selected text, made runnable: lines taken from inside a block are dedented, and
    trailing blank lines dropped (they would end the input early)."""
    return textwrap.dedent(selected.replace("\u2029", "\n")).strip("\n").rstrip()


def is_cell_marker(line: str) -> bool:
    return bool(CELL_MARKER.match(line))


def cell_at(text: str, line: int) -> Cell:
    """The cell holding ``line``: from the marker at or above it (or the file's start) to the
    line before the next marker (or the file's end). A file without markers is one cell."""
    lines = text.split("\n")
    index = min(max(line, 1), len(lines)) - 1
    first = index
    while first > 0 and not is_cell_marker(lines[first]):
        first -= 1
    last = index + 1
    while last < len(lines) and not is_cell_marker(lines[last]):
        last += 1
    body = lines[first:last]
    title = ""
    if body and is_cell_marker(body[0]):
        title = CELL_MARKER.sub("", body[0]).strip()
    code = "\n".join(body).rstrip()
    return Cell(first=first + 1, last=last, code=textwrap.dedent(code), title=title)


def line_after_cell(text: str, cell: Cell) -> int:
    """Where "run cell and advance" puts the cursor: the first line of the next cell, or the
    last line of the file when this cell is the last."""
    line_count = text.count("\n") + 1
    return min(cell.last + 1, line_count)

"""The rows a diff view shows, built from a ``FileDiff`` in one pass and without Qt, and
``load_diff``, which reads a file's diff and builds them (in a worker thread).

Side by side, both panes have the same rows: a header row per hunk, then context lines on both
sides, and each block of removed lines paired with the added lines that follow it; where one side
has more lines the other gets filler rows, so the rows stay aligned. Inline, one pane shows the
hunk lines in diff order.

Each pane's text is built once (rows joined by newlines) for a single ``setPlainText``; the
lists beside it say, per row, what kind of row it is, its line numbers, the diff line shown
(for the intra-line marks) and which diff lines a selection of the row stands for.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.git.diff import (COMMITS, DiffLine, FileDiff, change_blocks, diff_commits, diff_file,
                                 empty_tree)
from workbench.git.repository import Repository
from workbench.tasks import CancelToken

HEADER, CONTEXT, REMOVED, ADDED, FILLER = "h", " ", "-", "+", "f"
SIDE_BY_SIDE, INLINE = "side-by-side", "inline"
MODES = (SIDE_BY_SIDE, INLINE)

# Characters Qt's text document would take for a line or block break, which would shift the rows.
# A trailing "\r" of a CRLF file is dropped; the others become spaces so offsets stay put.
_DISPLAY = str.maketrans({"\r": None, "\u2028": " ", "\u2029": " ", "\ufdd0": " ", "\ufdd1": " ",
                          "\x0b": " ", "\x0c": " "})


@dataclass(slots=True)
class RowMap:
    """Where the hunks and diff lines are among the rows (shared by both side-by-side panes)."""

    hunks: list[int] = field(default_factory=list)
    """The hunk index of each row."""
    old_lines: list[int] = field(default_factory=list)
    """The index (in its hunk's ``lines``) of the row's old-side or context line; -1 for none."""
    new_lines: list[int] = field(default_factory=list)
    """The index of the row's added line, or of its context line; -1 for none."""
    header_rows: list[int] = field(default_factory=list)
    """The header row of each hunk."""
    change_rows: list[int] = field(default_factory=list)
    """The first row of each block of changed rows, in order."""

    def __len__(self) -> int:
        return len(self.hunks)

    def hunk_at(self, row: int) -> int:
        """The hunk that ``row`` belongs to (-1 when there are no rows)."""
        if not self.hunks:
            return -1
        return self.hunks[max(0, min(row, len(self.hunks) - 1))]

    def lines_of_rows(self, first: int, last: int) -> list[tuple[int, int]]:
        """The ``(hunk, line)`` pairs shown in rows ``first`` to ``last`` (inclusive)."""
        chosen: list[tuple[int, int]] = []
        for row in range(max(0, first), min(last, len(self.hunks) - 1) + 1):
            hunk, old, new = self.hunks[row], self.old_lines[row], self.new_lines[row]
            if old >= 0:
                chosen.append((hunk, old))
            if new >= 0 and new != old:
                chosen.append((hunk, new))
        return chosen

    def row_of_line(self, hunk_index: int, line_index: int) -> int:
        """The row showing line ``line_index`` of hunk ``hunk_index`` (-1 when it is not shown)."""
        if not 0 <= hunk_index < len(self.header_rows):
            return -1
        end = self.header_rows[hunk_index + 1] if hunk_index + 1 < len(self.header_rows) else len(self.hunks)
        for row in range(self.header_rows[hunk_index] + 1, end):
            if self.old_lines[row] == line_index or self.new_lines[row] == line_index:
                return row
        return -1


@dataclass(slots=True)
class PaneRows:
    """One pane's rows: the whole text, and per row its kind, numbers and diff line."""

    text: str
    kinds: list[str]
    old_numbers: list[int | None]
    new_numbers: list[int | None]
    lines: list[DiffLine | None]
    rows: RowMap

    def __len__(self) -> int:
        return len(self.kinds)


def side_by_side_rows(diff: FileDiff) -> tuple[PaneRows, PaneRows]:
    """The old (left) and new (right) panes, row for row aligned."""
    row_map = RowMap()
    left, right = _Builder(row_map), _Builder(row_map)
    for hunk_index, hunk in enumerate(diff.hunks):
        row_map.header_rows.append(len(row_map.hunks))
        row_map.hunks.append(hunk_index)
        row_map.old_lines.append(-1)
        row_map.new_lines.append(-1)
        left.header(hunk.header)
        right.header(hunk.header)
        lines = hunk.lines
        context_from = 0
        for start, middle, end in change_blocks(lines):
            _context_rows(row_map, hunk_index, lines, context_from, start, left, right)
            context_from = end
            # A block of removed lines and the added lines after it, paired row by row.
            row_map.change_rows.append(len(row_map.hunks))
            removed, added = middle - start, end - middle
            for k in range(max(removed, added)):
                old = start + k if k < removed else -1
                new = middle + k if k < added else -1
                _map_row(row_map, hunk_index, old, new)
                if old >= 0:
                    left.line(REMOVED, lines[old].text, lines[old].old_no, None, lines[old])
                else:
                    left.filler()
                if new >= 0:
                    right.line(ADDED, lines[new].text, None, lines[new].new_no, lines[new])
                else:
                    right.filler()
        _context_rows(row_map, hunk_index, lines, context_from, len(lines), left, right)
    return left.finish(), right.finish()


def _context_rows(row_map: RowMap, hunk_index: int, lines: list[DiffLine], first: int, end: int,
                  left: _Builder, right: _Builder) -> None:
    for i in range(first, end):
        line = lines[i]
        _map_row(row_map, hunk_index, i, i)
        left.line(CONTEXT, line.text, line.old_no, None, line)
        right.line(CONTEXT, line.text, None, line.new_no, line)


def inline_rows(diff: FileDiff) -> PaneRows:
    """One pane with every hunk line in diff order."""
    row_map = RowMap()
    pane = _Builder(row_map)
    for hunk_index, hunk in enumerate(diff.hunks):
        row_map.header_rows.append(len(row_map.hunks))
        _map_row(row_map, hunk_index, -1, -1)
        pane.header(hunk.header)
        previous = " "
        for i, line in enumerate(hunk.lines):
            kind = line.kind
            if kind != " " and (previous == " " or (previous == "+" and kind == "-")):
                row_map.change_rows.append(len(row_map.hunks))
            previous = kind
            if kind == " ":
                _map_row(row_map, hunk_index, i, i)
                pane.line(CONTEXT, line.text, line.old_no, line.new_no, line)
            elif kind == "-":
                _map_row(row_map, hunk_index, i, -1)
                pane.line(REMOVED, line.text, line.old_no, None, line)
            else:
                _map_row(row_map, hunk_index, -1, i)
                pane.line(ADDED, line.text, None, line.new_no, line)
    return pane.finish()


def _map_row(row_map: RowMap, hunk_index: int, old: int, new: int) -> None:
    row_map.hunks.append(hunk_index)
    row_map.old_lines.append(old)
    row_map.new_lines.append(new)


class _Builder:
    """Collects one pane's rows."""

    __slots__ = ("row_map", "texts", "kinds", "old_numbers", "new_numbers", "lines")

    def __init__(self, row_map: RowMap) -> None:
        self.row_map = row_map
        self.texts: list[str] = []
        self.kinds: list[str] = []
        self.old_numbers: list[int | None] = []
        self.new_numbers: list[int | None] = []
        self.lines: list[DiffLine | None] = []

    def header(self, text: str) -> None:
        self._add(HEADER, text, None, None, None)

    def filler(self) -> None:
        self._add(FILLER, "", None, None, None)

    def line(self, kind: str, text: str, old_no: int | None, new_no: int | None, line: DiffLine) -> None:
        self._add(kind, text, old_no, new_no, line)

    def _add(self, kind: str, text: str, old_no: int | None, new_no: int | None, line: DiffLine | None) -> None:
        self.texts.append(text)
        self.kinds.append(kind)
        self.old_numbers.append(old_no)
        self.new_numbers.append(new_no)
        self.lines.append(line)

    def finish(self) -> PaneRows:
        text = "\n".join(self.texts).translate(_DISPLAY)
        return PaneRows(text, self.kinds, self.old_numbers, self.new_numbers, self.lines, self.row_map)


class LoadedDiff:
    """A file's diff and the rows of the mode asked for (None for a binary, too large or empty
    diff); ``lexer`` is for the view to fill in."""

    __slots__ = ("diff", "mode", "rows", "lexer")

    def __init__(self, diff: FileDiff, mode: str, rows, lexer=None) -> None:
        self.diff, self.mode, self.rows, self.lexer = diff, mode, rows, lexer


def load_diff(repo: Repository, path: str, source: str, mode: str, *, cancel: CancelToken | None = None,
              a: str | None = None, b: str | None = None) -> LoadedDiff:
    """Read the diff of ``path`` from ``source`` and build the rows of ``mode`` (SIDE_BY_SIDE or
    INLINE). For ``COMMITS`` the diff of ``path`` between revisions ``a`` and ``b``."""
    if source == COMMITS:
        diff = _commit_diff(repo, path, a, b, cancel)
    else:
        diff = diff_file(repo, path, source, cancel=cancel)
    if diff.is_binary or diff.is_too_large or not diff.hunks:
        return LoadedDiff(diff, mode, None)
    return LoadedDiff(diff, mode, side_by_side_rows(diff) if mode == SIDE_BY_SIDE else inline_rows(diff))


def _commit_diff(repo: Repository, path: str, a: str | None, b: str | None, cancel: CancelToken | None) -> FileDiff:
    diffs = diff_commits(repo, a or empty_tree(repo), b, path, cancel=cancel)
    for diff in diffs:
        if diff.path == path or diff.old_path == path:
            return diff
    return diffs[0] if diffs else FileDiff(path, path, source=COMMITS)

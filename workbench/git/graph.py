"""Graph lanes for the history view, computed from each commit's parents alone (no git, no Qt).

Each commit gets a column; between one row and the next run lines, each from a column in the
upper row to a column in the lower row with a colour index. A branch keeps its column and its
colour from its tip down to where it forks off; a merge draws a line out to the lane of the
merged branch; a lane that reaches a commit already drawn in another column bends into it.

Painting a row (as git-cola's DAG and VS Code's graph do): draw ``lines_in`` from the top edge
of the row to the row's centre, ``lines`` from the centre to the bottom edge, then the dot in
``column``. A line ``a → b`` is drawn from column ``a`` at the centre of its upper row to column
``b`` at the centre of its lower row, so its halves meet at the row boundary half-way across.
Colours are indices that grow without bound; take them modulo the palette.

The work per row is proportional to the number of lanes open at that row, never to the length
of the history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence


@dataclass(frozen=True)
class GraphLine:
    """A line from ``from_column`` in one row to ``to_column`` in the next row."""

    from_column: int
    to_column: int
    colour: int


@dataclass(frozen=True)
class GraphRow:
    """The graph cell of one commit of the log."""

    sha: str
    column: int
    colour: int
    lines: tuple[GraphLine, ...]  # from this row down to the next row
    lines_in: tuple[GraphLine, ...]  # from the previous row down to this row (its ``lines``)
    width: int  # columns this cell needs to paint its dot and all its lines


@dataclass
class _Lane:
    sha: str  # the commit this lane leads down to
    colour: int


@dataclass(frozen=True)
class _Outgoing:
    from_column: int
    target: str  # the commit the line leads to
    lane: int  # the column the line reaches if ``target`` is not the next row's commit
    colour: int


def layout_graph(commits: Iterable[tuple[str, Sequence[str]]]) -> list[GraphRow]:
    """Graph rows for ``(sha, parents)`` pairs in log order, where each commit comes before its
    parents (``git log --date-order`` or ``--topo-order``; a parent listed above its child gets
    no line). Parents that are not in the list (the next page of history) keep their lanes
    running straight down from the last row, so a path-limited log, whose parents are mostly
    not listed, is shown without a graph."""
    lanes: list[_Lane | None] = []
    next_colour = 0
    rows: list[GraphRow] = []
    # The previous row waits for this row's column before its lines are known.
    pending: tuple[str, int, int, list[_Outgoing]] | None = None
    # A parent listed above its child (a log not in topological order) gets no lane: it would
    # never be reached and would run down the whole view.
    shown: set[str] = set()

    for sha, parents in commits:
        shown.add(sha)
        parents = [parent for parent in parents if parent not in shown]
        arriving = [index for index, lane in enumerate(lanes) if lane is not None and lane.sha == sha]
        if arriving:
            column = arriving[0]
            colour = lanes[column].colour
            for index in arriving:
                lanes[index] = None  # every child's lane ends in this commit
        else:  # a branch tip nothing above leads to
            column = _free_column(lanes)
            colour, next_colour = next_colour, next_colour + 1

        if pending is not None:
            previous_sha, previous_column, previous_colour, previous_outgoing = pending
            rows.append(_row(previous_sha, previous_column, previous_colour,
                             _lines(previous_outgoing, sha, column), rows[-1].lines if rows else ()))
        # Passing lanes keep their column; they are collected before this commit adds new lanes.
        outgoing = [_Outgoing(index, lane.sha, index, lane.colour)
                    for index, lane in enumerate(lanes) if lane is not None]

        if parents:
            lanes[column] = _Lane(parents[0], colour)
            outgoing.append(_Outgoing(column, parents[0], column, colour))
        for parent in dict.fromkeys(parents[1:]):
            if parent == parents[0]:
                continue
            existing = next((index for index, lane in enumerate(lanes)
                             if lane is not None and lane.sha == parent), None)
            if existing is None:  # the merged branch gets a lane of its own from here down
                existing = _free_column(lanes)
                lanes[existing] = _Lane(parent, next_colour)
                next_colour += 1
            outgoing.append(_Outgoing(column, parent, existing, lanes[existing].colour))
        while lanes and lanes[-1] is None:
            lanes.pop()
        pending = (sha, column, colour, outgoing)

    if pending is not None:
        last_lines = tuple(GraphLine(line.from_column, line.lane, line.colour) for line in pending[3])
        rows.append(_row(pending[0], pending[1], pending[2], last_lines, rows[-1].lines if rows else ()))
    return rows


def _free_column(lanes: list[_Lane | None]) -> int:
    for index, lane in enumerate(lanes):
        if lane is None:
            return index
    lanes.append(None)
    return len(lanes) - 1


def _lines(outgoing: list[_Outgoing], next_sha: str, next_column: int) -> tuple[GraphLine, ...]:
    return tuple(GraphLine(line.from_column, next_column if line.target == next_sha else line.lane, line.colour)
                 for line in outgoing)


def _row(sha: str, column: int, colour: int, lines: tuple[GraphLine, ...],
         lines_in: tuple[GraphLine, ...]) -> GraphRow:
    width = max([column, *(max(line.from_column, line.to_column) for line in (*lines, *lines_in))]) + 1
    return GraphRow(sha=sha, column=column, colour=colour, lines=lines, lines_in=lines_in, width=width)

"""Fuzzy matching of a typed query against a name, ranked as VS Code ranks.

Quick Open (file names) and the command palette (command labels) rank with the same rules, so
a person learns them once. A query is split at spaces into pieces; every piece must match. A
piece matches in one of four ways, best first:

1. in one piece at the start of a word ("flow" in "Git Flow: Init", "data" in "load_data.py");
2. in pieces that each start a word ("gfi" or "gitfin" in "Git Flow: Init", "mt" in
   "model_tools.py");
3. in one piece inside a word ("low" in "Git Flow");
4. scattered letters in order (only where the caller allows it: Quick Open does, the palette
   does not, so "theme" no longer finds "Train with Hyper-parameters…").

Within a way, a match at the very start, then (except at a word start) an earlier match, then
a shorter name win. Words start after a non-letter-or-digit
and where a lower-case letter meets an upper-case one (camelCase).

Qt-free and without third-party libraries: the shell's palette and the search capability both
import it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

WORD_START = 4000
WORD_PIECES = 3000
INSIDE_WORD = 2000
SCATTERED = 1000
"""The base of each way of matching; what a way adds on top stays below the gap to the next."""


@dataclass(frozen=True)
class Match:
    """How well a query matched a text: a higher ``score`` is better; ``positions`` are the
    indexes of the matched characters in the text, for highlighting."""

    score: int
    positions: tuple[int, ...]


def query_pieces(query: str) -> list[str]:
    """The query's pieces, lower-cased (a query of only spaces has none)."""
    return query.lower().split()


_WORD_START = re.compile(r"(?<![^\W_])[^\W_]|(?<=[a-z])[A-Z]")


def word_starts(text: str) -> list[int]:
    """The indexes where a word of ``text`` starts."""
    return [m.start() for m in _WORD_START.finditer(text)]


def match(query: str, text: str, scattered: bool = True, lowered: str | None = None,
          starts: list[int] | tuple[int, ...] | None = None, word_pieces: bool = True) -> Match | None:
    """How ``query`` matches ``text``, or None when it does not. ``lowered`` (``text.lower()``)
    and ``starts`` (``word_starts(text)``) are given when the caller keeps them, as file lists
    do to rank 20,000 names per key. ``word_pieces=False`` skips the second way (the costliest
    to look for), for long texts such as whole paths."""
    pieces = query_pieces(query)
    if not pieces:
        return Match(0, ())
    lower = text.lower() if lowered is None else lowered
    total, positions = 0, set()
    for piece in pieces:
        found = _match_piece(piece, text, lower, scattered, starts, word_pieces)
        if found is None:
            return None
        score, where, starts = found
        total += score
        positions.update(where)
    return Match(total, tuple(sorted(positions)))


def is_word_start(text: str, index: int) -> bool:
    """Whether a word of ``text`` starts at ``index``."""
    char = text[index]
    if not char.isalnum():
        return False
    if index == 0:
        return True
    previous = text[index - 1]
    return not previous.isalnum() or (previous.islower() and char.isupper())


def _match_piece(piece: str, text: str, lower: str, scattered: bool,
                 starts, word_pieces: bool = True) -> tuple[int, tuple[int, ...], list[int] | None] | None:
    length = len(piece)
    first = lower.find(piece)
    at = first
    while at >= 0 and not is_word_start(text, at):
        at = lower.find(piece, at + 1)
    if at >= 0:
        # Which word it starts does not matter, only whether it is the first.
        bonus = 300 if at == 0 else 0
        return WORD_START + bonus + 20 * length, tuple(range(at, at + length)), starts
    if starts is None:
        starts = word_starts(text)
    chunks = _word_pieces(piece, lower, starts) if word_pieces else None
    if chunks is not None:
        where = tuple(i for start, size in chunks for i in range(start, start + size))
        # Fewer pieces, closer together ("data_loader" over "data_eval_loader"), and earlier win.
        spread = chunks[-1][0] + chunks[-1][1] - chunks[0][0] - length
        return (WORD_PIECES + 20 * length - 30 * len(chunks) - min(spread, 200) - min(chunks[0][0], 200),
                where, starts)
    if first >= 0:
        return INSIDE_WORD + 20 * length - min(first, 200), tuple(range(first, first + length)), starts
    if not scattered:
        return None
    where = _scattered(piece, lower, set(starts))
    if where is None:
        return None
    start_set = set(starts)
    score = SCATTERED
    for index, at in enumerate(where):
        score += 10 if at in start_set else 0
        if index and where[index - 1] == at - 1:
            score += 5
    score -= min(where[-1] - where[0] - length + 1, 300)  # letters spread apart rank lower
    return min(score, INSIDE_WORD - 1), where, starts


def _word_pieces(piece: str, lower: str, starts: list[int]) -> list[tuple[int, int]] | None:
    """``piece`` as consecutive runs that each start a word, in order: [(start, length)], the
    longest runs first; None when it cannot be split so."""
    # Only word starts holding one of the piece's letters can begin a run.
    starts = [s for s in starts if lower[s] in piece]
    if piece[0] not in {lower[s] for s in starts}:
        return None
    failed: set[tuple[int, int]] = set()  # (letters done, first start to try) known to fail

    def take(done: int, from_start: int) -> list[tuple[int, int]] | None:
        if done == len(piece):
            return []
        if (done, from_start) in failed:
            return None
        for k in range(from_start, len(starts)):
            start = starts[k]
            size = 0
            while (done + size < len(piece) and start + size < len(lower)
                   and lower[start + size] == piece[done + size]):
                size += 1
            for run in range(size, 0, -1):
                rest = take(done + run, k + 1)
                if rest is not None:
                    return [(start, run)] + rest
        failed.add((done, from_start))
        return None

    return take(0, 0)


def _scattered(piece: str, lower: str, starts: set[int]) -> tuple[int, ...] | None:
    """The letters of ``piece`` in order in ``lower``, each at a word start when one lies ahead
    with the rest still to be found after it; None when they are not all there."""
    where = []
    at = 0
    for index, char in enumerate(piece):
        found = lower.find(char, at)
        if found < 0:
            return None
        rest = piece[index + 1:]
        candidate = found
        while candidate >= 0 and candidate not in starts:
            candidate = lower.find(char, candidate + 1)
        if candidate >= 0 and candidate != found and _is_subsequence(rest, lower, candidate + 1):
            found = candidate
        where.append(found)
        at = found + 1
    return tuple(where)


def _is_subsequence(piece: str, lower: str, at: int) -> bool:
    for char in piece:
        at = lower.find(char, at)
        if at < 0:
            return False
        at += 1
    return True


def subsequence_pattern(query: str) -> re.Pattern | None:
    """A pattern that finds, in a lower-cased text, the letters of every piece of ``query`` in
    order: what any match needs, checked at C speed before ranking. None for an empty query."""
    pieces = query_pieces(query)
    if not pieces:
        return None
    # Pieces may match in any order, so each is a lookahead of its own; "[^c]*+c" takes the
    # first c and never backtracks, so a text that fails fails in one pass.
    parts = ["(?=" + "".join(f"[^{re.escape(c)}]*+{re.escape(c)}" for c in piece) + ")" for piece in pieces]
    return re.compile("".join(parts), re.DOTALL)

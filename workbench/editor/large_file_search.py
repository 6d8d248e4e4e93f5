"""Finding text in a huge file through its line index, a chunk of lines at a time.

Made for a worker thread: each chunk is a few megabytes, and ``cancelled()`` is asked before
each one, so a search over hundreds of megabytes stops soon after the query changes.

Lines are decoded as UTF-8 (undecodable bytes replaced, a final "\\r" dropped) and a match never
spans a line ending, as in a log viewer. For speed a whole chunk is decoded and searched as one
string; a match found across a line ending is looked for again inside its own line. Matches are
the non-overlapping, non-empty ones found scanning each line from its start, like the editor's
find bar.
"""

from __future__ import annotations

import bisect
import re
import time
from typing import TYPE_CHECKING, Callable, Iterator, NamedTuple, Sequence

from workbench.editor.errors import EditorError

if TYPE_CHECKING:
    import mmap

    import numpy as np

SEARCH_CHUNK_BYTES = 2 * 1024 * 1024

# Counting stops here: beyond it, the exact number helps nobody and costs a full scan.
COUNT_CAP = 10_000


class LineMatch(NamedTuple):
    """One match: 0-based line, 0-based column (characters of the decoded line), length."""

    line: int
    column: int
    length: int


class CompiledQuery(NamedTuple):
    """A query ready to search: its pattern, and the plain text it starts with when it is not a
    regular expression (lower-cased when case is ignored), which is found much faster."""

    pattern: re.Pattern[str]
    literal: str | None = None
    ignore_case: bool = False


class MatchCount(NamedTuple):
    """The matches counted, in file order, and whether counting stopped at the cap."""

    matches: list[LineMatch]
    capped: bool


def compile_query(
    text: str, regex: bool = False, match_case: bool = False, whole_word: bool = False
) -> CompiledQuery | None:
    """What the find bar asks for, ready for ``find_match``; None for an empty query.

    Raises EditorError, saying how to fix it, when ``regex`` is set and ``text`` is not a valid
    regular expression.
    """
    if not text:
        return None
    source = text if regex else re.escape(text)
    if whole_word:
        source = rf"\b(?:{source})\b"
    flags = re.MULTILINE if match_case else re.MULTILINE | re.IGNORECASE
    try:
        pattern = re.compile(source, flags)
    except re.error as exc:
        raise EditorError(
            f"Invalid regular expression: {exc}. Fix the expression, or turn off .* to search "
            "for the text as typed."
        ) from None
    if regex:
        return CompiledQuery(pattern)
    return CompiledQuery(pattern, text if match_case else text.lower(), not match_case)


def find_match(
    data: mmap.mmap | bytes,
    starts: np.ndarray | Sequence[int],
    pattern: CompiledQuery | re.Pattern[str],
    start_line: int,
    start_column: int = 0,
    forward: bool = True,
    *,
    end: int | None = None,
    wrap: bool = True,
    cancelled: Callable[[], bool] | None = None,
    chunk_bytes: int = SEARCH_CHUNK_BYTES,
    pause: float = 0.0,
) -> LineMatch | None:
    """The match nearest to (``start_line``, ``start_column``), both 0-based, in one direction.

    Forward: the first match starting at or after that point. Backward: the last match starting
    before it. With ``wrap`` the search goes on from the other end of the file up to the start
    point. ``pattern`` comes from ``compile_query`` (or is any compiled ``re`` pattern).
    ``starts`` are the byte offsets of the lines (see ``find_line_starts``); the last line ends
    at ``end`` (default: the end of ``data``). Returns None when nothing matches, or when
    ``cancelled()`` turns true. See ``pause_between_chunks`` for ``pause``.
    """
    query = _as_query(pattern)
    count = len(starts)
    if count == 0:
        return None
    end = len(data) if end is None else end
    start_line = max(0, min(start_line, count - 1))
    origin = (start_line, start_column)
    at_or_after = (start_line, count, lambda key: key >= origin)
    before = (0, start_line + 1, lambda key: key < origin)
    passes = [at_or_after, before] if forward else [before, at_or_after]
    if not wrap:
        passes = passes[:1]
    for first, last, accept in passes:
        for begin, stop in _chunk_ranges(starts, first, last, end, chunk_bytes, forward):
            pause_between_chunks(pause)
            if cancelled is not None and cancelled():
                return None
            found = None
            for match in _line_matches(_decode(data, starts, begin, stop, end), query, begin):
                if accept(match[:2]):
                    if forward:
                        return match
                    found = match
                elif found is not None:
                    break  # matches come in order: the accepted ones are behind us
            if found is not None:
                return found
    return None


def count_matches(
    data: mmap.mmap | bytes,
    starts: np.ndarray | Sequence[int],
    pattern: CompiledQuery | re.Pattern[str],
    *,
    end: int | None = None,
    cap: int = COUNT_CAP,
    on_progress: Callable[[list[LineMatch]], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    chunk_bytes: int = SEARCH_CHUNK_BYTES,
    pause: float = 0.0,
) -> MatchCount | None:
    """Every match in the file, in order, up to ``cap`` of them; None when cancelled.

    ``on_progress(new_matches)`` is called after each chunk with the matches found in it, so a
    viewer can say "3 of 1,204+" while the count goes on. See ``pause_between_chunks`` for
    ``pause``.
    """
    query = _as_query(pattern)
    found: list[LineMatch] = []
    count = len(starts)
    end = len(data) if end is None else end
    for begin, stop in _chunk_ranges(starts, 0, count, end, chunk_bytes, True):
        pause_between_chunks(pause)
        if cancelled is not None and cancelled():
            return None
        new = []
        for match in _line_matches(_decode(data, starts, begin, stop, end), query, begin):
            new.append(match)
            if len(found) + len(new) > cap:
                new.pop()
                found.extend(new)
                if on_progress is not None:
                    on_progress(new)
                return MatchCount(found, True)
        found.extend(new)
        if on_progress is not None:
            on_progress(new)
    return MatchCount(found, False)


def pause_between_chunks(seconds: float) -> None:
    """Let other threads run for ``seconds`` (nothing when 0).

    Decoding and searching hold the GIL, and a GUI thread needs it for every call into Qt; when
    it only waits for the interpreter to switch threads (every 5 ms) a search on a worker makes
    the window stutter. A short sleep hands the GIL over at once.
    """
    if seconds > 0:
        time.sleep(seconds)


def match_index(matches: Sequence[LineMatch], match: LineMatch) -> int | None:
    """0-based position of ``match`` in ``matches`` (in file order), or None."""
    index = bisect.bisect_left(matches, match)
    return index if index < len(matches) and matches[index] == match else None


def format_match_count(index: int | None, total: int, more: bool) -> str:
    """The find bar's count: "3 of 1,204", "3 of 10,000+", "1,204+ results", "No results".

    ``more`` means the count is not final (still counting, or stopped at the cap).
    """
    plus = "+" if more else ""
    if total == 0:
        return "Searching…" if more else "No results"
    if index is None:
        return f"{total:,}{plus} results"
    return f"{index + 1:,} of {total:,}{plus}"


def _byte_at(starts, line: int, end: int) -> int:
    return int(starts[line]) if line < len(starts) else end


def _chunk_ranges(starts, first: int, last: int, end: int, chunk_bytes: int, forward: bool
                  ) -> Iterator[tuple[int, int]]:
    """Line ranges [begin, stop) of about ``chunk_bytes`` covering lines [first, last)."""
    # Leave this import here: numpy costs a tenth of a second, and only huge files need it.
    import numpy as np

    if forward:
        begin = first
        while begin < last:
            target = _byte_at(starts, begin, end) + chunk_bytes
            stop = int(np.searchsorted(starts, target, side="left"))
            stop = max(begin + 1, min(stop, last))
            yield begin, stop
            begin = stop
    else:
        stop = last
        while stop > first:
            target = _byte_at(starts, stop, end) - chunk_bytes
            begin = int(np.searchsorted(starts, target, side="left"))
            begin = min(stop - 1, max(begin, first))
            yield begin, stop
            stop = begin


def _decode(data, starts, begin: int, stop: int, end: int) -> str:
    raw = data[_byte_at(starts, begin, end):_byte_at(starts, stop, end)]
    text = raw.decode("utf-8", errors="replace")
    # "\r\n" becomes "\n" so "$" and column numbers treat CRLF lines like the viewer shows them.
    return text.replace("\r\n", "\n") if "\r" in text else text


def _as_query(pattern: CompiledQuery | re.Pattern[str]) -> CompiledQuery:
    return pattern if isinstance(pattern, CompiledQuery) else CompiledQuery(pattern)


def _spans(text: str, query: CompiledQuery, position: int) -> Iterator[tuple[int, int]]:
    """(start, end) of the matches in ``text`` from ``position`` on, as ``finditer`` finds them."""
    literal = query.literal
    # A plain query is found by str.find, many times faster than the regular expression
    # engine (above all when case is ignored); the pattern then checks whole words. Lower-casing
    # keeps every position only for ASCII text, so other text goes through the pattern.
    if not literal or (query.ignore_case and not (literal.isascii() and text.isascii())):
        for match in query.pattern.finditer(text, position):
            yield match.span()
        return
    haystack = text.lower() if query.ignore_case else text
    while True:
        found = haystack.find(literal, position)
        if found < 0:
            return
        match = query.pattern.match(text, found)
        if match is not None:
            yield match.span()
            position = match.end()
        else:
            position = found + 1


def _line_matches(text: str, query: CompiledQuery, first_line: int) -> Iterator[LineMatch]:
    """The matches of each "\\n"-separated line of ``text``, in order; ``text`` starts a line."""
    line = first_line
    line_start = 0  # where ``line`` starts in ``text``
    counted = 0  # line endings before this position are counted in ``line``
    position = 0
    while True:
        for start, stop in _spans(text, query, position):
            if start == stop:
                continue  # an empty match (as of "^" or "x*") selects nothing
            if start > counted:
                newlines = text.count("\n", counted, start)
                if newlines:
                    line += newlines
                    line_start = text.rfind("\n", counted, start) + 1
                counted = start
            if text.find("\n", start, stop) < 0:
                yield LineMatch(line, start - line_start, stop - start)
                continue
            # The match runs over a line ending: search again inside its own line only, then go
            # on from the next line.
            line_stop = text.find("\n", start)
            own = text[line_start:line_stop]
            for inner in query.pattern.finditer(own, start - line_start):
                if inner.end() > inner.start():
                    yield LineMatch(line, inner.start(), inner.end() - inner.start())
            position = line_stop + 1
            break
        else:
            return

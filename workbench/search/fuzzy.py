"""Quick Open's ranking of project files, as VS Code ranks them.

A query matched in the file name beats one matched only with the folders (a query with a ``/``
is matched against the whole path); within each, the ways of ``workbench.platform.fuzzy``
(word start, word pieces, inside a word, scattered) rank in that order, then a shorter path
wins. Recently opened files that match come first, the most recent first among equals, as
VS Code lists "recently opened" above "file results".

The first keys typed match most files, so they are answered from the list's index of word
heads (the files whose names have a word starting with those letters) when it alone fills the
list. Later keys run a pattern at C speed to keep only the files holding the query's letters in
order, and while the user types on (each query extending the last) only the last key's
survivors are looked at again.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from workbench.platform.fuzzy import is_word_start, match, query_pieces, subsequence_pattern
from workbench.search.file_index import FileList

IN_FILE_NAME = 100_000
"""What matching a piece in the file name adds over matching it only with the folders."""

REACHES_FILE_NAME = 500
"""What a match with the folders adds when it ends in the file name."""

APPROXIMATE_AFTER = 400
"""How many matches of a kind a key ranks exactly at most; beyond, the shortest paths."""

RECENT = 100_000_000
"""What being recently opened adds: more than any match is worth, so recent files lead."""


@dataclass(frozen=True)
class FileMatch:
    """One ranked file: its project-relative path, the indexes of the matched characters in
    that path, and whether it was recently opened."""

    path: str
    score: int
    positions: tuple[int, ...]
    recent: bool


def split_line_suffix(query: str) -> tuple[str, int | None]:
    """``"train.py:42"`` → ``("train.py", 42)``; a query without ``:N`` → ``(query, None)``."""
    head, colon, tail = query.rpartition(":")
    if colon and tail.strip().isdigit():
        return head, int(tail.strip())
    return query, None


def score_path(query: str, path: str, lowered: str | None = None, name_start: int | None = None,
               name_word_starts: tuple[int, ...] | None = None) -> tuple[int, tuple[int, ...]] | None:
    """The score and matched positions of ``path`` for ``query``, or None when it does not
    match: each piece is matched in the file name when it can be, else in the whole path."""
    lowered = path.lower() if lowered is None else lowered
    name_start = path.rfind("/") + 1 if name_start is None else name_start
    name, lowered_name = path[name_start:], lowered[name_start:]
    total, positions = 0, set()
    for piece in query_pieces(query):
        if "/" not in piece:
            found = match(piece, name, lowered=lowered_name, starts=name_word_starts)
            if found is not None:
                total += IN_FILE_NAME + found.score
                positions.update(name_start + i for i in found.positions)
                continue
        # Word pieces across a whole path cost too much per key and rank below the name anyway.
        found = match(piece, path, lowered=lowered, word_pieces=False)
        if found is None:
            return None
        total += found.score
        if found.positions and found.positions[-1] >= name_start:
            total += REACHES_FILE_NAME  # "model/conv" ending in conv.py, not in a folder
        positions.update(found.positions)
    return total - len(path), tuple(sorted(positions))


class FileRanker:
    """Ranks one ``FileList`` query after query, narrowing from the last query's survivors when
    the new query extends it."""

    def __init__(self, files: FileList):
        self.files = files
        self._index_of = {path: index for index, path in enumerate(files.paths)}
        self._length_of = [len(path) for path in files.paths].__getitem__
        self._last_query: str | None = None
        self._last_survivors: list[int] = []

    def rank(self, query: str, recent: list[str] | None = None, limit: int = 50) -> list[FileMatch]:
        """The best ``limit`` files for ``query``; for an empty query, the recent files that
        still exist, then the others by path."""
        recent = [p for p in recent or [] if p in self._index_of]
        recency = {path: len(recent) - order for order, path in enumerate(recent)}
        files = self.files
        if not query_pieces(query):
            firsts = [FileMatch(p, 0, (), True) for p in recent][:limit]
            rest = (FileMatch(p, 0, (), False) for p in files.paths if p not in recency)
            return firsts + [m for _, m in zip(range(limit - len(firsts)), rest)]
        chosen = self._word_start_matches(query, limit)
        if chosen is not None:
            candidates = chosen + [self._index_of[p] for p in recent]
        else:
            candidates = self._likely_best(query, limit, recency)
        scored = []
        for index in set(candidates):
            path = files.paths[index]
            found = score_path(query, path, files.lowered[index], files.name_starts[index],
                               files.name_word_starts[index])
            if found is None:
                continue
            score, positions = found
            if path in recency:
                score += RECENT + recency[path]
            scored.append((score, -index, positions))
        return [FileMatch(files.paths[-negative], score, positions, score >= RECENT)
                for score, negative, positions in heapq.nlargest(limit, scored)]

    def _word_start_matches(self, query: str, limit: int) -> list[int] | None:
        """The ``limit`` files to rank when at least that many names hold the one-piece query
        at the start of a word (the best way to match, which no other way overtakes): the names
        that start with it first, then the others, shortest path first. None otherwise."""
        pieces = query_pieces(query)
        if len(pieces) != 1 or "/" in pieces[0]:
            return None
        piece = pieces[0]
        head = piece[:2]
        files = self.files
        in_words = files.word_heads.get(head, [])
        if len(in_words) < limit:
            return None
        at_start = files.name_heads.get(head, [])
        if len(piece) > 2:
            at_start = [i for i in at_start if files.lowered[i].startswith(piece, files.name_starts[i])]
            in_words = [i for i in in_words if self._starts_a_word(i, piece)]
            if len(in_words) < limit:
                return None
        chosen = at_start[:limit]
        taken = set(chosen)
        for index in in_words:
            if len(chosen) >= limit:
                break
            if index not in taken:
                chosen.append(index)
        return chosen

    def _likely_best(self, query: str, limit: int, recency: dict[str, int]) -> list[int]:
        """The files worth ranking exactly: every recent match; the names holding the query at
        the start of a word (the best way, which nothing else overtakes once they fill the
        list); else also the other name matches and, while the list is not full, the folder
        matches, each group cut to its ``APPROXIMATE_AFTER`` shortest paths when larger (ranking
        every match exactly would cost a key tens of milliseconds on 20,000 files)."""
        in_name, in_folders = self._survivors(query)
        pieces = query_pieces(query)
        chosen = [self._index_of[path] for path in recency]
        shortest = self._length_of
        if len(pieces) == 1 and "/" not in pieces[0]:
            at_word_start = [i for i in in_name if self._starts_a_word(i, pieces[0])]
            if len(at_word_start) >= limit:
                return chosen + sorted(at_word_start, key=shortest)[:APPROXIMATE_AFTER]
        for group in (in_name, in_folders if len(in_name) < limit else []):
            chosen += sorted(group, key=shortest)[:APPROXIMATE_AFTER] if len(group) > APPROXIMATE_AFTER else group
        return chosen

    def _starts_a_word(self, index: int, piece: str) -> bool:
        files = self.files
        name_start = files.name_starts[index]
        name = files.paths[index][name_start:]
        lowered = files.lowered[index]
        at = lowered.find(piece, name_start)
        while at >= 0:
            if is_word_start(name, at - name_start):
                return True
            at = lowered.find(piece, at + 1)
        return False

    def prepare(self, query: str) -> None:
        """Find which files hold ``query``'s letters, so that the next key (which extends it)
        narrows from those alone. Quick Open calls it between keys after a query answered from
        the word heads, which did not need them."""
        if query_pieces(query) and self._last_query != query:
            self._survivors(query)

    def _survivors(self, query: str) -> tuple[list[int], list[int]]:
        """The indexes of the files holding every piece's letters in order: those holding them
        in the file name, and those holding them only with the folders."""
        pattern = subsequence_pattern(query)
        files = self.files
        lowered, name_starts = files.lowered, files.name_starts
        if self._last_query is not None and query.lower().startswith(self._last_query.lower()):
            pool = self._last_survivors
        else:
            pool = range(len(lowered))
        test = pattern.match
        survivors = [i for i in pool if test(lowered[i])]
        self._last_query, self._last_survivors = query, survivors
        if "/" in query:
            return survivors, []
        in_name, in_folders = [], []
        for i in survivors:
            (in_name if test(lowered[i], name_starts[i]) else in_folders).append(i)
        return in_name, in_folders

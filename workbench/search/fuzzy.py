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

APPROXIMATE_AFTER = 200
"""How many name matches a key ranks exactly at most; beyond, the shortest paths."""

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
        # For each kind of survivor (letters in the name, letters in the path, the query at a
        # word start of the name): the query they were found for, and the files.
        self._narrowed: dict[str, tuple[str, list[int]]] = {}

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
        files = self.files
        if len(files.word_heads.get(piece[:2], ())) < limit:
            return None
        in_words = files.word_heads[piece[:2]]
        if len(piece) > 2:
            starts_a_word = self._starts_a_word
            in_words = self._narrow("word start", piece, lambda: in_words,
                                    lambda pool: [i for i in pool if starts_a_word(i, piece)])
            if len(in_words) < limit:
                return None
        at_start = [i for i in files.name_heads.get(piece[:2], [])
                    if files.lowered[i].startswith(piece, files.name_starts[i])]
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
        list); else also the other name matches (their ``APPROXIMATE_AFTER`` shortest paths when
        there are more) and, while the list is not full, the folder matches (their shortest
        paths, twice what fills the list). Ranking every match exactly would cost a key tens of
        milliseconds on 20,000 files."""
        pieces = query_pieces(query)
        chosen = [self._index_of[path] for path in recency]
        shortest = self._length_of
        in_name = self._in_names(query)
        if len(pieces) == 1 and "/" not in pieces[0]:
            piece = pieces[0]
            heads = self.files.with_word_head(piece[:2])
            at_word_start = [i for i in in_name if i in heads]
            if len(piece) > 2:
                at_word_start = [i for i in at_word_start if self._starts_a_word(i, piece)]
            if len(at_word_start) >= limit:
                return chosen + sorted(at_word_start, key=shortest)[:APPROXIMATE_AFTER]
        chosen += sorted(in_name, key=shortest)[:APPROXIMATE_AFTER] if len(in_name) > APPROXIMATE_AFTER else in_name
        if len(in_name) < limit and "/" not in query:
            # Matches with the folders fill the rest of the list: the shortest paths.
            named = set(in_name)
            in_folders = [i for i in self._in_paths(query) if i not in named]
            chosen += sorted(in_folders, key=shortest)[:2 * limit] if len(in_folders) > 2 * limit else in_folders
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
        """Find which files hold ``query``'s letters, in their names and in their paths, so
        that the next key (which extends it) narrows from those alone. Quick Open calls it
        between keys, as a person reaches for the next one."""
        if query_pieces(query):
            self._in_names(query)
            self._in_paths(query)

    def _in_names(self, query: str) -> list[int]:
        """The files whose names hold every piece's letters in order (for a query with a
        ``/``, whose paths do)."""
        if "/" in query:
            return self._in_paths(query)
        test, files = subsequence_pattern(query).match, self.files
        lowered, name_starts = files.lowered, files.name_starts
        return self._narrow("name", query, lambda: range(len(lowered)),
                            lambda pool: [i for i in pool if test(lowered[i], name_starts[i])])

    def _in_paths(self, query: str) -> list[int]:
        """The files whose paths hold every piece's letters in order."""
        test, lowered = subsequence_pattern(query).match, self.files.lowered
        return self._narrow("path", query, lambda: range(len(lowered)),
                            lambda pool: [i for i in pool if test(lowered[i])])

    def _narrow(self, kind: str, query: str, everything, keep) -> list[int]:
        """The files ``keep`` keeps of those kept for the last query of this ``kind`` when
        ``query`` extends it (a longer query keeps fewer), else of ``everything``."""
        last = self._narrowed.get(kind)
        if last is not None and last[0] == query:
            return last[1]
        pool = last[1] if last is not None and query.lower().startswith(last[0].lower()) else everything()
        kept = keep(pool)
        self._narrowed[kind] = (query, kept)
        return kept

"""Find in the large-file view: the find bar's controls, searching the memory map on workers.

One worker looks for the next (or previous) match, another counts all matches up to
``COUNT_CAP``; both read the file a chunk at a time and stop when the query changes. Every
request carries a generation number, and an answer for an older one is dropped (the task runner
of git-cola's diff view works the same way).
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QWidget

from workbench.editor.errors import EditorError
from workbench.editor.large_file_search import (
    COUNT_CAP,
    CompiledQuery,
    LineMatch,
    compile_query,
    count_matches,
    find_match,
    format_match_count,
    match_index,
)
from workbench.editor.widgets.find_bar import FindControls
from workbench.editor.widgets.large_file_view import LargeFileView

log = logging.getLogger(__name__)

# Small chunks and a pause after each keep the window smooth while a worker searches (see
# ``pause_between_chunks``); a 200 MB log still takes well under a second more.
CHUNK_BYTES = 256 * 1024
PAUSE_SECONDS = 0.0002


class _Generations:
    """Which requests are current; read by the workers, so it holds no Qt object."""

    def __init__(self) -> None:
        self.query = 0
        self.find = 0
        self.closed = False


class _Results(QObject):
    """Carries the workers' answers to the GUI thread (the signals are queued across threads)."""

    found = Signal(int, int, object)  # query generation, find generation, LineMatch | None
    counted = Signal(int, object, object)  # query generation, new matches, MatchCount | None


class LargeFindBar(FindControls):
    """Finds in a LargeFileView without blocking the GUI; there is no replace (read-only)."""

    def __init__(self, view: LargeFileView, parent: QWidget | None = None,
                 cap: int = COUNT_CAP) -> None:
        super().__init__(parent)
        self.view = view
        self.cap = cap
        self._pattern: CompiledQuery | None = None
        self._current: LineMatch | None = None
        self._not_found = False
        self._finding = False
        self._finding_forward = True
        self._queued_steps = 0
        self._counted: list[LineMatch] = []
        self._counting = False
        self._capped = False
        self._generations = _Generations()
        self._results = _Results(self)
        self._results.found.connect(self._on_found)
        self._results.counted.connect(self._on_counted)
        self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="large-find")
        self.destroyed.connect(_make_closer(self._executor, self._generations))
        view.sig_indexing_finished.connect(self._on_indexing_finished)
        self._show_replace_row(False)
        self.hide()

    # Opening and closing ----------------------------------------------------------------

    def open(self, replace: bool = False) -> None:
        """Show the bar (never with a replace row: the view is read-only) and search."""
        self._show_replace_row(False)
        self.show()
        self.find_edit.setFocus()
        self.find_edit.selectAll()
        self._on_query_changed()

    def close_bar(self) -> None:
        """Stop searching, remove the highlight and hide the bar."""
        self._generations.query += 1
        self._finding = self._counting = False
        self._current = None
        self.view.clear_match()
        super().close_bar()

    # State for the window and tests -----------------------------------------------------

    @property
    def current_match(self) -> LineMatch | None:
        """The match shown, as 0-based (line, column, length), or None."""
        return self._current

    def is_searching(self) -> bool:
        """True while a worker looks for the next match or counts them."""
        return self._finding or self._counting

    def is_counting(self) -> bool:
        """True while the matches are being counted."""
        return self._counting

    # Searching --------------------------------------------------------------------------

    def find_next(self) -> bool:
        """Go to the next match after the current one (or the cursor line), wrapping around.

        The search runs on a worker; False when there is nothing to search for.
        """
        return self._step(forward=True)

    def find_previous(self) -> bool:
        """Go to the match before the current one (or the cursor line), wrapping around."""
        return self._step(forward=False)

    def _step(self, forward: bool) -> bool:
        if self._pattern is None:
            return False
        if self._finding and forward == self._finding_forward:
            self._queued_steps += 1  # keys pressed faster than the search: do them all
            return True
        self._queued_steps = 0
        self._start_find(forward, *self._start_point(forward))
        return True

    def _start_point(self, forward: bool) -> tuple[int, int]:
        current = self._current
        if current is not None and current.line == self.view.cursor_line():
            if forward:
                return current.line, current.column + current.length
            return current.line, current.column
        return self.view.cursor_line(), 0

    def _on_query_changed(self, *_: object) -> None:
        generations = self._generations
        generations.query += 1
        self._finding = self._counting = False
        self._queued_steps = 0
        self._counted = []
        self._capped = False
        self._not_found = False
        start = (
            (self._current.line, self._current.column) if self._current is not None
            else (self.view.cursor_line(), 0)
        )
        self._current = None
        self.view.clear_match()
        try:
            self._pattern = compile_query(
                self.find_edit.text(), self.regex_button.isChecked(),
                self.case_button.isChecked(), self.word_button.isChecked(),
            )
            self.error = ""
        except EditorError as error:
            self._pattern = None
            self.error = str(error)
        if self._pattern is not None and self.isVisible():
            # Search as you type from where the match was, so a match that still fits stays.
            self._start_find(True, *start)
            self._start_count()
        self._refresh_label()

    def _start_find(self, forward: bool, line: int, column: int) -> None:
        generations = self._generations
        generations.find += 1
        query, find = generations.query, generations.find
        self._finding = True
        self._finding_forward = forward
        view = self.view
        data, starts, end, pattern = view.data, view.line_starts, view.indexed_bytes, self._pattern
        results = self._results

        def cancelled() -> bool:
            return generations.closed or generations.query != query or generations.find != find

        def run() -> None:
            try:
                match = find_match(data, starts, pattern, line, column, forward, end=end,
                                   cancelled=cancelled, chunk_bytes=CHUNK_BYTES,
                                   pause=PAUSE_SECONDS)
            except (ValueError, OSError):
                log.exception("Find in %s failed", view.path)  # the file was closed under us
                match = None
            if not cancelled():
                _emit(results, "found", query, find, match)

        self._executor.submit(run)

    def _start_count(self) -> None:
        generations = self._generations
        query = generations.query
        self._counting = True
        self._counted = []
        self._capped = False
        view = self.view
        data, starts, end, pattern = view.data, view.line_starts, view.indexed_bytes, self._pattern
        results, cap = self._results, self.cap

        def cancelled() -> bool:
            return generations.closed or generations.query != query

        def run() -> None:
            try:
                total = count_matches(
                    data, starts, pattern, end=end, cap=cap, cancelled=cancelled,
                    chunk_bytes=CHUNK_BYTES, pause=PAUSE_SECONDS, on_progress=lambda new: _emit(results, "counted", query, new, None),
                )
            except (ValueError, OSError):
                log.exception("Counting matches in %s failed", view.path)
                total = None
            if not cancelled():
                _emit(results, "counted", query, [], total)

        self._executor.submit(run)

    def _on_found(self, query: int, find: int, match: LineMatch | None) -> None:
        if query != self._generations.query or find != self._generations.find:
            return  # an answer for a query or a step that is gone
        self._finding = False
        if match is None:
            self._not_found = True
            self._current = None
            self.view.clear_match()
        else:
            self._current = match
            self.view.show_match(*match)
        self._refresh_label()
        if match is not None and self._queued_steps:
            self._queued_steps -= 1
            self._start_find(self._finding_forward, *self._start_point(self._finding_forward))

    def _on_counted(self, query: int, new: list[LineMatch], total) -> None:
        if query != self._generations.query:
            return
        self._counted.extend(new)
        if total is not None:
            self._counting = False
            self._capped = total.capped
        self._refresh_label()

    def _on_indexing_finished(self, _lines: int) -> None:
        # Searches so far saw only the lines indexed when they started: count them all again.
        if self.isVisible() and self._pattern is not None:
            was_finding, forward = self._finding, self._finding_forward
            self._generations.query += 1
            self._start_count()
            if was_finding or self._current is None:
                self._start_find(forward, *self._start_point(forward))
            self._refresh_label()

    def _refresh_label(self) -> None:
        if self.error or self._pattern is None:
            self._show_count("")
            return
        if self._not_found and not self._counted:
            self._show_count("No results")
            return
        index = match_index(self._counted, self._current) if self._current else None
        self._show_count(format_match_count(
            index, len(self._counted), self._counting or self._capped
        ))


def _emit(results: _Results, name: str, *args) -> None:
    try:
        getattr(results, name).emit(*args)
    except RuntimeError:
        pass  # the bar was deleted while the worker ran; nobody waits for the answer


def _make_closer(executor: ThreadPoolExecutor, generations: _Generations):
    # Runs when the bar is destroyed; it must not touch the bar itself.
    def close() -> None:
        generations.closed = True
        executor.shutdown(wait=False, cancel_futures=True)

    return close

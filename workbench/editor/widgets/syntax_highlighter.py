"""Colours a document line by line with the incremental Pygments lexer, a screenful at a time.

Each block stores the interned id of the lexer state it ends in. QSyntaxHighlighter then moves on
to the next block only when that id changed, so typing inside a line re-colours one line, while
opening a triple-quoted string re-colours everything below it.

Lexing is the slow part (50 to 100 microseconds for a line of Python), so no pass lexes more
than ``horizon`` blocks, and the passes this class starts itself have a time budget too. The
blocks past the budget get the DEFERRED state without being lexed, and so does every block after a
DEFERRED one (its start state is not known yet): the DEFERRED blocks are always the end of the
document. A zero-interval timer then lexes them, one budget per event-loop turn, each block from
the state the block before it ended in, so the window paints and takes keys in between.
"""

from __future__ import annotations

import math
from time import perf_counter

from PySide6.QtCore import QTimer
from PySide6.QtGui import QSyntaxHighlighter, QTextBlock, QTextDocument

from workbench.editor.highlighting import LineLexer, format_ranges
from workbench.qt.theme import text_formats, theme_changes

# The block state of a block not lexed yet. Lexer states are interned to ids >= 0, and Qt uses -1
# for "never highlighted", so -2 is free.
DEFERRED = -2

# Blocks one pass lexes at most: opening a file colours a screenful and a margin right away, and
# an edit that changes the state of every line below it re-colours this many at once.
HORIZON_BLOCKS = 200

# Time budgets of the passes started here, so that long lines cannot freeze the window either:
# the first pass may take a frame at 60 Hz, each background step half of one, leaving room to
# paint and take keys. Edits only have the block budget, so what typing re-colours stays exact.
FIRST_PASS_SECONDS = 0.016
STEP_SECONDS = 0.008


class SyntaxHighlighter(QSyntaxHighlighter):
    """Highlights ``document`` with ``line_lexer``: up to ``horizon`` blocks (and
    ``first_pass_seconds``) at once, the rest in the background, up to ``horizon`` blocks (and
    ``step_seconds``) per event-loop turn.

    ``blocks_highlighted`` counts the blocks lexed and coloured (for tests and benchmarks).
    """

    def __init__(
        self,
        document: QTextDocument,
        line_lexer: LineLexer,
        horizon: int = HORIZON_BLOCKS,
        first_pass_seconds: float = FIRST_PASS_SECONDS,
        step_seconds: float = STEP_SECONDS,
    ) -> None:
        super().__init__(document)
        self.line_lexer = line_lexer
        self.formats = text_formats()
        self.horizon = max(1, horizon)
        self.step_seconds = step_seconds
        self.blocks_highlighted = 0
        # What the running pass may still lex; a pass that uses it up defers the rest.
        self._budget = self.horizon
        self._deadline = math.inf
        self._sweep_timer = QTimer(self, interval=0)
        self._sweep_timer.timeout.connect(self._sweep_step)
        # Qt runs an edit's pass in contentsChange before this slot (it connected first), so
        # this refills the budget for the next pass.
        document.contentsChange.connect(self._refill_budget)
        theme_changes().sig_theme_changed.connect(self._on_theme_changed)
        # Qt would highlight the whole document at the first event-loop turn; a pass now, within
        # the budget, makes that one a no-op and colours the first screen before the first paint.
        self._run_timed_pass(first_pass_seconds, self.rehighlight)

    @property
    def is_complete(self) -> bool:
        """True when every block is lexed and coloured (no background work is left)."""
        document = self.document()
        return document is None or document.lastBlock().userState() != DEFERRED

    def highlightBlock(self, text: str) -> None:  # noqa: N802 (Qt override)
        """Colour one block, starting from the state the previous block ended in, or defer it."""
        # Qt calls this for every block of a reload or a big paste: deferring must stay cheap.
        if self._budget <= 0:
            self.setCurrentBlockState(DEFERRED)
            return
        previous_state = self.previousBlockState()
        if previous_state == DEFERRED:
            self.setCurrentBlockState(DEFERRED)
            return
        self.blocks_highlighted += 1
        lexer = self.line_lexer
        tokens, end_state = lexer.lex_line(text, lexer.state_for_id(previous_state))
        for start, length, name in format_ranges(tokens):
            char_format = self.formats.get(name)
            if char_format is not None:
                self.setFormat(start, length, char_format)
        self.setCurrentBlockState(lexer.state_id(end_state) if lexer.is_stateful else 0)
        self._budget -= 1
        if self._budget == 0 or perf_counter() > self._deadline:
            # The rest of this pass is deferred; the sweep takes it up (a spare step is harmless).
            self._budget = 0
            self._sweep_timer.start()

    def _on_theme_changed(self, _theme: str) -> None:
        # The new colours for the first screenful now, the rest as the sweep reaches it.
        self.formats = text_formats()
        self._run_timed_pass(FIRST_PASS_SECONDS, self.rehighlight)

    def _refill_budget(self, _position: int = 0, _removed: int = 0, _added: int = 0) -> None:
        self._budget = self.horizon
        self._deadline = math.inf

    def _run_timed_pass(self, seconds: float, run_pass, *args) -> None:
        self._budget = self.horizon
        self._deadline = perf_counter() + seconds
        try:
            run_pass(*args)
        finally:
            self._refill_budget()

    def _sweep_step(self) -> None:
        block = self._first_deferred_block()
        if block is None:
            self._sweep_timer.stop()
            return
        # Lexing turns each DEFERRED block's state into a lexer state, a change, so Qt's cascade
        # runs on until the budget is spent and stops at the next DEFERRED block.
        self._run_timed_pass(self.step_seconds, self.rehighlightBlock, block)
        if self.is_complete:
            self._sweep_timer.stop()

    def _first_deferred_block(self) -> QTextBlock | None:
        # The DEFERRED blocks are the end of the document, so a binary search finds the first.
        document = self.document()
        if document is None or document.lastBlock().userState() != DEFERRED:
            return None
        low, high = 0, document.blockCount() - 1
        while low < high:
            middle = (low + high) // 2
            if document.findBlockByNumber(middle).userState() == DEFERRED:
                high = middle
            else:
                low = middle + 1
        return document.findBlockByNumber(low)

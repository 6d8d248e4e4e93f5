"""Colours a document line by line with the incremental Pygments lexer.

Each block stores the interned id of the lexer state it ends in. QSyntaxHighlighter then moves on
to the next block only when that id changed, so typing inside a line re-colours one line, while
opening a triple-quoted string re-colours everything below it.
"""

from __future__ import annotations

from PySide6.QtGui import QSyntaxHighlighter, QTextDocument

from workbench.editor.highlighting import LineLexer, format_ranges
from workbench.editor.widgets.theme import text_formats


class SyntaxHighlighter(QSyntaxHighlighter):
    """Highlights ``document`` with ``line_lexer``; counts the blocks it colours (for tests)."""

    def __init__(self, document: QTextDocument, line_lexer: LineLexer) -> None:
        super().__init__(document)
        self.line_lexer = line_lexer
        self.formats = text_formats()
        self.blocks_highlighted = 0

    def highlightBlock(self, text: str) -> None:  # noqa: N802 (Qt override)
        """Colour one block, starting from the state the previous block ended in."""
        self.blocks_highlighted += 1
        lexer = self.line_lexer
        state = lexer.state_for_id(self.previousBlockState())
        tokens, end_state = lexer.lex_line(text, state)
        for start, length, name in format_ranges(tokens):
            char_format = self.formats.get(name)
            if char_format is not None:
                self.setFormat(start, length, char_format)
        self.setCurrentBlockState(lexer.state_id(end_state) if lexer.is_stateful else 0)

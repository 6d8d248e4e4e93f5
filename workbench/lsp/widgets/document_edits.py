"""Putting a new text into an editor as one undo step, changing only the lines that differ (so
the caret, the scroll position and the marks on the other lines stay put)."""

from __future__ import annotations

from PySide6.QtGui import QTextCursor, QTextDocument

from workbench.lsp.results import Span
from workbench.lsp.text_sync import line_edits


def _utf16_length(text: str) -> int:
    # Qt counts positions in UTF-16 units; a character beyond the BMP is two of them.
    return len(text.encode("utf-16-le")) // 2


def document_position(document: QTextDocument, line: int, column: int) -> int:
    """The document position of 1-based ``line`` and 0-based ``column`` (in characters), the
    end of the document for a line past the last."""
    if line > document.blockCount():
        return document.characterCount() - 1
    block = document.findBlockByNumber(max(line, 1) - 1)
    text = block.text()
    return block.position() + _utf16_length(text[:max(0, min(column, len(text)))])


def replace_text(document: QTextDocument, new_text: str) -> bool:
    """Make ``document`` hold ``new_text`` in one undo step; False when it already did."""
    old_text = document.toPlainText()
    edits = line_edits(old_text, new_text)
    if not edits:
        return False
    cursor = QTextCursor(document)
    cursor.beginEditBlock()
    try:
        # From the last edit to the first, so each one's positions are still those of the old text.
        for edit in reversed(edits):
            _replace(document, cursor, edit.span, edit.new_text)
    finally:
        cursor.endEditBlock()
    return True


def _replace(document: QTextDocument, cursor: QTextCursor, span: Span, text: str) -> None:
    start = document_position(document, span.line, span.column)
    end = document_position(document, span.end_line, span.end_column)
    cursor.setPosition(start)
    cursor.setPosition(max(start, end), QTextCursor.MoveMode.KeepAnchor)
    cursor.insertText(text)

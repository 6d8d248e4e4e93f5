"""The extra selections that mark find matches, shared by every text view the find bar drives."""

from __future__ import annotations

from PySide6.QtGui import QColor, QTextCursor, QTextDocument
from PySide6.QtWidgets import QTextEdit

from workbench.qt import theme


def find_match_selections(document: QTextDocument, spans: list[tuple[int, int]]) -> list[QTextEdit.ExtraSelection]:
    """One extra selection per (start, end) document span, with the find-match background."""
    selections = []
    for start, end in spans:
        selection = QTextEdit.ExtraSelection()
        selection.format.setBackground(QColor(theme.FIND_MATCH))
        cursor = QTextCursor(document)
        cursor.setPosition(start)
        cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        selection.cursor = cursor
        selections.append(selection)
    return selections

"""The wavy underlines that mark diagnostics (red for errors, yellow for warnings)."""

from __future__ import annotations

from PySide6.QtGui import QColor, QTextCharFormat, QTextCursor, QTextDocument
from PySide6.QtWidgets import QTextEdit

from workbench.editor.diagnostics import EditorDiagnostic
from workbench.qt import theme


def diagnostic_selections(document: QTextDocument,
                          diagnostics: list[EditorDiagnostic]) -> list[QTextEdit.ExtraSelection]:
    """One extra selection per diagnostic, underlining its span (or its whole line when the span
    is empty); diagnostics past the end of the text are left out."""
    selections = []
    for diagnostic in diagnostics:
        block = document.findBlockByNumber(diagnostic.line - 1)
        if not block.isValid():
            continue
        length = len(block.text())
        start = max(0, min(diagnostic.start, length))
        end = max(start, min(diagnostic.end, length))
        if start == end:
            start, end = 0, length
            if start == end:
                continue  # an empty line: nothing to underline, the tooltip and status still tell
        char_format = QTextCharFormat()
        char_format.setUnderlineStyle(QTextCharFormat.UnderlineStyle.WaveUnderline)
        colour = theme.DIAGNOSTIC_WARNING if diagnostic.severity == "warning" else theme.DIAGNOSTIC_ERROR
        char_format.setUnderlineColor(QColor(colour))
        cursor = QTextCursor(block)
        cursor.setPosition(block.position() + start)
        cursor.setPosition(block.position() + end, QTextCursor.MoveMode.KeepAnchor)
        selection = QTextEdit.ExtraSelection()
        selection.format = char_format
        selection.cursor = cursor
        selections.append(selection)
    return selections

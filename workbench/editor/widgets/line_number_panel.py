"""The gutter left of the editor with line numbers, painted only for the visible lines."""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent
from PySide6.QtWidgets import QPlainTextEdit, QWidget

from workbench.qt import theme


class LineNumberPanel(QWidget):
    """Line numbers for a QPlainTextEdit; the editor reserves room for it with its margins."""

    PADDING = 8

    def __init__(self, editor: QPlainTextEdit) -> None:
        super().__init__(editor)
        self.editor = editor
        self._margin = -1
        editor.blockCountChanged.connect(self.update_width)
        editor.updateRequest.connect(self._on_update_request)
        editor.cursorPositionChanged.connect(self.update)
        self.update_width()

    def width_needed(self) -> int:
        """Pixels wide enough for the largest line number."""
        digits = max(3, len(str(max(1, self.editor.blockCount()))))
        return self.PADDING * 2 + self.editor.fontMetrics().horizontalAdvance("9") * digits

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt override)
        return QSize(self.width_needed(), 0)

    def update_width(self, *_: object) -> None:
        """Make room in the editor's margin for the current number of digits."""
        width = self.width_needed()
        # Qt asks for this on every repaint of the whole viewport (once per highlighted line
        # while a file is being coloured); setting unchanged margins relayouts for nothing.
        if width != self._margin:
            self._margin = width
            self.editor.setViewportMargins(width, 0, 0, 0)

    def place(self) -> None:
        """Follow the editor's geometry (called from the editor's resize)."""
        rect = self.editor.contentsRect()
        self.setGeometry(QRect(rect.left(), rect.top(), self.width_needed(), rect.height()))

    def _on_update_request(self, rect: QRect, dy: int) -> None:
        if dy:
            self.scroll(0, dy)
        else:
            self.update(0, rect.y(), self.width(), rect.height())
        if rect.contains(self.editor.viewport().rect()):
            self.update_width()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt override)
        painter = QPainter(self)
        painter.fillRect(event.rect(), QColor(theme.GUTTER_BACKGROUND))
        editor = self.editor
        current = editor.textCursor().blockNumber()
        block = editor.firstVisibleBlock()
        top = round(editor.blockBoundingGeometry(block).translated(editor.contentOffset()).top())
        height = editor.fontMetrics().height()
        painter.setFont(editor.font())
        while block.isValid() and top <= event.rect().bottom():
            bottom = top + round(editor.blockBoundingRect(block).height())
            if block.isVisible() and bottom >= event.rect().top():
                number = block.blockNumber()
                painter.setPen(QColor(
                    theme.GUTTER_CURRENT_NUMBER if number == current else theme.GUTTER_NUMBER
                ))
                painter.drawText(
                    0, top, self.width() - self.PADDING, height,
                    Qt.AlignmentFlag.AlignRight, str(number + 1),
                )
            block = block.next()
            top = bottom

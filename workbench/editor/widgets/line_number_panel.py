"""The gutter left of the editor with line numbers, painted only for the visible lines.

Other capabilities mark lines here (the debugger's breakpoints): they ask for a strip left of
the numbers with ``set_marker_width``, paint in it through ``marker_painters``, and hear clicks
on a line through ``sig_line_clicked`` and ``sig_line_menu_requested``.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QPoint, QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QContextMenuEvent, QMouseEvent, QPainter, QPaintEvent
from PySide6.QtWidgets import QPlainTextEdit, QWidget

from workbench.qt import theme


class LineNumberPanel(QWidget):
    """Line numbers for a QPlainTextEdit; the editor reserves room for it with its margins."""

    PADDING = 8

    sig_line_clicked = Signal(int)
    """The gutter was clicked (left button) beside this 1-based line."""

    sig_line_menu_requested = Signal(int, QPoint)
    """A context menu was asked for beside this 1-based line, at this global position."""

    def __init__(self, editor: QPlainTextEdit) -> None:
        super().__init__(editor)
        self.editor = editor
        self._margin = -1
        self.marker_width = 0
        self.marker_painters: list[Callable[[QPainter, int, QRect], None]] = []
        """Each is called with (painter, 1-based line, the line's rectangle in the marker
        strip) for every visible line."""
        editor.blockCountChanged.connect(self.update_width)
        editor.updateRequest.connect(self._on_update_request)
        editor.cursorPositionChanged.connect(self.update)
        self.update_width()

    def width_needed(self) -> int:
        """Pixels wide enough for the largest line number."""
        digits = max(3, len(str(max(1, self.editor.blockCount()))))
        return self.marker_width + self.PADDING * 2 + self.editor.fontMetrics().horizontalAdvance("9") * digits

    def set_marker_width(self, width: int) -> None:
        """Keep a strip ``width`` pixels wide left of the numbers for markers."""
        self.marker_width = max(0, width)
        self.update_width()
        self.place()
        self.update()

    def line_at(self, y: float) -> int | None:
        """The 1-based line at height ``y`` of the gutter (None below the last line)."""
        editor = self.editor
        block = editor.cursorForPosition(QPoint(0, int(y))).block()
        if not block.isValid():
            return None
        bottom = editor.blockBoundingGeometry(block).translated(editor.contentOffset()).bottom()
        return block.blockNumber() + 1 if y <= bottom else None

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 (Qt override)
        line = self.line_at(event.position().y())
        if event.button() == Qt.MouseButton.LeftButton and line is not None:
            self.sig_line_clicked.emit(line)
            event.accept()
            return
        super().mousePressEvent(event)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:  # noqa: N802 (Qt override)
        line = self.line_at(event.pos().y())
        if line is not None and self.receivers(self.sig_line_menu_requested) > 0:
            self.sig_line_menu_requested.emit(line, event.globalPos())
            event.accept()
            return
        super().contextMenuEvent(event)

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
                for paint_marker in self.marker_painters:
                    paint_marker(painter, number + 1, QRect(0, top, self.marker_width, bottom - top))
            block = block.next()
            top = bottom

"""A run's log: stdout and stderr as they arrive, with traceback lines as links to the editor."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QMouseEvent, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from workbench.training.widgets.log_links import find_links, link_at
from workbench.qt import theme

# Enough for any traceback and a long stretch of training output; older lines scroll away.
MAX_LOG_LINES = 20_000
STDERR_COLOUR = "#a1260d"
# Workbench's own notes in a run's log ("workbench: job step 2.0 stopped on request") are
# neither the trainer's output nor an error, on either stream.
NOTE_PREFIX = "workbench: "
NOTE_COLOUR = "#777777"
LINK_COLOUR = "#0b62c4"


class LogText(QPlainTextEdit):
    """Read-only log text; a click on a traceback location emits ``sig_link_activated``."""

    sig_link_activated = Signal(str, int)
    """A traceback location was clicked: (path as the log prints it, 1-based line)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setReadOnly(True)
        self.setUndoRedoEnabled(False)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setMaximumBlockCount(MAX_LOG_LINES)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                     | Qt.TextInteractionFlag.TextSelectableByKeyboard)
        font = self.font()
        font.setFamily("monospace")
        font.setStyleHint(font.StyleHint.Monospace)
        self.setFont(font)
        self.viewport().setMouseTracking(True)
        self._plain = QTextCharFormat()
        self._error = QTextCharFormat()
        self._error.setForeground(QColor(STDERR_COLOUR))
        self._note = QTextCharFormat()
        self._note.setForeground(QColor(NOTE_COLOUR))
        self._link = QTextCharFormat()
        self._link.setForeground(QColor(LINK_COLOUR))
        self._link.setFontUnderline(True)

    def append_text(self, text: str, stream: str = "stdout") -> None:
        """Add whole lines at the end (without moving the view unless it follows the end)."""
        base = self._error if stream == "stderr" else self._plain
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.beginEditBlock()
        for line in text.splitlines(keepends=True):
            if line.startswith(NOTE_PREFIX):
                cursor.insertText(line, self._note)
                continue
            column = 0
            for link in find_links(line):
                cursor.insertText(line[column:link.start], base)
                cursor.insertText(line[link.start:link.end], self._link)
                column = link.end
            cursor.insertText(line[column:], base)
        cursor.endEditBlock()

    def link_at_point(self, point):
        cursor = self.cursorForPosition(point)
        block = cursor.block()
        # cursorForPosition snaps to the nearest gap between characters; the character under
        # the mouse is the one whose box holds the point.
        column = cursor.positionInBlock()
        if column > 0 and self.cursorRect(cursor).left() > point.x():
            column -= 1
        return link_at(block.text(), column)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 (Qt override)
        over_link = self.link_at_point(event.position().toPoint()) is not None
        self.viewport().setCursor(Qt.CursorShape.PointingHandCursor if over_link else Qt.CursorShape.IBeamCursor)
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802 (Qt override)
        super().mouseReleaseEvent(event)
        if event.button() == Qt.MouseButton.LeftButton and not self.textCursor().hasSelection():
            link = self.link_at_point(event.position().toPoint())
            if link is not None:
                self.sig_link_activated.emit(link.path, link.line)


class LogView(QWidget):
    """The log text with a Follow toggle (keep the newest line in view)."""

    sig_link_activated = Signal(str, int)
    """A traceback location was clicked: (path, 1-based line)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.text = LogText(self)
        self.text.sig_link_activated.connect(self.sig_link_activated)
        self.follow = QCheckBox("Follow")
        self.follow.setChecked(True)
        self.follow.setToolTip("Keep the newest output in view")
        self.follow.toggled.connect(lambda on: on and self._scroll_to_end())
        self.note = QLabel("")
        theme.set_themed_style_sheet(self.note, "color: @MUTED_TEXT;")
        bar = QHBoxLayout()
        bar.setContentsMargins(4, 2, 4, 2)
        bar.addWidget(self.note, 1)
        bar.addWidget(self.follow)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addLayout(bar)
        layout.addWidget(self.text, 1)
        self.text.verticalScrollBar().valueChanged.connect(self._on_scrolled)
        self.text.verticalScrollBar().rangeChanged.connect(self._on_range_changed)
        self._appending = False

    def clear(self, note: str = "") -> None:
        self.text.clear()
        self.note.setText(note)

    def append(self, text: str, stream: str = "stdout") -> None:
        self._appending = True
        try:
            self.text.append_text(text, stream)
            if self.follow.isChecked():
                self._scroll_to_end()
        finally:
            self._appending = False

    def _scroll_to_end(self) -> None:
        bar = self.text.verticalScrollBar()
        bar.setValue(bar.maximum())

    def _on_range_changed(self, _minimum: int, _maximum: int) -> None:
        if self.follow.isChecked():
            self._appending = True
            try:
                self._scroll_to_end()
            finally:
                self._appending = False

    def _on_scrolled(self, value: int) -> None:
        # Scrolling up to read stops following; scrolling back to the end follows again.
        if self._appending:
            return
        at_end = value >= self.text.verticalScrollBar().maximum()
        if at_end != self.follow.isChecked():
            self.follow.setChecked(at_end)

"""A one-field inline bar: type "line[:column]", Enter jumps there, Esc closes."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QWidget

from workbench.editor.errors import EditorError
from workbench.editor.go_to_line import parse_line_and_column
from workbench.qt import theme


class GoToLineBar(QWidget):
    """Asks for a position; ``go_to(line, column)`` is called with what the user typed."""

    sig_closed = Signal()
    """The bar closed (after a jump or Esc); the editor should take the focus back."""

    def __init__(
        self, go_to: Callable[[int, int], None], current_line: Callable[[], int],
        line_count: Callable[[], int], parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._go_to = go_to
        self._current_line = current_line
        self._line_count = line_count
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 3, 6, 3)
        layout.addWidget(QLabel("Go to line:"))
        self.entry = QLineEdit()
        self.entry.installEventFilter(self)
        layout.addWidget(self.entry, 1)
        self.hint = QLabel("")
        layout.addWidget(self.hint)
        self.hide()

    def open(self) -> None:
        """Show the bar with the file's line range as a hint."""
        self.entry.clear()
        self.entry.setPlaceholderText(f"line[:column], 1 to {self._line_count()}")
        self.hint.setText(f"now on line {self._current_line()}")
        theme.set_themed_style_sheet(self.hint, "")
        self.show()
        self.entry.setFocus()

    def accept(self) -> bool:
        """Jump to what was typed; False (and a red hint) when it is not a position."""
        try:
            line, column = parse_line_and_column(self.entry.text(), self._current_line())
        except EditorError as error:
            self.hint.setText(str(error))
            theme.set_themed_style_sheet(self.hint, "color: @ERROR_TEXT;")
            return False
        self._go_to(line, column)
        self.close_bar()
        return True

    def close_bar(self) -> None:
        """Hide the bar."""
        self.hide()
        self.sig_closed.emit()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt override)
        if watched is self.entry and event.type() == QEvent.Type.KeyPress and isinstance(
            event, QKeyEvent
        ):
            if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                self.accept()
                return True
            if event.key() == Qt.Key.Key_Escape:
                self.close_bar()
                return True
        return super().eventFilter(watched, event)

"""A read-only hex view for binary files: offset, sixteen bytes in hex, printable ASCII."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent, QTextCursor
from PySide6.QtWidgets import QPlainTextEdit, QWidget

from workbench.editor.go_to_line import clamp_line
from workbench.editor.hex_dump import hex_dump
from workbench.editor.options import EditorOptions
from workbench.qt import theme
from workbench.editor.widgets.find_marks import find_match_selections


class HexView(QPlainTextEdit):
    """Shows ``data`` as a hex dump; the find bar can search the dump's text."""

    sig_find_next_requested = Signal()
    """F3 was pressed: go to the next match of the find bar."""

    sig_find_previous_requested = Signal()
    """Shift+F3 was pressed: go to the previous match of the find bar."""

    sig_escape_pressed = Signal()
    """Esc was pressed (closes the find bar)."""

    def __init__(self, data: bytes, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFont(theme.editor_font())
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setStyleSheet(theme.editor_style_sheet())
        theme.theme_changes().sig_theme_changed.connect(self._on_theme_changed)
        self.setPlainText(hex_dump(data))
        self.setReadOnly(True)
        # Read-only text hides the caret; keyboard navigation still needs to see where it is.
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
            | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )

    def set_options(self, options: EditorOptions) -> None:
        """Show the dump in the editor's font and size (with the window's zoom)."""
        self.setFont(theme.editor_font(options.font_family, options.shown_font_size))

    def _on_theme_changed(self, _theme: str) -> None:
        self.setStyleSheet(theme.editor_style_sheet())

    def cursor_position(self) -> tuple[int, int]:
        """The cursor as a 1-based (row, column) of the dump."""
        cursor = self.textCursor()
        return cursor.blockNumber() + 1, cursor.positionInBlock() + 1

    def set_cursor_position(self, line: int, column: int = 1) -> None:
        """Move the cursor to 1-based (row, column) of the dump, clamped, and show it."""
        block = self.document().findBlockByNumber(clamp_line(line, self.document().blockCount()) - 1)
        cursor = QTextCursor(block)
        cursor.setPosition(block.position() + max(0, min(column, block.length()) - 1))
        self.setTextCursor(cursor)
        self.centerCursor()

    def set_find_highlights(self, spans: list[tuple[int, int]]) -> None:
        """Mark find matches given as (start, end) document positions."""
        self.setExtraSelections(find_match_selections(self.document(), spans))

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt override)
        modifiers = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
        shift = modifiers == Qt.KeyboardModifier.ShiftModifier
        plain = modifiers == Qt.KeyboardModifier.NoModifier
        if event.key() == Qt.Key.Key_F3 and (plain or shift):
            (self.sig_find_previous_requested if shift else self.sig_find_next_requested).emit()
        elif event.key() == Qt.Key.Key_Escape and plain:
            self.sig_escape_pressed.emit()
        else:
            super().keyPressEvent(event)

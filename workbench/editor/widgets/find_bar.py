"""The inline find and replace bar: plain text or regular expression, case, whole word."""

from __future__ import annotations

import re

from PySide6.QtCore import QEvent, QObject, QRegularExpression, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent, QTextCursor
from PySide6.QtWidgets import (
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QToolButton,
    QWidget,
)
from workbench.qt import theme

COUNT_LABEL_WIDTH = 150

# Painting a highlight per match gets slow beyond this; the count stays exact.
MAX_HIGHLIGHTED_MATCHES = 2000

_GROUP_REFERENCE = re.compile(r"\$(\d+)|\\(\d+)|\\n|\\t|\\\\")


class FindControls(QWidget):
    """The find bar's fields, option buttons, count label and keys, without a search behind them.

    Subclasses search something (``FindBar`` a document, ``LargeFindBar`` a huge file) by
    implementing ``find_next``, ``find_previous``, ``close_bar`` and ``_on_query_changed``.
    """

    sig_closed = Signal()
    """The bar was closed (Esc or its close button); the editor should take the focus back."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.error = ""
        self._build()

    def _build(self) -> None:
        layout = QGridLayout(self)
        layout.setContentsMargins(6, 3, 6, 3)
        layout.setHorizontalSpacing(4)
        layout.setVerticalSpacing(3)
        self.find_edit = QLineEdit(placeholderText="Find")
        self.find_edit.setClearButtonEnabled(True)
        self.replace_edit = QLineEdit(placeholderText="Replace")
        self.regex_button = self._toggle(".*", "Use regular expression")
        self.case_button = self._toggle("Aa", "Match case")
        self.word_button = self._toggle("ab", "Match whole word")
        self.count_label = QLabel("")
        self.count_label.setFixedWidth(COUNT_LABEL_WIDTH)
        self.previous_button = self._button("↑", "Previous match (Shift+Enter)", self.find_previous)
        self.next_button = self._button("↓", "Next match (Enter)", self.find_next)
        self.close_button = self._button("✕", "Close (Esc)", self.close_bar)
        self.replace_button = self._button("Replace", "Replace this match", self.replace_current)
        self.replace_all_button = self._button("Replace all", "Replace every match", self.replace_all)
        # The two fields share column 0 so they line up; the buttons sit beside them.
        find_tools, replace_tools = QHBoxLayout(), QHBoxLayout()
        for widget in (
            self.regex_button, self.case_button, self.word_button, self.count_label,
            self.previous_button, self.next_button, self.close_button,
        ):
            find_tools.addWidget(widget)
        replace_tools.addWidget(self.replace_button)
        replace_tools.addWidget(self.replace_all_button)
        replace_tools.addStretch(1)
        layout.addWidget(self.find_edit, 0, 0)
        layout.addLayout(find_tools, 0, 1)
        layout.addWidget(self.replace_edit, 1, 0)
        layout.addLayout(replace_tools, 1, 1)
        layout.setColumnStretch(0, 1)
        self.find_edit.textChanged.connect(self._on_query_changed)
        self.find_edit.installEventFilter(self)
        self.replace_edit.installEventFilter(self)

    def _toggle(self, text: str, tip: str) -> QToolButton:
        button = QToolButton(text=text, toolTip=tip, checkable=True)
        button.toggled.connect(self._on_query_changed)
        return button

    def _button(self, text: str, tip: str, action) -> QToolButton:
        button = QToolButton(text=text, toolTip=tip)
        button.clicked.connect(lambda: action())
        return button

    def set_query(
        self, text: str, regex: bool = False, match_case: bool = False, whole_word: bool = False
    ) -> None:
        """Set what to look for and the three options at once."""
        for button, value in (
            (self.regex_button, regex), (self.case_button, match_case), (self.word_button, whole_word)
        ):
            button.blockSignals(True)
            button.setChecked(value)
            button.blockSignals(False)
        self.find_edit.blockSignals(True)
        self.find_edit.setText(text)
        self.find_edit.blockSignals(False)
        self._on_query_changed()

    def count_text(self) -> str:
        """What the count label says: "3 of 17", "17 results", "No results" or the regex error."""
        return self.error or self.count_label.text()

    def find_next(self) -> bool:
        """Go to the next match."""
        raise NotImplementedError

    def find_previous(self) -> bool:
        """Go to the previous match."""
        raise NotImplementedError

    def close_bar(self) -> None:
        """Hide the bar."""
        self.hide()
        self.sig_closed.emit()

    def replace_current(self) -> bool:
        """Replace the current match (nothing to replace here)."""
        return False

    def replace_all(self) -> int:
        """Replace every match (nothing to replace here)."""
        return 0

    def _on_query_changed(self, *_: object) -> None:
        raise NotImplementedError

    def _show_replace_row(self, visible: bool) -> None:
        for widget in (self.replace_edit, self.replace_button, self.replace_all_button):
            widget.setVisible(visible)

    def _show_count(self, text: str) -> None:
        """Show ``text`` in the count label, or ``self.error`` in red when it is set."""
        if self.error:
            self.count_label.setText(self.count_label.fontMetrics().elidedText(
                self.error, Qt.TextElideMode.ElideRight, COUNT_LABEL_WIDTH))
            self.count_label.setToolTip(self.error)
            theme.set_themed_style_sheet(self.find_edit, "QLineEdit { border: 1px solid @ERROR_TEXT;"
                                                         " color: @ERROR_TEXT; }")
            theme.set_themed_style_sheet(self.count_label, "color: @ERROR_TEXT;")
            return
        theme.set_themed_style_sheet(self.find_edit, "")
        theme.set_themed_style_sheet(self.count_label, "")
        self.count_label.setToolTip("")
        self.count_label.setText(text)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt override)
        if event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            key = event.key()
            shift = bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                if watched is self.replace_edit and not shift:
                    self.replace_current()
                else:
                    (self.find_previous if shift else self.find_next)()
                return True
            if key == Qt.Key.Key_F3:
                (self.find_previous if shift else self.find_next)()
                return True
            if key == Qt.Key.Key_Escape:
                self.close_bar()
                return True
        return super().eventFilter(watched, event)


class FindBar(FindControls):
    """Finds and replaces in ``editor``; never raises on a bad regular expression."""

    def __init__(self, editor: QPlainTextEdit, parent: QWidget | None = None) -> None:
        self.editor = editor
        self._matches: list[tuple[int, int, list[str]]] | None = None
        super().__init__(parent)
        self._refresh_timer = QTimer(self, singleShot=True, interval=150)
        self._refresh_timer.timeout.connect(self._refresh)
        editor.document().contentsChange.connect(self._on_document_changed)
        editor.cursorPositionChanged.connect(self._on_cursor_moved)
        self.hide()

    # Opening and closing ----------------------------------------------------------------

    def open(self, replace: bool = False) -> None:
        """Show the bar (with the replace row when ``replace``), seeded with a selected word."""
        selected = self.editor.textCursor().selectedText()
        if selected and "\u2029" not in selected:
            self.find_edit.setText(
                QRegularExpression.escape(selected) if self.regex_button.isChecked() else selected
            )
        self._show_replace_row(replace)
        self.show()
        self.find_edit.setFocus()
        self.find_edit.selectAll()
        self._refresh()

    def close_bar(self) -> None:
        """Hide the bar and clear its highlights."""
        self.editor.set_find_highlights([])
        super().close_bar()

    # Searching --------------------------------------------------------------------------

    def pattern(self) -> QRegularExpression | None:
        """The query as a regular expression, or None (with ``error`` set) when it is invalid."""
        text = self.find_edit.text()
        if not text:
            self.error = ""
            return None
        source = text if self.regex_button.isChecked() else QRegularExpression.escape(text)
        if self.word_button.isChecked():
            source = rf"\b(?:{source})\b"
        options = (
            QRegularExpression.PatternOption.MultilineOption
            | QRegularExpression.PatternOption.UseUnicodePropertiesOption
        )
        if not self.case_button.isChecked():
            options |= QRegularExpression.PatternOption.CaseInsensitiveOption
        expression = QRegularExpression(source, options)
        if not expression.isValid():
            self.error = f"Invalid regular expression: {expression.errorString()}"
            return None
        self.error = ""
        return expression

    def matches(self) -> list[tuple[int, int]]:
        """Every non-empty match as (start, end) document positions, in order."""
        return [(start, end) for start, end, _ in self._all_matches()]

    def _all_matches(self) -> list[tuple[int, int, list[str]]]:
        if self._matches is None:
            found = []
            expression = self.pattern()
            if expression is not None:
                iterator = expression.globalMatch(self.editor.document().toPlainText())
                while iterator.hasNext():
                    match = iterator.next()
                    # Empty matches (as of "^" or "x*") select nothing and cannot be stepped through.
                    if match.capturedLength() > 0:
                        found.append((
                            match.capturedStart(), match.capturedEnd(), match.capturedTexts()
                        ))
            self._matches = found
        return self._matches

    def current_index(self) -> int | None:
        """0-based index of the match the editor's selection is on, or None."""
        cursor = self.editor.textCursor()
        span = (cursor.selectionStart(), cursor.selectionEnd())
        for index, (start, end, _) in enumerate(self._all_matches()):
            if (start, end) == span:
                return index
            if start > span[0]:
                break
        return None

    def find_next(self) -> bool:
        """Select the next match after the selection, wrapping at the end; False when none."""
        matches = self._all_matches()
        if not matches:
            self._refresh()
            return False
        after = self.editor.textCursor().selectionEnd()
        target = next((m for m in matches if m[0] >= after), matches[0])
        self._select(target)
        return True

    def find_previous(self) -> bool:
        """Select the match before the selection, wrapping at the start; False when none."""
        matches = self._all_matches()
        if not matches:
            self._refresh()
            return False
        before = self.editor.textCursor().selectionStart()
        target = next((m for m in reversed(matches) if m[0] < before), matches[-1])
        self._select(target)
        return True

    def _select(self, match: tuple[int, int, list[str]]) -> None:
        cursor = self.editor.textCursor()
        cursor.setPosition(match[0])
        cursor.setPosition(match[1], QTextCursor.MoveMode.KeepAnchor)
        self.editor.setTextCursor(cursor)
        self.editor.centerCursor()
        self._refresh()

    # Replacing --------------------------------------------------------------------------

    def replace_current(self) -> bool:
        """Replace the selected match and move to the next one; selects a match first if needed."""
        if self.editor.isReadOnly():
            return False
        index = self.current_index()
        if index is None:
            return self.find_next()
        start, end, groups = self._all_matches()[index]
        cursor = self.editor.textCursor()
        cursor.insertText(self._replacement(groups))
        self.editor.setTextCursor(cursor)
        self._matches = None
        self.find_next()
        return True

    def replace_all(self) -> int:
        """Replace every match as one undo step; returns how many were replaced."""
        matches = self._all_matches()
        if not matches or self.editor.isReadOnly():
            return 0
        cursor = QTextCursor(self.editor.document())
        cursor.beginEditBlock()
        # Back to front, so the positions of the matches not yet replaced stay valid.
        for start, end, groups in reversed(matches):
            cursor.setPosition(start)
            cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
            cursor.insertText(self._replacement(groups))
        cursor.endEditBlock()
        self._matches = None
        self._refresh()
        return len(matches)

    def _replacement(self, groups: list[str]) -> str:
        template = self.replace_edit.text()
        if not self.regex_button.isChecked():
            return template

        def expand(reference: re.Match) -> str:
            number = reference.group(1) or reference.group(2)
            if number is not None:
                index = int(number)
                return groups[index] if index < len(groups) else ""
            return {"\\n": "\n", "\\t": "\t", "\\\\": "\\"}[reference.group(0)]

        return _GROUP_REFERENCE.sub(expand, template)

    # Display ----------------------------------------------------------------------------

    def _on_query_changed(self, *_: object) -> None:
        self._matches = None
        # Search as you type from where the selection starts, so the match under it stays.
        if self.isVisible() and self._all_matches():
            cursor = self.editor.textCursor()
            cursor.setPosition(cursor.selectionStart())
            self.editor.setTextCursor(cursor)
            self.find_next()
        else:
            self._refresh()

    def _on_cursor_moved(self) -> None:
        if self.isVisible() and not self._refresh_timer.isActive():
            self._refresh_label()

    def _on_document_changed(self, *_: object) -> None:
        self._matches = None
        if self.isVisible():
            self._refresh_timer.start()

    def _refresh(self) -> None:
        matches = self._refresh_label()
        if self.isVisible():
            self.editor.set_find_highlights(
                [(start, end) for start, end, _ in matches[:MAX_HIGHLIGHTED_MATCHES]]
            )

    def _refresh_label(self) -> list[tuple[int, int, list[str]]]:
        matches = self._all_matches()
        index = self.current_index() if matches and not self.error else None
        if not self.find_edit.text():
            self._show_count("")
        elif not matches:
            self._show_count("No results")
        elif index is None:
            self._show_count(f"{len(matches)} results")
        else:
            self._show_count(f"{index + 1} of {len(matches)}")
        return matches

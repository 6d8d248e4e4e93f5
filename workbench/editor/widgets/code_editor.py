"""The text editing surface: a thin QPlainTextEdit with a gutter and a few typing helpers.

The rules (how far to indent, where a comment goes, which bracket matches) live in the Qt-free
modules of ``workbench.editor``; this class only reads lines from the document and writes the
result back.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, QPoint, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QTextOption,
    QHelpEvent,
    QKeyEvent,
    QPainter,
    QPaintEvent,
    QResizeEvent,
    QTextCursor,
    QTextFormat,
)
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit, QToolTip, QWidget

from workbench.editor.assist import CompletionItem, CompletionProvider, HoverProvider
from workbench.editor.brackets import find_matching_bracket
from workbench.editor.diagnostics import EditorDiagnostic, diagnostic_at
from workbench.editor.go_to_line import clamp_line
from workbench.editor.line_edits import (
    INDENT_WIDTH,
    comment_prefix_for,
    dedent_lines,
    first_non_blank_column,
    indent_for_new_line,
    indent_lines,
    move_lines,
    toggle_comment,
)
from workbench.editor.options import EditorOptions
from workbench.qt import theme
from workbench.editor.widgets.code_assist import CodeAssist
from workbench.editor.widgets.diagnostic_marks import diagnostic_selections
from workbench.editor.widgets.find_marks import find_match_selections
from workbench.editor.widgets.line_number_panel import LineNumberPanel


class CodeEditor(QPlainTextEdit):
    """A monospace, non-wrapping editor with line numbers, bracket matching and smart indent."""

    sig_find_next_requested = Signal()
    """F3 was pressed: go to the next match of the find bar."""

    sig_find_previous_requested = Signal()
    """Shift+F3 was pressed: go to the previous match of the find bar."""

    sig_escape_pressed = Signal()
    """Esc was pressed with nothing of the editor's own to cancel (closes the find bar)."""

    def __init__(self, parent: QWidget | None = None, language: str = "Text only") -> None:
        super().__init__(parent)
        self.language = language
        self.options = EditorOptions()
        """How the text is shown (font, tab width, rulers, wrap, whitespace); see set_options."""
        self.indent_width = INDENT_WIDTH
        self.setFont(theme.editor_font())
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setTabStopDistance(self.fontMetrics().horizontalAdvance(" ") * INDENT_WIDTH)
        self.setStyleSheet(theme.editor_style_sheet())
        theme.theme_changes().sig_theme_changed.connect(self._on_theme_changed)
        self.line_number_panel = LineNumberPanel(self)
        self._find_highlights: list[QTextEdit.ExtraSelection] = []
        self.diagnostics: list[EditorDiagnostic] = []
        self._diagnostic_marks: list[QTextEdit.ExtraSelection] = []
        self._line_marks: dict[str, list[QTextEdit.ExtraSelection]] = {}
        self.bracket_match: tuple[int, int] | None = None
        self.path: Path | None = None
        """The file shown (what completion and hover providers are told)."""
        self.assist = CodeAssist(self)
        self.cursorPositionChanged.connect(self._refresh_highlights)
        self._refresh_highlights()

    # Options and theme -------------------------------------------------------------------

    def set_options(self, options: EditorOptions) -> None:
        """Show the text as ``options`` say: font and size (with the zoom), tab width, rulers,
        word wrap and visible whitespace."""
        self.options = options
        self.setFont(theme.editor_font(options.font_family, options.shown_font_size))
        self.indent_width = options.tab_width
        self.setTabStopDistance(self.fontMetrics().horizontalAdvance(" ") * options.tab_width)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth if options.word_wrap
                             else QPlainTextEdit.LineWrapMode.NoWrap)
        text_option = self.document().defaultTextOption()
        flags = text_option.flags()
        if options.show_whitespace:
            flags |= QTextOption.Flag.ShowTabsAndSpaces
        else:
            flags &= ~QTextOption.Flag.ShowTabsAndSpaces
        text_option.setFlags(flags)
        self.document().setDefaultTextOption(text_option)
        self.line_number_panel.update_width()
        self.line_number_panel.place()
        self.viewport().update()

    def _on_theme_changed(self, _theme: str) -> None:
        self.setStyleSheet(theme.editor_style_sheet())
        self._refresh_highlights()
        self.line_number_panel.update()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt override)
        super().paintEvent(event)
        if not self.options.rulers:
            return
        painter = QPainter(self.viewport())
        painter.setPen(QColor(theme.RULER))
        advance = self.fontMetrics().horizontalAdvance(" ")
        left = self.contentOffset().x() + self.document().documentMargin()
        for column in self.options.rulers:
            x = round(left + advance * column)
            painter.drawLine(x, event.rect().top(), x, event.rect().bottom())

    # Positions --------------------------------------------------------------------------

    def cursor_position(self) -> tuple[int, int]:
        """The cursor as a 1-based (line, column)."""
        cursor = self.textCursor()
        return cursor.blockNumber() + 1, cursor.positionInBlock() + 1

    def set_cursor_position(self, line: int, column: int = 1) -> None:
        """Move the cursor to 1-based (line, column), clamped into the text, and show it."""
        line = clamp_line(line, self.document().blockCount())
        block = self.document().findBlockByNumber(line - 1)
        column = max(1, min(column, block.length()))
        cursor = QTextCursor(block)
        cursor.setPosition(block.position() + column - 1)
        self.setTextCursor(cursor)
        self.centerCursor()

    # Block edits ------------------------------------------------------------------------

    def indent(self) -> None:
        """Indent the selected lines (or the cursor's line) by one level."""
        self._edit_selected_lines(lambda lines: indent_lines(lines, " " * self.indent_width))

    def dedent(self) -> None:
        """Dedent the selected lines (or the cursor's line) by one level."""
        self._edit_selected_lines(lambda lines: dedent_lines(lines, self.indent_width))

    def toggle_comment(self) -> None:
        """Comment or uncomment the selected lines with the language's line comment."""
        prefix = comment_prefix_for(self.language)
        if prefix is None:
            return
        self._edit_selected_lines(lambda lines: toggle_comment(lines, prefix))

    def move_lines(self, step: int) -> None:
        """Move the selected lines (or the cursor's line) one line up (-1) or down (+1), the
        selection with them (Alt+Up / Alt+Down)."""
        first, last = self._selected_block_range()
        document = self.document()
        if self.isReadOnly() or first + step < 0 or last + step >= document.blockCount():
            return
        span_first, span_last = (first - 1, last) if step < 0 else (first, last + 1)
        lines = [document.findBlockByNumber(n).text() for n in range(span_first, span_last + 1)]
        moved = move_lines(lines, first - span_first, last - span_first, step)
        # The selection moves by the neighbour's length (its newline included): the lines keep
        # their text, only their place changes.
        neighbour = document.findBlockByNumber(first - 1 if step < 0 else last + 1)
        shift = -neighbour.length() if step < 0 else neighbour.length()
        anchor, position = self.textCursor().anchor(), self.textCursor().position()
        self._replace_lines(span_first, span_last, moved)
        self._select(anchor + shift, position + shift)

    def duplicate_lines(self) -> None:
        """Copy the selected lines (or the cursor's line) below themselves and select the copy,
        as VS Code's Copy Line Down does."""
        if self.isReadOnly():
            return
        first, last = self._selected_block_range()
        document = self.document()
        lines = [document.findBlockByNumber(n).text() for n in range(first, last + 1)]
        # In the document's own units (UTF-16), not Python's characters.
        end = document.findBlockByNumber(last)
        shift = end.position() + end.length() - document.findBlockByNumber(first).position()
        anchor, position = self.textCursor().anchor(), self.textCursor().position()
        self._replace_lines(first, last, lines + lines)
        self._select(anchor + shift, position + shift)

    def _replace_lines(self, first: int, last: int, lines: list[str]) -> None:
        document = self.document()
        end = document.findBlockByNumber(last)
        cursor = QTextCursor(document)
        cursor.setPosition(document.findBlockByNumber(first).position())
        cursor.setPosition(end.position() + end.length() - 1, QTextCursor.MoveMode.KeepAnchor)
        cursor.beginEditBlock()  # one undo step
        cursor.insertText("\n".join(lines))
        cursor.endEditBlock()

    def _select(self, anchor: int, position: int) -> None:
        cursor = self.textCursor()
        cursor.setPosition(anchor)
        cursor.setPosition(position, QTextCursor.MoveMode.KeepAnchor)
        self.setTextCursor(cursor)
        self.ensureCursorVisible()

    def _selected_block_range(self) -> tuple[int, int]:
        cursor = self.textCursor()
        document = self.document()
        first = document.findBlock(cursor.selectionStart())
        last = document.findBlock(cursor.selectionEnd())
        # A selection that ends at the start of a line (as after selecting whole lines) does not
        # include that line.
        if cursor.hasSelection() and last.blockNumber() > first.blockNumber() and (
            cursor.selectionEnd() == last.position()
        ):
            last = last.previous()
        return first.blockNumber(), last.blockNumber()

    def _edit_selected_lines(self, edit) -> None:
        if self.isReadOnly():
            return
        had_selection = self.textCursor().hasSelection()
        old_cursor = self.textCursor()
        old_column = old_cursor.positionInBlock()
        old_length = old_cursor.block().length()
        first, last = self._selected_block_range()
        document = self.document()
        start = document.findBlockByNumber(first)
        end = document.findBlockByNumber(last)
        cursor = QTextCursor(document)
        cursor.setPosition(start.position())
        cursor.setPosition(end.position() + end.length() - 1, QTextCursor.MoveMode.KeepAnchor)
        old_lines = cursor.selectedText().split("\u2029")
        new_lines = edit(old_lines)
        if new_lines == old_lines:
            return
        cursor.beginEditBlock()
        cursor.insertText("\n".join(new_lines))
        cursor.endEditBlock()
        if had_selection:
            start = document.findBlockByNumber(first)
            end = document.findBlockByNumber(last)
            cursor.setPosition(start.position())
            cursor.setPosition(end.position() + end.length() - 1, QTextCursor.MoveMode.KeepAnchor)
        else:
            # Keep the caret on the same character of the line it was on.
            block = document.findBlockByNumber(first)
            column = max(0, old_column + block.length() - old_length)
            cursor.setPosition(block.position() + min(column, block.length() - 1))
        self.setTextCursor(cursor)

    # Keys -------------------------------------------------------------------------------

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt override)
        key = event.key()
        modifiers = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
        shift = modifiers == Qt.KeyboardModifier.ShiftModifier
        plain = modifiers == Qt.KeyboardModifier.NoModifier
        if self.assist.before_key(event):
            return  # Ctrl+Space, or a key the completion list takes
        if key == Qt.Key.Key_F3 and (plain or shift):
            (self.sig_find_previous_requested if shift else self.sig_find_next_requested).emit()
        elif key == Qt.Key.Key_Escape and plain:
            self.sig_escape_pressed.emit()
        elif self.isReadOnly():
            super().keyPressEvent(event)
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and (plain or shift):
            self._new_line_with_indent()
        elif key == Qt.Key.Key_Tab and plain:
            self._tab()
        elif key == Qt.Key.Key_Backtab or (key == Qt.Key.Key_Tab and shift):
            self.dedent()
        elif key == Qt.Key.Key_Home and (plain or shift):
            self._smart_home(keep_anchor=shift)
        else:
            super().keyPressEvent(event)
        self.assist.after_key(event)

    def _new_line_with_indent(self) -> None:
        cursor = self.textCursor()
        before = cursor.block().text()[: cursor.positionInBlock()]
        indent = indent_for_new_line(before, self.language)
        cursor.beginEditBlock()
        cursor.insertText("\n" + indent)
        cursor.endEditBlock()
        self.ensureCursorVisible()

    def _tab(self) -> None:
        cursor = self.textCursor()
        if cursor.hasSelection() and (
            self.document().findBlock(cursor.selectionStart()).blockNumber()
            != self.document().findBlock(cursor.selectionEnd()).blockNumber()
        ):
            self.indent()
            return
        # Spaces up to the next tab stop, so columns line up as with a real tab.
        column = cursor.positionInBlock() if not cursor.hasSelection() else (
            cursor.selectionStart() - cursor.block().position()
        )
        cursor.insertText(" " * (self.indent_width - column % self.indent_width))
        self.setTextCursor(cursor)

    def _smart_home(self, keep_anchor: bool) -> None:
        cursor = self.textCursor()
        block = cursor.block()
        first = first_non_blank_column(block.text())
        # Home toggles between the first non-blank and column 1, like most code editors.
        target = 0 if cursor.positionInBlock() == first else first
        mode = QTextCursor.MoveMode.KeepAnchor if keep_anchor else QTextCursor.MoveMode.MoveAnchor
        cursor.setPosition(block.position() + target, mode)
        self.setTextCursor(cursor)

    # Completions and hover help (see CodeAssist) ------------------------------------------

    def set_completion_provider(self, provider: CompletionProvider | None) -> None:
        """Offer ``provider``'s completions on Ctrl+Space and while typing (None: no more)."""
        self.assist.completion_provider = provider
        if provider is None:
            self.assist.hide_completions()

    def set_hover_provider(self, provider: HoverProvider | None) -> None:
        """Show ``provider``'s help in a tooltip over the text (diagnostics come first)."""
        self.assist.hover_provider = provider

    @property
    def completion_popup(self):
        """The completion list (None until a completion provider is set)."""
        return self.assist.popup

    def completions_shown(self) -> list[CompletionItem]:
        """The items the completion list shows now (none when it is closed)."""
        return self.assist.completions_shown()

    def hover_text_at(self, point: QPoint) -> str | None:
        """The hover provider's help for the text under ``point`` (viewport coordinates)."""
        return self.assist.hover_text_at(point)

    # Highlights -------------------------------------------------------------------------

    def set_find_highlights(self, spans: list[tuple[int, int]]) -> None:
        """Mark find matches given as (start, end) document positions."""
        selections = find_match_selections(self.document(), spans)
        self._find_highlights = selections
        self._refresh_highlights()

    def set_diagnostics(self, diagnostics: list[EditorDiagnostic]) -> None:
        """Underline these problems (replacing the previous ones); hovering one shows its message."""
        self.diagnostics = list(diagnostics)
        self._diagnostic_marks = diagnostic_selections(self.document(), self.diagnostics)
        self._refresh_highlights()

    def set_line_marks(self, owner: str, selections: list[QTextEdit.ExtraSelection]) -> None:
        """Show another capability's highlights (the debugger's current line), kept under
        ``owner`` until it replaces them (an empty list takes them away)."""
        if selections:
            self._line_marks[owner] = list(selections)
        else:
            self._line_marks.pop(owner, None)
        self._refresh_highlights()

    def _refresh_highlights(self) -> None:
        selections = [self._current_line_selection()]
        for marks in self._line_marks.values():
            selections.extend(marks)
        selections.extend(self._diagnostic_marks)
        selections.extend(self._find_highlights)
        selections.extend(self._bracket_selections())
        self.setExtraSelections(selections)

    def _current_line_selection(self) -> QTextEdit.ExtraSelection:
        selection = QTextEdit.ExtraSelection()
        selection.format.setBackground(QColor(theme.CURRENT_LINE))
        selection.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
        selection.cursor = self.textCursor()
        selection.cursor.clearSelection()
        return selection

    def _bracket_selections(self) -> list[QTextEdit.ExtraSelection]:
        self.bracket_match = None
        cursor = self.textCursor()
        block = cursor.block()
        text = block.text()
        column = cursor.positionInBlock()
        # The bracket after the caret wins; otherwise the one just before it.
        for candidate in (column, column - 1):
            if 0 <= candidate < len(text) and text[candidate] in "()[]{}":
                break
        else:
            return []
        line = block.blockNumber()
        document = self.document()

        def line_text(number: int) -> str | None:
            if number == line:
                return text
            found = document.findBlockByNumber(number)
            return found.text() if found.isValid() else None

        partner = find_matching_bracket(line_text, line, candidate)
        here = block.position() + candidate
        if partner is None:
            return [self._bracket_selection(here, theme.BRACKET_UNMATCHED)]
        there = document.findBlockByNumber(partner[0]).position() + partner[1]
        self.bracket_match = (here, there)
        return [
            self._bracket_selection(here, theme.BRACKET_MATCH),
            self._bracket_selection(there, theme.BRACKET_MATCH),
        ]

    def _bracket_selection(self, position: int, colour: str) -> QTextEdit.ExtraSelection:
        selection = QTextEdit.ExtraSelection()
        selection.format.setBackground(QColor(colour))
        cursor = QTextCursor(self.document())
        cursor.setPosition(position)
        cursor.setPosition(position + 1, QTextCursor.MoveMode.KeepAnchor)
        selection.cursor = cursor
        return selection

    def viewportEvent(self, event: QEvent) -> bool:  # noqa: N802 (Qt override)
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent) and (
            self.diagnostics or self.assist.hover_provider is not None
        ):
            text = None
            if self.diagnostics:
                cursor = self.cursorForPosition(event.pos())
                found = diagnostic_at(self.diagnostics, cursor.blockNumber() + 1, cursor.positionInBlock())
                text = found.message if found is not None else None
            if text is None:
                text = self.assist.hover_text_at(event.pos(), event.globalPos())
            if text:
                QToolTip.showText(event.globalPos(), text, self.viewport())
            else:
                QToolTip.hideText()
            return True
        return super().viewportEvent(event)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt override)
        super().resizeEvent(event)
        self.line_number_panel.place()

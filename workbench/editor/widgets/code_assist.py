"""Completions and hover help in the code editor, from the providers a capability registers.

The editor hands each key to ``before_key`` (Ctrl+Space, and the keys the open completion list
takes) and, once typed, to ``after_key`` (the list follows the typing, or opens when the
provider has something to offer on its own); its tooltip asks ``hover_text_at``.

A provider that answers later (``PENDING``) is given a reply function per question: the list
that shows meanwhile keeps following the typing, and a reply is used only while nothing was
asked since and the caret's line and column are what they were when it was asked.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, QPoint, Qt, QTimer
from PySide6.QtGui import QKeyEvent, QTextCursor
from PySide6.QtWidgets import QPlainTextEdit, QToolTip

from workbench.editor.assist import (
    PENDING,
    CompletionItem,
    CompletionProvider,
    Completions,
    HoverProvider,
    TextPosition,
    ask_completions,
    ask_hover,
    checked_completions,
)
from workbench.editor.widgets.completion_popup import CompletionPopup

# Keys the open completion list handles itself: choose (Enter, Tab) or close (Esc).
LIST_KEYS = (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Tab, Qt.Key.Key_Backtab, Qt.Key.Key_Escape)
# Keys that keep the list open and filter it again.
EDITING_KEYS = (Qt.Key.Key_Backspace, Qt.Key.Key_Delete, Qt.Key.Key_Left, Qt.Key.Key_Right)
COMMAND_MODIFIERS = (Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier
                     | Qt.KeyboardModifier.MetaModifier)


class CodeAssist(QObject):
    """The completion list and hover help of one editor (``editor.path`` names its file)."""

    def __init__(self, editor: QPlainTextEdit):
        super().__init__(editor)
        self.editor = editor
        self.completion_provider: CompletionProvider | None = None
        self.hover_provider: HoverProvider | None = None
        self.popup: CompletionPopup | None = None
        self._completions: Completions | None = None
        self._explicit = False
        self._asked = 0  # counts questions: a late reply to an earlier one is dropped
        self._hover_asked = 0

    # --- keys ---------------------------------------------------------------------------------

    def before_key(self, event: QKeyEvent) -> bool:
        """Handle ``event`` before the editor does; True when it is handled (the editor must
        then leave it alone)."""
        if not self._completing():
            return False
        key = event.key()
        if self.is_showing() and key in LIST_KEYS:
            event.ignore()  # passed back to the list
            return True
        modifiers = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
        if key == Qt.Key.Key_Space and modifiers == Qt.KeyboardModifier.ControlModifier:
            self.request_completions(explicit=True)
            return True
        return False

    def after_key(self, event: QKeyEvent) -> None:
        """The editor has handled ``event``: follow it with the list."""
        self._hover_asked += 1  # typing cancels help still on its way
        if not self._completing():
            return
        text = event.text()
        typed = bool(text) and text.isprintable() and not event.modifiers() & COMMAND_MODIFIERS
        if self.is_showing():
            if typed or event.key() in EDITING_KEYS:
                self.request_completions(self._explicit)
            else:
                self.hide_completions()
        elif typed and not text.isspace():
            self.request_completions(explicit=False)

    # --- completions --------------------------------------------------------------------------

    def request_completions(self, explicit: bool = True) -> bool:
        """Ask the provider what fits at the caret and list it; returns whether a list shows.
        ``explicit``: the user asked (Ctrl+Space); otherwise the provider offers only what is
        clearly wanted."""
        self._explicit = explicit
        self._asked += 1
        found = self._ask(explicit)
        if found is PENDING:
            # Until the answer comes, the list that shows follows the typing if it still can.
            if self.is_showing() and self._completions is not None and self._caret_in(self._completions):
                return self._show(self._completions)
            self._hide_list()
            return False
        return self._show(found)

    def _show(self, found: Completions | None) -> bool:
        if found is None:
            self._hide_list()
            return False
        if self.popup is None:
            self.popup = CompletionPopup(self.editor, self._insert)
        self._completions = found
        editor = self.editor
        cursor = editor.textCursor()
        block = cursor.block()
        typed = block.text()[found.start:cursor.positionInBlock()]
        start = QTextCursor(block)
        start.setPosition(block.position() + found.start)
        shown = self.popup.show_items(found.items, typed, editor.cursorRect(start).translated(editor.viewport().pos()))
        if not shown:
            self._completions = None
        return shown

    def is_showing(self) -> bool:
        return self.popup is not None and self.popup.is_visible()

    def completions_shown(self) -> list[CompletionItem]:
        """The items the list shows now (none when it is closed)."""
        return list(self.popup.items) if self.is_showing() else []

    def hide_completions(self) -> None:
        self._asked += 1
        self._hide_list()

    def _hide_list(self) -> None:
        self._completions = None
        if self.popup is not None:
            self.popup.hide()

    def _caret_in(self, found: Completions) -> bool:
        cursor = self.editor.textCursor()
        return not cursor.hasSelection() and found.start <= cursor.positionInBlock()

    def _completing(self) -> bool:
        return self.completion_provider is not None and not self.editor.isReadOnly()

    def _ask(self, explicit: bool):
        cursor = self.editor.textCursor()
        if self.completion_provider is None or cursor.hasSelection():
            return None
        block = cursor.block()
        line, column, text = block.blockNumber() + 1, cursor.positionInBlock(), block.text()
        asked = self._asked

        def reply(answer) -> None:
            if asked != self._asked or self._caret_place() != (line, column, text):
                return  # asked again since, or the text or the caret moved
            self._show(checked_completions(answer, position))

        position = TextPosition(self._path(), line, column, text, explicit, reply)
        return ask_completions(self.completion_provider, position)

    def _caret_place(self) -> tuple[int, int, str]:
        cursor = self.editor.textCursor()
        block = cursor.block()
        return block.blockNumber() + 1, cursor.positionInBlock(), block.text()

    def _insert(self, item: CompletionItem) -> None:
        found = self._completions
        self._completions = None
        if found is None or self.editor.isReadOnly():
            return
        cursor = self.editor.textCursor()
        block = cursor.block()
        end = min(max(found.end, cursor.positionInBlock()), len(block.text()))
        cursor.setPosition(block.position() + found.start)
        cursor.setPosition(block.position() + end, QTextCursor.MoveMode.KeepAnchor)
        cursor.insertText(item.text)
        self.editor.setTextCursor(cursor)
        # What follows may have completions of its own (a key's values after "key="); asked
        # once the list has closed.
        QTimer.singleShot(0, self, lambda: self.request_completions(explicit=False))

    # --- hover --------------------------------------------------------------------------------

    def hover_text_at(self, point: QPoint, global_point: QPoint | None = None) -> str | None:
        """The hover provider's help for the character under ``point`` (viewport coordinates).

        Help that comes later is shown as a tooltip at ``global_point`` (when given), unless
        the mouse asked about another place or the user typed since."""
        self._hover_asked += 1
        if self.hover_provider is None:
            return None
        found = self._character_at(point)
        if found is None:
            return None
        block, column = found
        asked, revision = self._hover_asked, self.editor.document().revision()

        def reply(text) -> None:
            if (asked == self._hover_asked and revision == self.editor.document().revision()
                    and global_point is not None and isinstance(text, str) and text):
                QToolTip.showText(global_point, text, self.editor.viewport())

        answer = ask_hover(self.hover_provider, TextPosition(self._path(), block.blockNumber() + 1, column,
                                                             block.text(), reply=reply))
        return None if answer is PENDING else answer

    def _character_at(self, point: QPoint):
        """(block, 0-based column) of the character under ``point``; None off the text."""
        editor = self.editor
        cursor = editor.cursorForPosition(point)
        block = cursor.block()
        if not block.text():
            return None
        end = QTextCursor(block)
        end.setPosition(block.position() + len(block.text()))
        line = editor.cursorRect(cursor)
        if point.x() > editor.cursorRect(end).right() or not line.top() - 1 <= point.y() <= line.bottom() + 1:
            return None
        column = cursor.positionInBlock()
        # cursorForPosition gives the nearest gap between characters: left of it, the mouse is
        # over the character before.
        if column > 0 and point.x() < line.left():
            column -= 1
        return block, column

    def _path(self) -> Path:
        return getattr(self.editor, "path", None) or Path()

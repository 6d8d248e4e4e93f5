"""The list of completions under the caret: a name column and a note column (type, default,
help), the first match selected; Enter, Tab or a click chooses, Esc closes.

Built on QCompleter for what it does well (a popup that keeps the editor typing, arrow keys,
closing when the editor loses focus), with the filtering done here: ``matching`` puts the names
that start with what was typed before those that only contain it.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QModelIndex, QObject, QRect, Qt
from PySide6.QtGui import QBrush, QColor, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QAbstractItemView, QCompleter, QPlainTextEdit, QTreeView

from workbench.editor.assist import CompletionItem, matching

MAX_WIDTH = 680
MAX_ROWS = 12
DETAIL_COLOUR = "#6a6a6a"


class CompletionPopup(QObject):
    """Shows ``CompletionItem``s for ``editor``; ``on_chosen(item)`` inserts the chosen one."""

    def __init__(self, editor: QPlainTextEdit, on_chosen: Callable[[CompletionItem], None]):
        super().__init__(editor)
        self.editor = editor
        self.on_chosen = on_chosen
        self.items: list[CompletionItem] = []
        self.model = QStandardItemModel(0, 2, self)
        self.completer = QCompleter(self.model, self)
        self.completer.setWidget(editor)
        self.completer.setCompletionMode(QCompleter.CompletionMode.UnfilteredPopupCompletion)
        self.completer.setMaxVisibleItems(MAX_ROWS)
        view = QTreeView()
        view.setObjectName("completion-list")
        view.setHeaderHidden(True)
        view.setRootIsDecorated(False)
        view.setUniformRowHeights(True)
        view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        view.setTextElideMode(Qt.TextElideMode.ElideRight)
        view.setFont(editor.font())
        header = view.header()
        header.setStretchLastSection(True)
        self.completer.setPopup(view)
        self.view = view
        self.completer.activated[QModelIndex].connect(self._on_activated)

    def is_visible(self) -> bool:
        return self.view.isVisible()

    def show_items(self, items, typed: str, at: QRect) -> bool:
        """Show the ``items`` that match ``typed`` below ``at`` (the start of the word, in the
        editor's coordinates); hides the list when none match. Returns whether it is shown."""
        self.items = matching(tuple(items), typed)
        if not self.items or (len(self.items) == 1 and self.items[0].text == typed):
            self.hide()  # nothing to offer, or what is typed is already all there is: Enter is a new line
            return False
        self.model.removeRows(0, self.model.rowCount())
        detail_brush = QBrush(QColor(DETAIL_COLOUR))
        for item in self.items:
            name = QStandardItem(item.shown)
            detail = QStandardItem(item.detail)
            detail.setForeground(detail_brush)
            for cell in (name, detail):
                cell.setToolTip(_tooltip(item))
            self.model.appendRow([name, detail])
        first = self.model.index(0, 0)
        view = self.view
        # The names are never cut; the notes take what is left, up to MAX_WIDTH in all.
        name_width = view.sizeHintForColumn(0) + 16
        view.setColumnWidth(0, name_width)
        width = name_width + view.sizeHintForColumn(1) + 8 + view.verticalScrollBar().sizeHint().width()
        rect = QRect(at)
        rect.setWidth(max(min(width, MAX_WIDTH), name_width + 120))
        self.completer.complete(rect)
        view.setCurrentIndex(first)
        view.scrollTo(first)
        return True

    def hide(self) -> None:
        self.view.hide()
        self.items = []

    def current_item(self) -> CompletionItem | None:
        row = self.view.currentIndex().row()
        return self.items[row] if 0 <= row < len(self.items) else None

    def _on_activated(self, index: QModelIndex) -> None:
        row = index.row()
        if 0 <= row < len(self.items):
            item = self.items[row]
            self.hide()
            self.on_chosen(item)


def _tooltip(item: CompletionItem) -> str:
    lines = [item.shown + (f"  ({item.detail})" if item.detail else "")]
    if item.documentation:
        lines.append(item.documentation)
    return "\n".join(lines)

"""The command palette (Ctrl+Shift+P): type a few letters, pick a command, it runs.

It ranks as Quick Open does (``commands.fuzzy_score``), lists the commands picked here lately
first (most recent first, as VS Code's "recently used"), shows each command's shortcut, and says
so when nothing matches.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHeaderView,
    QLabel,
    QLineEdit,
    QStyledItemDelegate,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.qt.popups import fit_to_rows
from workbench.ui.commands import CommandRegistry, fuzzy_score

ID_ROLE = Qt.ItemDataRole.UserRole
MAX_RECENT_COMMANDS = 10
NO_MATCH = "No matching commands"
MAX_HEIGHT = 360
MAX_LIST_HEIGHT = 310  # about fourteen commands, then the list scrolls


class _RoomyRows(QStyledItemDelegate):
    """Rows with room around their text, as Quick Open's (Qt's default rows are tight)."""

    def sizeHint(self, option, index) -> QSize:
        size = super().sizeHint(option, index)
        return QSize(size.width(), size.height() + 6)


class CommandPalette(QFrame):
    """A popup over the top of its window listing the enabled commands that match the query,
    each with its shortcut in a right-hand column."""

    sig_command_chosen = Signal(str)
    """The id of the command the user picked."""

    def __init__(self, commands: CommandRegistry, parent: QWidget):
        super().__init__(parent, Qt.WindowType.Popup)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self._commands = commands
        self.recent: list[str] = []
        """Ids of the commands picked here, most recent first."""
        self.query = QLineEdit(self)
        self.query.setPlaceholderText("Type a command")
        self.results = QTreeWidget(self)
        self.results.setColumnCount(2)
        self.results.setHeaderHidden(True)
        self.results.setRootIsDecorated(False)
        self.results.setUniformRowHeights(True)
        self.results.setItemDelegate(_RoomyRows(self.results))
        self.results.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.results.header().setStretchLastSection(False)
        self.results.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.results.header().setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        self.message = QLabel(NO_MATCH, self)
        self.message.setContentsMargins(6, 4, 6, 4)
        self.message.hide()
        layout.addWidget(self.query)
        layout.addWidget(self.message)
        layout.addWidget(self.results)
        self.query.textChanged.connect(self._refresh)
        self.query.installEventFilter(self)
        self.results.itemActivated.connect(self._choose)

    def open(self) -> None:
        parent = self.parentWidget()
        width = min(640, max(360, parent.width() // 2))
        top_left = parent.mapToGlobal(parent.rect().topLeft())
        self.setGeometry(top_left.x() + (parent.width() - width) // 2, top_left.y() + 40, width, MAX_HEIGHT)
        self.query.clear()
        self._refresh("")
        self.show()
        self.query.setFocus()

    def matching(self, query: str) -> list[tuple[str, str, str]]:
        """(id, label, shortcut) of the enabled commands matching ``query``: the recently used
        ones first, most recent first, then the others best first."""
        recency = {command_id: order for order, command_id in enumerate(self.recent)}
        ranked = []
        for order, command in enumerate(self._commands.all()):
            # Context-menu commands need the path they were invoked on, so they stay out.
            if not command.in_palette or command.context and command.menu is None or not command.is_enabled():
                continue
            score = fuzzy_score(query, command.label)
            if score is not None:
                ranked.append((recency.get(command.id, len(recency)), -score, order, command))
        ranked.sort(key=lambda item: item[:3])
        return [(c.id, c.label, c.shortcut or "") for *_, c in ranked]

    def current_command(self) -> str | None:
        item = self.results.currentItem()
        return item.data(0, ID_ROLE) if item is not None else None

    def _refresh(self, query: str) -> None:
        self.results.clear()
        items = []
        for command_id, label, shortcut in self.matching(query):
            item = QTreeWidgetItem([label, shortcut])
            item.setData(0, ID_ROLE, command_id)
            if command_id in self.recent:
                item.setToolTip(0, "Recently used")
            item.setForeground(1, self.palette().placeholderText())
            item.setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            items.append(item)
        self.results.addTopLevelItems(items)
        if items:
            self.results.setCurrentItem(items[0])
        self.message.setVisible(not items)
        self.results.setVisible(bool(items))
        fit_to_rows(self, self.results, len(items), MAX_LIST_HEIGHT)

    def eventFilter(self, watched, event) -> bool:
        if watched is self.query and isinstance(event, QKeyEvent) and event.type() == QKeyEvent.Type.KeyPress:
            key = event.key()
            if key in (Qt.Key.Key_Down, Qt.Key.Key_Up, Qt.Key.Key_PageDown, Qt.Key.Key_PageUp):
                self.results.keyPressEvent(event)
                return True
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                item = self.results.currentItem()
                if item is not None:
                    self._choose(item)
                return True
            if key == Qt.Key.Key_Escape:
                self.hide()
                return True
        return super().eventFilter(watched, event)

    def _choose(self, item: QTreeWidgetItem) -> None:
        command_id = item.data(0, ID_ROLE)
        self.recent = [command_id] + [c for c in self.recent if c != command_id][:MAX_RECENT_COMMANDS - 1]
        self.hide()
        self.sig_command_chosen.emit(command_id)

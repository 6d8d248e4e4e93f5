"""The command palette (Ctrl+Shift+P): type a few letters, pick a command, it runs."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QFrame, QLineEdit, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from workbench.ui.commands import CommandRegistry, fuzzy_score


class CommandPalette(QFrame):
    """A popup over the top of its window listing the enabled commands that match the query."""

    sig_command_chosen = Signal(str)
    """The id of the command the user picked."""

    MAX_ROWS = 14

    def __init__(self, commands: CommandRegistry, parent: QWidget):
        super().__init__(parent, Qt.WindowType.Popup)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self._commands = commands
        self.query = QLineEdit(self)
        self.query.setPlaceholderText("Type a command")
        self.results = QListWidget(self)
        self.results.setUniformItemSizes(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.query)
        layout.addWidget(self.results)
        self.query.textChanged.connect(self._refresh)
        self.query.installEventFilter(self)
        self.results.itemActivated.connect(self._choose)

    def open(self) -> None:
        parent = self.parentWidget()
        width = min(640, max(360, parent.width() // 2))
        top_left = parent.mapToGlobal(parent.rect().topLeft())
        self.setGeometry(top_left.x() + (parent.width() - width) // 2, top_left.y() + 40, width, 360)
        self.query.clear()
        self._refresh("")
        self.show()
        self.query.setFocus()

    def matching(self, query: str) -> list[tuple[str, str, str]]:
        """(id, label, shortcut) of the enabled commands matching ``query``, best first."""
        ranked = []
        for order, command in enumerate(self._commands.all()):
            if not command.in_palette or command.context and command.menu is None or not command.is_enabled():
                continue
            score = fuzzy_score(query, command.label)
            if score is not None:
                ranked.append((-score, order, command))
        ranked.sort(key=lambda item: (item[0], item[1]))
        return [(c.id, c.label, c.shortcut or "") for _, _, c in ranked]

    def _refresh(self, query: str) -> None:
        self.results.clear()
        for command_id, label, shortcut in self.matching(query):
            item = QListWidgetItem(f"{label}\t{shortcut}" if shortcut else label)
            item.setData(Qt.ItemDataRole.UserRole, command_id)
            self.results.addItem(item)
        if self.results.count():
            self.results.setCurrentRow(0)

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

    def _choose(self, item: QListWidgetItem) -> None:
        self.hide()
        self.sig_command_chosen.emit(item.data(Qt.ItemDataRole.UserRole))

"""The Variables view: the current console's namespace as a tree (name, type, size, value), with
arrays and tensors summarised (shape, dtype, device, min / max) and containers expandable."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHeaderView, QTreeWidget, QTreeWidgetItem, QWidget

from workbench.console.namespace import Variable

NAME, TYPE, SIZE, VALUE = range(4)
EMPTY_TEXT = "No variables yet: run some code in the console."


class VariablesView(QTreeWidget):
    """Shows a list of ``Variable``; what was expanded stays expanded across refreshes."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("console-variables")
        self.setColumnCount(4)
        self.setHeaderLabels(["Name", "Type", "Size", "Value"])
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        self.setRootIsDecorated(True)
        header = self.header()
        header.setStretchLastSection(True)
        for column, width in ((NAME, 130), (TYPE, 140), (SIZE, 110)):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)
            self.setColumnWidth(column, width)
        self._placeholder(EMPTY_TEXT)

    def show_variables(self, variables: list[Variable], truncated: bool = False) -> None:
        """Replace the tree's content with ``variables``."""
        expanded = self._expanded_paths()
        scroll = self.verticalScrollBar().value()
        self.setUpdatesEnabled(False)
        try:
            self.clear()
            if not variables:
                self._placeholder(EMPTY_TEXT)
                return
            for variable in variables:
                self._add(self.invisibleRootItem(), variable, (variable.name,), expanded)
            if truncated:
                self._placeholder("… more variables than the view shows")
        finally:
            self.setUpdatesEnabled(True)
        self.verticalScrollBar().setValue(scroll)

    def item_for(self, *path: str) -> QTreeWidgetItem | None:
        """The row of a variable (``"x"``) or of an item in it (``"d", "'key'"``)."""
        parent = self.invisibleRootItem()
        item = None
        for name in path:
            item = next((parent.child(i) for i in range(parent.childCount()) if parent.child(i).text(NAME) == name),
                        None)
            if item is None:
                return None
            parent = item
        return item

    def row_texts(self, *path: str) -> list[str] | None:
        """The four column texts of a row (for scripts and tests)."""
        item = self.item_for(*path)
        return [item.text(column) for column in range(4)] if item is not None else None

    def _add(self, parent: QTreeWidgetItem, variable: Variable, path: tuple[str, ...], expanded: set) -> None:
        item = QTreeWidgetItem(parent, [variable.name, variable.type, variable.size, variable.summary])
        item.setData(NAME, Qt.ItemDataRole.UserRole, path)
        item.setToolTip(VALUE, variable.value or variable.summary)
        item.setToolTip(TYPE, variable.type)
        if variable.children is not None:
            for child in variable.children:
                self._add(item, child, path + (child.name,), expanded)
            if variable.more > 0:
                more = QTreeWidgetItem(item, [f"… {variable.more} more", "", "", ""])
                more.setForeground(NAME, QColor("#777"))
                more.setFlags(Qt.ItemFlag.ItemIsEnabled)
            if path in expanded:
                item.setExpanded(True)

    def _expanded_paths(self) -> set:
        paths = set()
        stack = [self.invisibleRootItem()]
        while stack:
            item = stack.pop()
            for i in range(item.childCount()):
                child = item.child(i)
                if child.isExpanded():
                    paths.add(child.data(NAME, Qt.ItemDataRole.UserRole))
                    stack.append(child)
        return paths

    def _placeholder(self, text: str) -> None:
        item = QTreeWidgetItem(self.invisibleRootItem(), [text])
        item.setFirstColumnSpanned(True)
        item.setForeground(NAME, QColor("#777"))
        item.setFlags(Qt.ItemFlag.ItemIsEnabled)

"""A table with one row a version (a model version, a dataset version, a pipeline iteration): rows
picked whole, one at a time, columns as wide as their text with one column taking what is left,
the selected version still selected after the rows are filled again, and, when the table sorts,
the column the user sorted by still sorting (the first column, newest first, until then).

The capability's table says what the columns and cells are; a cell's colour is a theme colour's
name, so it follows the theme."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Hashable

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont, QIcon
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from workbench.qt import theme

KEY_ROLE = Qt.ItemDataRole.UserRole + 1
"""The version a row shows (its number, or its name)."""
SORT_ROLE = Qt.ItemDataRole.UserRole + 2
COLOUR_ROLE = Qt.ItemDataRole.UserRole + 3
"""The name of a cell's theme colour."""

RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter


@dataclass(frozen=True)
class TableCell:
    """What one cell shows."""

    text: str
    sort_key: object = None
    """What the cell sorts by (numbers as numbers); None sorts last."""
    tooltip: str = ""
    colour: str = ""
    """A theme colour's name (``theme.colour``) for the text; the palette's when empty."""
    bold: bool = False
    icon: QIcon | None = None


class SortableCell(QTableWidgetItem):
    """A cell that sorts by its SORT_ROLE value (numbers as numbers, blanks last)."""

    def __lt__(self, other: QTableWidgetItem) -> bool:
        mine, theirs = self.data(SORT_ROLE), other.data(SORT_ROLE)
        if mine is None or theirs is None:
            return theirs is None and mine is not None
        try:
            return mine < theirs
        except TypeError:
            return str(mine) < str(theirs)


class VersionTable(QTableWidget):
    """Rows of versions, filled by ``show_rows``; ``columns`` names the columns shown."""

    def __init__(self, object_name: str, sortable: bool, parent: QWidget | None = None):
        super().__init__(0, 0, parent)
        self.setObjectName(object_name)
        self.verticalHeader().hide()
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setWordWrap(False)
        self.setShowGrid(False)
        self.setAlternatingRowColors(True)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        self.horizontalHeader().setHighlightSections(False)
        self.sortable = sortable
        self.setSortingEnabled(sortable)
        self.columns: list[str] = []
        theme.theme_changes().sig_theme_changed.connect(self._take_theme_colours)

    # --- filling ------------------------------------------------------------------------------

    def show_rows(self, columns: list[str], rows: list[tuple[Hashable, list[TableCell]]], stretch: str,
                  right_aligned: Collection[str] = (), centred: Collection[str] = (),
                  header_tooltips: dict[str, str] | None = None) -> bool:
        """Show ``rows`` (a version's key and its cells, one per column, in the order given until
        the table sorts them) under ``columns``; ``stretch`` takes the width the others leave.
        True when the version selected before is selected again."""
        selected = self.selected_key()
        header = self.horizontalHeader()
        sort_column, sort_order = header.sortIndicatorSection(), header.sortIndicatorOrder()
        sorted_by = self.columns[sort_column] if 0 <= sort_column < len(self.columns) else None
        self.setSortingEnabled(False)
        self.clearContents()
        self.columns = list(columns)
        self.setColumnCount(len(self.columns))
        self.setHorizontalHeaderLabels(self.columns)
        for name, tooltip in (header_tooltips or {}).items():
            if name in self.columns:
                self.horizontalHeaderItem(self.columns.index(name)).setToolTip(tooltip)
        self.setRowCount(len(rows))
        for row, (key, cells) in enumerate(rows):
            for column, cell in enumerate(cells):
                item = self._item(key, cell)
                if self.columns[column] in right_aligned:
                    item.setTextAlignment(RIGHT)
                elif self.columns[column] in centred:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                self.setItem(row, column, item)
        if self.sortable:
            self.setSortingEnabled(True)
            if sorted_by in self.columns:
                self.sortItems(self.columns.index(sorted_by), sort_order)
            else:
                self.sortItems(0, Qt.SortOrder.DescendingOrder)
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(self.columns.index(stretch), QHeaderView.ResizeMode.Stretch)
        return selected is not None and self.select_key(selected)

    @staticmethod
    def _item(key: Hashable, cell: TableCell) -> QTableWidgetItem:
        item = SortableCell(cell.text)
        item.setData(KEY_ROLE, key)
        item.setData(SORT_ROLE, cell.sort_key)
        if cell.tooltip:
            item.setToolTip(cell.tooltip)
        if cell.colour:
            item.setData(COLOUR_ROLE, cell.colour)
            item.setForeground(QBrush(QColor(theme.colour(cell.colour))))
        if cell.bold:
            font = QFont(item.font())
            font.setBold(True)
            item.setFont(font)
        if cell.icon is not None:
            item.setIcon(cell.icon)
        return item

    def _take_theme_colours(self, _theme: str = "") -> None:
        for row in range(self.rowCount()):
            for column in range(self.columnCount()):
                item = self.item(row, column)
                name = None if item is None else item.data(COLOUR_ROLE)
                if name:
                    item.setForeground(QBrush(QColor(theme.colour(name))))

    # --- rows and selection -------------------------------------------------------------------

    def selected_key(self) -> Hashable | None:
        """The key of the selected row's version (None when no row is selected)."""
        rows = self.selectionModel().selectedRows() if self.selectionModel() else []
        if not rows:
            return None
        item = self.item(rows[0].row(), 0)
        return None if item is None else item.data(KEY_ROLE)

    def row_of(self, key: Hashable) -> int:
        """The row of version ``key``; -1 when no row shows it."""
        for row in range(self.rowCount()):
            item = self.item(row, 0)
            if item is not None and item.data(KEY_ROLE) == key:
                return row
        return -1

    def select_key(self, key: Hashable) -> bool:
        """Select and scroll to the row of version ``key``; False when no row shows it."""
        row = self.row_of(key)
        if row < 0:
            return False
        self.selectRow(row)
        self.scrollToItem(self.item(row, 0))
        return True

    def keys_shown(self) -> list:
        """The versions' keys, top row first."""
        return [self.item(row, 0).data(KEY_ROLE) for row in range(self.rowCount()) if self.item(row, 0) is not None]

    def cell_text(self, key: Hashable, column: str) -> str:
        """The text of ``column`` in the row of version ``key`` (for tests and scripts)."""
        row = self.row_of(key)
        if row < 0 or column not in self.columns:
            return ""
        item = self.item(row, self.columns.index(column))
        return "" if item is None else item.text()

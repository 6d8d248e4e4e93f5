"""The table of dataset versions: number, samples, size, part, parent, changes, when, by whom and
why, the newest first."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QWidget

from workbench.registry.datasets import DatasetVersion
from workbench.registry.widgets.dataset_rows import DATASET_COLUMNS, version_cells
from workbench.registry.widgets.versions_table import NUMBER_ROLE, SORT_ROLE, SortableCell

RIGHT_ALIGNED = ("Samples", "Size", "Part")


class DatasetTable(QTableWidget):
    """One row a dataset version; ``show_versions`` fills it, keeping the selected one selected."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(0, len(DATASET_COLUMNS), parent)
        self.setObjectName("registry-datasets-table")
        self.columns = list(DATASET_COLUMNS)
        self.setHorizontalHeaderLabels(self.columns)
        self.verticalHeader().hide()
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setWordWrap(False)
        self.setShowGrid(False)
        self.setAlternatingRowColors(True)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        self.horizontalHeader().setHighlightSections(False)
        self.setSortingEnabled(True)
        self.sortItems(0, Qt.SortOrder.DescendingOrder)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(self.columns.index("Reason"), QHeaderView.ResizeMode.Stretch)

    def show_versions(self, versions: list[DatasetVersion]) -> None:
        selected = self.selected_number()
        self.setSortingEnabled(False)
        self.clearContents()
        self.setRowCount(len(versions))
        for row, version in enumerate(sorted(versions, key=lambda v: v.number, reverse=True)):
            for column, (text, sort_key, tooltip) in enumerate(version_cells(version)):
                item = SortableCell(text)
                item.setData(SORT_ROLE, sort_key)
                item.setData(NUMBER_ROLE, version.number)
                if tooltip:
                    item.setToolTip(tooltip)
                if self.columns[column] in RIGHT_ALIGNED:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.setItem(row, column, item)
        # Sorting back on re-sorts by the column the user last chose (the newest first until then).
        self.setSortingEnabled(True)
        if selected is not None:
            self.select_number(selected)

    def selected_number(self) -> int | None:
        rows = self.selectionModel().selectedRows() if self.selectionModel() else []
        if not rows:
            return None
        item = self.item(rows[0].row(), 0)
        return None if item is None else item.data(NUMBER_ROLE)

    def row_of(self, number: int) -> int:
        for row in range(self.rowCount()):
            item = self.item(row, 0)
            if item is not None and item.data(NUMBER_ROLE) == number:
                return row
        return -1

    def select_number(self, number: int) -> bool:
        row = self.row_of(number)
        if row < 0:
            return False
        self.selectRow(row)
        self.scrollToItem(self.item(row, 0))
        return True

    def cell_text(self, number: int, column: str) -> str:
        """The text of ``column`` in the row of version ``number`` (for tests and scripts)."""
        row = self.row_of(number)
        if row < 0 or column not in self.columns:
            return ""
        item = self.item(row, self.columns.index(column))
        return "" if item is None else item.text()

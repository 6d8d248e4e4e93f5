"""The table of model versions: number, dataset version, metrics, size, aliases, pin, devices
and time, the newest first; a version whose files are not as recorded carries a warning icon
whose tooltip says what is wrong."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QStyle, QTableWidget, QTableWidgetItem, QWidget

from workbench.registry.models import ModelVersion
from workbench.registry.widgets.version_rows import (
    dataset_version_text,
    device_checks,
    format_created,
    format_metric,
    format_size,
    metric_value,
    verified_text,
    verified_tooltip,
)

NUMBER_ROLE = Qt.ItemDataRole.UserRole + 1
SORT_ROLE = Qt.ItemDataRole.UserRole + 2
LEADING_COLUMNS = ("Version", "Dataset")
TRAILING_COLUMNS = ("Size", "Aliases", "Pinned", "Verified on", "Created")


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


class VersionsTable(QTableWidget):
    """One row a version; ``show_versions`` fills it, keeping the selected version selected."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(0, 0, parent)
        self.setObjectName("registry-versions-table")
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
        self.columns: list[str] = []
        self.metric_columns: list[str] = []

    # --- filling ------------------------------------------------------------------------------

    def show_versions(self, versions: list[ModelVersion], metrics: list[str], project_metric: str,
                      mode: str, problems: dict[int, list[str]]) -> None:
        """Fill the table: ``metrics`` get a column each (``project_metric`` first, its best
        value in bold by ``mode``), ``problems`` by version number become warning icons."""
        selected = self.selected_number()
        sort_column = self.horizontalHeader().sortIndicatorSection()
        sort_order = self.horizontalHeader().sortIndicatorOrder()
        sorted_by = self.columns[sort_column] if 0 <= sort_column < len(self.columns) else None
        self.setSortingEnabled(False)
        self.clearContents()
        self.metric_columns = list(metrics)
        self.columns = [*LEADING_COLUMNS, *metrics, *TRAILING_COLUMNS]
        self.setColumnCount(len(self.columns))
        self.setHorizontalHeaderLabels(self.columns)
        for index, name in enumerate(metrics, len(LEADING_COLUMNS)):
            header = self.horizontalHeaderItem(index)
            header.setToolTip(f"{name}: the project's metric ([registry] metric, {mode} is best)"
                              if name == project_metric else f"{name} at the end of the version's run")
        best = _best(versions, project_metric, mode)
        self.setRowCount(len(versions))
        warning = self.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning)
        for row, version in enumerate(sorted(versions, key=lambda v: v.number, reverse=True)):
            self._fill_row(row, version, metrics, problems.get(version.number, []), warning,
                           bold=version.number in best)
        self.setSortingEnabled(True)
        if sorted_by in self.columns:
            self.sortItems(self.columns.index(sorted_by), sort_order)
        else:
            self.sortItems(0, Qt.SortOrder.DescendingOrder)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(self.columns.index("Verified on"), QHeaderView.ResizeMode.Stretch)
        if selected is not None:
            self.select_number(selected)

    def _fill_row(self, row: int, version: ModelVersion, metrics: list[str], problems: list[str], warning,
                  bold: bool) -> None:
        checks = device_checks(version)
        created = str(version.info.get("created", ""))
        who = version.info.get("created_by")
        run = (version.info.get("run") or {}).get("id") if isinstance(version.info.get("run"), dict) else None
        cells: list[tuple[str, object, str]] = [
            (version.name, version.number, "\n".join(f"⚠ {problem}" for problem in problems)
             or (f"From run {run}" if run else "")),
            (dataset_version_text(version), dataset_version_text(version) or None, ""),
        ]
        for name in metrics:
            value = metric_value(version, name)
            cells.append((format_metric(value), value, f"{name} = {value!r}" if value is not None else ""))
        cells += [
            (format_size(version.size), version.size, "\n".join(
                f"{item.name}: {format_size(item.size)} ({item.role}"
                + (f", {item.stored}" if item.stored else "") + ")" for item in version.files)),
            (", ".join(version.aliases), ", ".join(version.aliases) or None, ""),
            ("✓" if version.pinned else "", 1 if version.pinned else None,
             "Pinned: retention keeps it" if version.pinned else ""),
            (verified_text(checks), verified_text(checks) or None, verified_tooltip(checks)),
            (format_created(created), created or None, f"{created}" + (f" by {who}" if who else "")),
        ]
        for column, (text, sort_key, tooltip) in enumerate(cells):
            item = SortableCell(text)
            item.setData(SORT_ROLE, sort_key)
            item.setData(NUMBER_ROLE, version.number)
            if tooltip:
                item.setToolTip(tooltip)
            name = self.columns[column]
            if name in metrics or name in ("Size",):
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if name == "Pinned":
                item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
            if bold and column == len(LEADING_COLUMNS) and metrics:
                font = QFont(item.font())
                font.setBold(True)
                item.setFont(font)
            self.setItem(row, column, item)
        if problems:
            self.item(row, 0).setIcon(warning)

    # --- selection ----------------------------------------------------------------------------

    def selected_number(self) -> int | None:
        rows = self.selectionModel().selectedRows() if self.selectionModel() else []
        if not rows:
            return None
        item = self.item(rows[0].row(), 0)
        return None if item is None else item.data(NUMBER_ROLE)

    def select_number(self, number: int) -> bool:
        for row in range(self.rowCount()):
            item = self.item(row, 0)
            if item is not None and item.data(NUMBER_ROLE) == number:
                self.selectRow(row)
                self.scrollToItem(item)
                return True
        return False

    def row_of(self, number: int) -> int:
        for row in range(self.rowCount()):
            item = self.item(row, 0)
            if item is not None and item.data(NUMBER_ROLE) == number:
                return row
        return -1

    def cell_text(self, number: int, column: str) -> str:
        """The text of ``column`` in the row of version ``number`` (for tests and scripts)."""
        row = self.row_of(number)
        if row < 0 or column not in self.columns:
            return ""
        item = self.item(row, self.columns.index(column))
        return "" if item is None else item.text()


def _best(versions: list[ModelVersion], metric: str, mode: str) -> set[int]:
    values = [(metric_value(version, metric), version.number) for version in versions] if metric else []
    values = [(value, number) for value, number in values if value is not None]
    if len(values) < 2:
        return set()
    best = max(value for value, _ in values) if mode == "max" else min(value for value, _ in values)
    return {number for value, number in values if value == best}

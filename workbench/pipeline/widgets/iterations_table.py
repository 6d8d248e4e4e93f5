"""The table of iterations, the newest first: version, state (with the step it stopped at),
dataset, the headline metrics, gates (passed, or which failed and by how much), model version,
when it started and how long it took."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from workbench.pipeline.iterations import DONE, FAILED, RUNNING, STOPPED, Iteration
from workbench.pipeline.widgets.iteration_rows import (dataset_text, format_metric, format_moment, format_seconds,
                                                       gates_text, gates_tooltip, iteration_metrics,
                                                       iteration_seconds, state_text)
from workbench.qt import theme

VERSION_ROLE = Qt.ItemDataRole.UserRole + 1
LEADING_COLUMNS = ("Version", "State", "Dataset")
TRAILING_COLUMNS = ("Gates", "Model", "Started", "Took")
STATE_COLOURS = {DONE: "SUCCESS_TEXT", FAILED: "ERROR_TEXT", STOPPED: "WARNING_TEXT", RUNNING: "LINK"}


class IterationsTable(QTableWidget):
    """One row an iteration; ``show_iterations`` fills it, keeping the selected one selected."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(0, 0, parent)
        self.setObjectName("pipeline-iterations-table")
        self.verticalHeader().hide()
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setWordWrap(False)
        self.setShowGrid(False)
        self.setAlternatingRowColors(True)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        self.horizontalHeader().setHighlightSections(False)
        self.columns: list[str] = []
        self._iterations: list[Iteration] = []
        theme.theme_changes().sig_theme_changed.connect(self._theme_changed)

    def show_iterations(self, iterations: list[Iteration], metrics: list[str]) -> None:
        """Fill the table, newest first, with a column for each of ``metrics``."""
        selected = self.selected_version()
        self.clearContents()
        self._iterations = sorted(iterations, key=lambda it: int(it.version), reverse=True)
        self.columns = [*LEADING_COLUMNS, *metrics, *TRAILING_COLUMNS]
        self.setColumnCount(len(self.columns))
        self.setHorizontalHeaderLabels(self.columns)
        self.setRowCount(len(self._iterations))
        for row, iteration in enumerate(self._iterations):
            values = iteration_metrics(iteration)
            cells = [(iteration.version, iteration.error), (state_text(iteration), iteration.error),
                     (dataset_text(iteration), "")]
            cells += [(format_metric(values.get(name)), f"{name} = {values[name]!r}" if name in values else "")
                      for name in metrics]
            cells += [(gates_text(iteration), gates_tooltip(iteration)),
                      (str(iteration.output("model_version") or ""), ""),
                      (format_moment(iteration.started_at), ""),
                      (format_seconds(iteration_seconds(iteration)), "")]
            for column, (text, tooltip) in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setData(VERSION_ROLE, iteration.version)
                if tooltip:
                    item.setToolTip(tooltip)
                if self.columns[column] in metrics or self.columns[column] == "Took":
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.setItem(row, column, item)
        self._colour_states()
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        # The gates say which failed and by how much: whole, the last column taking what is left.
        header.setSectionResizeMode(self.columns.index("Took"), QHeaderView.ResizeMode.Stretch)
        if selected is None or not self.select_version(selected):
            if self._iterations:
                self.selectRow(0)

    def _theme_changed(self, _theme: str) -> None:
        self._colour_states()

    def _colour_states(self) -> None:
        state_column, gates_column = LEADING_COLUMNS.index("State"), self.columns.index("Gates") if self.columns else -1
        for row, iteration in enumerate(self._iterations):
            item = self.item(row, state_column)
            if item is not None and iteration.state in STATE_COLOURS:
                item.setForeground(QBrush(QColor(theme.colour(STATE_COLOURS[iteration.state]))))
            gates = self.item(row, gates_column) if gates_column >= 0 else None
            if gates is not None and iteration.gates:
                passed = all(gate.get("passed") for gate in iteration.gates)
                gates.setForeground(QBrush(QColor(theme.colour("SUCCESS_TEXT" if passed else "ERROR_TEXT"))))

    def selected_version(self) -> str | None:
        rows = self.selectionModel().selectedRows() if self.selectionModel() else []
        if not rows:
            return None
        item = self.item(rows[0].row(), 0)
        return None if item is None else item.data(VERSION_ROLE)

    def select_version(self, version: str) -> bool:
        for row in range(self.rowCount()):
            item = self.item(row, 0)
            if item is not None and item.data(VERSION_ROLE) == version:
                self.selectRow(row)
                self.scrollToItem(item)
                return True
        return False

    def cell_text(self, version: str, column: str) -> str:
        """The text of ``column`` in the row of iteration ``version`` (for tests and scripts)."""
        for row in range(self.rowCount()):
            item = self.item(row, 0)
            if item is not None and item.data(VERSION_ROLE) == version and column in self.columns:
                cell = self.item(row, self.columns.index(column))
                return "" if cell is None else cell.text()
        return ""

    def versions_shown(self) -> list[str]:
        """The iterations' versions, top row first."""
        return [self.item(row, 0).text() for row in range(self.rowCount()) if self.item(row, 0) is not None]

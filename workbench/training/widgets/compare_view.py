"""Two or more runs side by side: their curves overlaid and what differs between them."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import QHeaderView, QTableWidget, QTableWidgetItem, QTabWidget, QWidget

from workbench.training.widgets.comparison import differing_hparams, format_value, metric_names
from workbench.training.widgets.curves import PALETTE, CurvesView
from workbench.training.widgets.runs_table import source_text

SECTION_BACKGROUND = "#eef1f5"


class CompareView(QTabWidget):
    """Tabs "Curves" (one colour per run) and "Differences" (hyper-parameters that differ, then
    the final metrics)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setDocumentMode(True)
        self.curves = CurvesView(self, empty_text="None of these runs has written metrics yet.")
        self.curves.setObjectName("compare-curves")
        self.table = QTableWidget(self)
        self.table.setObjectName("compare-table")
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.addTab(self.curves, "Curves")
        self.addTab(self.table, "Differences")
        self.run_ids: list[str] = []
        self._shown: list[dict] | None = None

    def show_runs(self, rows) -> None:
        """Compare these runs (``RunRow``s, in list order) from no points."""
        self.run_ids = [row.id for row in rows]
        self.curves.set_runs(self.run_ids)
        self._shown = None
        self.update_table(rows)

    def update_table(self, rows) -> None:
        """Refill the table from the runs' latest information."""
        infos = [row.info for row in rows]
        described = [info.to_json() for info in infos]
        if described == self._shown:
            return  # refilled only on a change, so the scroll position stays
        self._shown = described
        differences = differing_hparams([info.hparams or {} for info in infos])
        names = metric_names(info.final_metrics or {} for info in infos)
        source = [source_text(info) for info in infos]
        table = self.table
        table.clear()
        table.setColumnCount(len(infos))
        table.setHorizontalHeaderLabels([f"{info.id}\n{info.state}" for info in infos])
        for index, info in enumerate(infos):
            header = table.horizontalHeaderItem(index)
            header.setForeground(QBrush(QColor(PALETTE[index % len(PALETTE)])))
            font = header.font()
            font.setBold(True)
            header.setFont(font)
        body: list[tuple[str, list[str], bool]] = []
        body.append(("Hyper-parameters that differ", [], True))
        if differences:
            body += [(key, [format_value(v) for v in values], False) for key, values in differences]
        else:
            body.append(("(none: the same values)", [""] * len(infos), False))
        if len(set(source)) > 1:
            body.append(("file and overrides", source, False))
        body.append(("Final metrics", [], True))
        if names:
            body += [(name, [format_value((info.final_metrics or {}).get(name)) for info in infos], False)
                     for name in names]
        else:
            body.append(("(no metrics yet)", [""] * len(infos), False))
        table.setRowCount(len(body))
        table.setVerticalHeaderLabels([name for name, _values, _section in body])
        bold = QFont(table.font())
        bold.setBold(True)
        for row, (name, values, section) in enumerate(body):
            header = table.verticalHeaderItem(row)
            header.setTextAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
            if section:
                header.setFont(bold)
                header.setBackground(QBrush(QColor(SECTION_BACKGROUND)))
                for column in range(len(infos)):
                    cell = QTableWidgetItem("")
                    cell.setBackground(QBrush(QColor(SECTION_BACKGROUND)))
                    table.setItem(row, column, cell)
                continue
            for column, value in enumerate(values):
                cell = QTableWidgetItem(value)
                cell.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                table.setItem(row, column, cell)

    def cell_text(self, row_name: str, run_id: str) -> str | None:
        """The table's cell for a row (a hyper-parameter or metric name) and a run (for tests)."""
        if run_id not in self.run_ids:
            return None
        column = self.run_ids.index(run_id)
        for row in range(self.table.rowCount()):
            if self.table.verticalHeaderItem(row).text() == row_name:
                item = self.table.item(row, column)
                return item.text() if item is not None else ""
        return None

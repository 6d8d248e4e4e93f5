"""The report of a finished tool run: its headline figures, its tables (sortable by any column,
numbers as numbers), its plot, its warnings and the files it wrote, with Export CSV (the table
on show) and Export Markdown (the whole report).

pyqtgraph is imported only when a report with a plot is shown: most reports have none, and it
costs a tenth of a second.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSpacerItem,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.modeltools.report import ReportPlot, ReportTable, ToolReport, format_cell
from workbench.modeltools.widgets.scrolling import WrappingScrollArea

SORT_ROLE = Qt.ItemDataRole.UserRole + 1
TABLES_MIN_HEIGHT = 220
FIGURES_PER_ROW = 4
SERIES_COLOURS = ("#3b76c4", "#e08a2c", "#3a9d5d", "#c2413a", "#8159b8", "#6b6b6b")


def figure_title(name: str) -> str:
    """``max_abs_diff`` as a person reads it: "Max abs diff"."""
    text = name.replace("_", " ").strip()
    return text[:1].upper() + text[1:]


class ResultView(QWidget):
    """Shows one ToolReport (or nothing)."""

    sig_exported = Signal(str)
    """A file was exported (its path)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.report: ToolReport | None = None
        self.ask_save_path: Callable[[str, str, str], str] = self._ask_save_path
        """(title, suggested path, filter) -> chosen path, "" when cancelled (replaceable in
        tests)."""
        self.export_folder: Path | None = None
        """Where the export dialogs open (the project, usually)."""
        self.table_views: list[QTableView] = []
        self._eliding = _ElideOnResize(self)
        self.plot_widgets: list[QWidget] = []

        self.title = QLabel("")
        self.title.setObjectName("result-title")
        self.title.setStyleSheet("font-size: 14px; font-weight: 600;")
        self.title.setWordWrap(True)
        self.export_csv_button = QPushButton("Export CSV…")
        self.export_csv_button.setObjectName("export-csv")
        self.export_csv_button.setToolTip("Save the table on show as CSV")
        self.export_csv_button.clicked.connect(lambda: self.export_csv())
        self.export_markdown_button = QPushButton("Export Markdown…")
        self.export_markdown_button.setObjectName("export-markdown")
        self.export_markdown_button.setToolTip("Save the whole report as Markdown")
        self.export_markdown_button.clicked.connect(lambda: self.export_markdown())
        header = QHBoxLayout()
        header.setContentsMargins(0, 0, 0, 0)
        header.addWidget(self.title, 1)
        header.addWidget(self.export_csv_button)
        header.addWidget(self.export_markdown_button)

        self.figures = QFrame()
        self.figures.setObjectName("result-figures")
        self._figures_grid = QGridLayout(self.figures)
        self._figures_grid.setContentsMargins(0, 0, 0, 0)
        self._figures_grid.setHorizontalSpacing(8)
        self._figures_grid.setVerticalSpacing(8)

        self.warnings = QLabel("")
        self.warnings.setObjectName("result-warnings")
        self.warnings.setWordWrap(True)
        self.warnings.setStyleSheet("background: #fff4d6; border: 1px solid #ecd290; border-radius: 3px;"
                                    " padding: 6px; color: #5c4400;")
        self.tabs = QTabWidget()
        self.tabs.setObjectName("result-tabs")
        self.tabs.setDocumentMode(True)
        self.tabs.currentChanged.connect(self._update_buttons)
        self.outputs = QLabel("")
        self.outputs.setObjectName("result-outputs")
        self.outputs.setWordWrap(True)
        self.outputs.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.outputs.setStyleSheet("color: #333;")
        self.empty = QLabel("Run the tool to see its report here.")
        self.empty.setObjectName("result-empty")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setStyleSheet("color: #888;")

        # A long report scrolls as a whole: figures, warnings and tables keep their size.
        self.tabs.setMinimumHeight(TABLES_MIN_HEIGHT)
        content = QWidget()
        body = QVBoxLayout(content)
        body.setContentsMargins(0, 0, 4, 0)
        body.setSpacing(8)
        body.addWidget(self.figures)
        body.addWidget(self.warnings)
        body.addWidget(self.tabs, 1)
        body.addWidget(self.outputs)
        # Takes the height the tables would have when a report has none, so the figures keep
        # their size at the top.
        self._filler = QSpacerItem(0, 0, QSizePolicy.Policy.Minimum, QSizePolicy.Policy.Expanding)
        body.addItem(self._filler)
        for fixed in (self.figures, self.outputs, self.warnings):
            fixed.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.scroll = WrappingScrollArea()
        self.scroll.setObjectName("result-scroll")
        self.scroll.setWidget(content)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(8)
        layout.addLayout(header)
        layout.addWidget(self.scroll, 1)
        layout.addWidget(self.empty, 1)
        self.set_report(None)

    # --- showing ------------------------------------------------------------------------------

    def set_report(self, report: ToolReport | None) -> None:
        self.report = report
        self._clear()
        has = report is not None
        for widget in (self.title, self.scroll, self.export_markdown_button, self.export_csv_button):
            widget.setVisible(has)
        self.empty.setVisible(not has)
        self.warnings.hide()
        self.outputs.hide()
        if report is None:
            return
        self.title.setText(report.title)
        self._show_figures(report.figures)
        if report.warnings:
            self.warnings.setText("\n".join(f"⚠ {w}" for w in report.warnings))
            self.warnings.show()
        for table in report.tables:
            view = self._table_view(table)
            self.table_views.append(view)
            self.tabs.addTab(view, table.title)
        table_titles = {table.title for table in report.tables}
        for plot in report.plots:
            widget = self._plot_widget(plot)
            self.plot_widgets.append(widget)
            self.tabs.addTab(widget, f"{plot.title} (chart)" if plot.title in table_titles else plot.title)
        self.tabs.setVisible(self.tabs.count() > 0)
        self._filler.changeSize(0, 0, QSizePolicy.Policy.Minimum,
                                QSizePolicy.Policy.Fixed if self.tabs.count() else QSizePolicy.Policy.Expanding)
        self.scroll.widget().layout().invalidate()
        self.scroll.verticalScrollBar().setValue(0)
        if report.outputs:
            self.outputs.setText("Written: " + "  ·  ".join(report.outputs))
            self.outputs.show()
        self._update_buttons()

    def _clear(self) -> None:
        while self.tabs.count():
            widget = self.tabs.widget(0)
            self.tabs.removeTab(0)
            widget.deleteLater()
        self.table_views, self.plot_widgets = [], []
        while self._figures_grid.count():
            item = self._figures_grid.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()

    def _show_figures(self, figures: dict[str, Any]) -> None:
        self.figures.setVisible(bool(figures))
        for number, (name, value) in enumerate(figures.items()):
            card = QFrame()
            card.setObjectName(f"figure-{name}")
            card.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
            card.setStyleSheet("QFrame { background: #f4f6f9; border: 1px solid #dde2ea; border-radius: 4px; }"
                               " QLabel { border: none; background: transparent; }")
            column = QVBoxLayout(card)
            column.setContentsMargins(10, 6, 10, 6)
            column.setSpacing(0)
            caption = QLabel(figure_title(name))
            caption.setStyleSheet("color: #5f6b7a; font-size: 11px;")
            caption.setToolTip(name)
            text = format_cell(value)
            shown = QLabel(text)
            shown.setObjectName(f"figure-value-{name}")
            shown.setToolTip(text)
            # Every card as wide as the others: a long value (a path) is elided, not widening
            # its column.
            shown.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
            caption.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
            shown.full_text = text  # type: ignore[attr-defined]
            shown.installEventFilter(self._eliding)
            shown.setStyleSheet("font-size: 15px; font-weight: 600; color: #1d2530;")
            shown.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            column.addWidget(caption)
            column.addWidget(shown)
            self._figures_grid.addWidget(card, number // FIGURES_PER_ROW, number % FIGURES_PER_ROW)
        for col in range(FIGURES_PER_ROW):
            self._figures_grid.setColumnStretch(col, 1)

    def _table_view(self, table: ReportTable) -> QTableView:
        model = QStandardItemModel(len(table.rows), len(table.columns))
        model.setHorizontalHeaderLabels([str(c) for c in table.columns])
        model.setSortRole(SORT_ROLE)
        numeric = [_is_numeric_column(table.rows, col) for col in range(len(table.columns))]
        for r, row in enumerate(table.rows):
            for c in range(len(table.columns)):
                value = row[c] if c < len(row) else None
                item = QStandardItem(format_cell(value))
                item.setEditable(False)
                item.setData(_sort_key(value, numeric[c]), SORT_ROLE)
                if numeric[c]:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if isinstance(value, float):
                    item.setToolTip(repr(value))
                model.setItem(r, c, item)
        view = QTableView()
        view.setObjectName(f"table-{table.title}")
        view.setModel(model)
        model.setParent(view)
        # The tool's own order until a header is clicked (enabling sorting sorts at once by
        # the indicator's column otherwise).
        view.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        view.setSortingEnabled(True)
        view.setAlternatingRowColors(True)
        view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        view.verticalHeader().hide()
        view.verticalHeader().setDefaultSectionSize(22)
        view.setWordWrap(False)
        header = view.horizontalHeader()
        header.setHighlightSections(False)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        view.resizeColumnsToContents()
        for col in range(model.columnCount()):
            view.setColumnWidth(col, min(max(view.columnWidth(col) + 12, 60), 360))
        view.report_table = table  # type: ignore[attr-defined]
        return view

    def _plot_widget(self, plot: ReportPlot) -> QWidget:
        # Leave this import here: pyqtgraph loads only for a report that has a plot.
        import pyqtgraph as pg

        widget = pg.PlotWidget(background="w")
        widget.setObjectName(f"plot-{plot.title}")
        item = widget.getPlotItem()
        item.showGrid(y=True, alpha=0.25)
        if plot.y_label:
            item.setLabel("left", plot.y_label)
        item.getAxis("left").enableAutoSIPrefix(False)  # "ms", never "ms (x0.001)"
        ticks = [(i, str(c)) for i, c in enumerate(plot.categories)]
        item.getAxis("bottom").setTicks([ticks])
        if len(plot.series) > 1:
            item.addLegend(offset=(-10, 10))
        count = max(len(plot.series), 1)
        width = 0.8 / count
        for number, series in enumerate(plot.series):
            colour = SERIES_COLOURS[number % len(SERIES_COLOURS)]
            values = [_plottable(v) for v in series.get("values", [])]
            name = str(series.get("name", ""))
            if plot.kind == "line":
                item.plot(list(range(len(values))), values, pen=pg.mkPen(colour, width=2), symbol="o",
                          symbolSize=6, symbolBrush=colour, name=name)
            else:
                xs = [i - 0.4 + width * (number + 0.5) for i in range(len(values))]
                # Named, so the legend lists it.
                item.addItem(pg.BarGraphItem(x=xs, height=values, width=width * 0.9, brush=colour, pen=None,
                                             name=name))
        item.setMouseEnabled(x=False, y=False)
        item.hideButtons()
        return widget

    # --- exports ------------------------------------------------------------------------------

    def current_table(self) -> ReportTable | None:
        widget = self.tabs.currentWidget()
        table = getattr(widget, "report_table", None)
        if table is None and self.report is not None and self.report.tables:
            table = self.report.tables[0]
        return table

    def export_csv(self, path: str | None = None) -> str | None:
        """Save the table on show (else the first) as CSV; returns the path written."""
        table = self.current_table()
        if table is None:
            return None
        if path is None:
            path = self.ask_save_path("Export CSV", self._suggest(f"{table.title}.csv"), "CSV (*.csv)")
            if not path:
                return None
        return self._write(path, table.to_csv())

    def export_markdown(self, path: str | None = None) -> str | None:
        """Save the whole report as Markdown; returns the path written."""
        if self.report is None:
            return None
        if path is None:
            path = self.ask_save_path("Export Markdown", self._suggest(f"{self.report.tool}-report.md"),
                                      "Markdown (*.md)")
            if not path:
                return None
        return self._write(path, self.report.to_markdown())

    def _suggest(self, name: str) -> str:
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in name).strip("-") or "report"
        return str((self.export_folder or Path.home()) / safe)

    def _write(self, path: str, text: str) -> str:
        from workbench.project.atomic_file import write_text_atomically

        write_text_atomically(Path(path), text)
        self.sig_exported.emit(str(path))
        return str(path)

    def _update_buttons(self, *_args) -> None:
        self.export_csv_button.setEnabled(self.current_table() is not None)

    def _ask_save_path(self, title: str, suggested: str, filters: str) -> str:
        path, _ = QFileDialog.getSaveFileName(self, title, suggested, filters)
        return path


class _ElideOnResize(QObject):
    """Elides a figure's value in the middle to the width its card gets."""

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.Resize and hasattr(watched, "full_text"):
            metrics = watched.fontMetrics()
            watched.setText(metrics.elidedText(watched.full_text, Qt.TextElideMode.ElideMiddle,
                                               max(watched.width(), 20)))
        return False


def _is_numeric_column(rows: list[list[Any]], column: int) -> bool:
    seen = False
    for row in rows:
        value = row[column] if column < len(row) else None
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        seen = True
    return seen


def _sort_key(value: Any, numeric: bool) -> Any:
    if numeric:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return float("-inf")
        return float(value)
    return format_cell(value).lower()


def _plottable(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) else 0.0

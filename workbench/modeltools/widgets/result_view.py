"""The report of a finished tool run: its headline figures (labelled and with their units, see
report.figure_label and format_figure), its tables (sortable by any column, numbers as numbers,
columns as wide as their content), its plots with their legend above them, its warnings and the
files it wrote, with Export CSV (the table on show) and Export Markdown (the whole report). While
a new run goes, or after it failed, the last report stays, marked as the previous run's.

pyqtgraph is imported only when a chart's tab is first shown: most reports have no chart, a
chart is seldom the first tab, and pyqtgraph with NumPy costs a tenth of a second and about
50 MB, which a tool window kept open for its table need not hold.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QFont, QFontMetrics, QStandardItem, QStandardItemModel
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

from workbench.modeltools.model_index import name_in_project
from workbench.modeltools.report import ReportPlot, ReportTable, ToolReport, figure_label, format_cell, format_figure
from workbench.modeltools.widgets.scrolling import WrappingScrollArea
from workbench.qt import theme

SORT_ROLE = Qt.ItemDataRole.UserRole + 1
TABLES_MIN_HEIGHT = 220
# A window grows after a run until its longest table shows this many rows (or the screen is full).
FIT_ROWS_AT_MOST = 24
FIGURES_PER_ROW = 4
SERIES_COLOURS = ("#3b76c4", "#e08a2c", "#3a9d5d", "#c2413a", "#8159b8", "#6b6b6b")
# A table column is never narrower or wider than this (wider cells show in full as a tooltip).
COLUMN_MIN_WIDTH, COLUMN_MAX_WIDTH = 48, 420
VALUE_PIXELS = 15
# A card's border and margins, left and right together, and the room between two cards.
CARD_PADDING = 24
CARD_GAP = 8
# The report's width assumed for laying out figures before the view is shown.
ASSUMED_WIDTH = 720


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
        self.base_dir: Path | None = None
        """The project: the files written are named relative to it."""
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

        self.previous_note = QLabel("")
        self.previous_note.setObjectName("result-previous-note")
        self.previous_note.setWordWrap(True)
        theme.set_themed_style_sheet(self.previous_note, "background: @INFO_BACKGROUND;"
                                                         " border: 1px solid @INFO_BORDER; border-radius: 3px; padding: 4px 6px; color: @FOREGROUND;")
        self.previous_note.hide()

        self.figures = QFrame()
        self.figures.setObjectName("result-figures")
        self._figures_grid = QGridLayout(self.figures)
        self._figures_grid.setContentsMargins(0, 0, 0, 0)
        self._figures_grid.setHorizontalSpacing(CARD_GAP)
        self._figures_grid.setVerticalSpacing(CARD_GAP)

        self.warnings = QLabel("")
        self.warnings.setObjectName("result-warnings")
        self.warnings.setWordWrap(True)
        theme.set_themed_style_sheet(self.warnings, "background: @WARNING_BACKGROUND;"
                                                    " border: 1px solid @WARNING_BORDER; border-radius: 3px; padding: 6px; color: @WARNING_TEXT;")
        self.tabs = _ReportTabs()
        self.tabs.setObjectName("result-tabs")
        self.tabs.setDocumentMode(True)
        self.tabs.currentChanged.connect(self._update_buttons)
        self.outputs = QLabel("")
        self.outputs.setObjectName("result-outputs")
        self.outputs.setWordWrap(True)
        self.outputs.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        theme.set_themed_style_sheet(self.outputs, "color: @FOREGROUND;")
        self.empty = QLabel("Run the tool to see its report here.")
        self.empty.setObjectName("result-empty")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        theme.set_themed_style_sheet(self.empty, "color: @MUTED_TEXT;")

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
        layout.addWidget(self.previous_note)
        layout.addWidget(self.scroll, 1)
        layout.addWidget(self.empty, 1)
        self.set_report(None)

    # --- showing ------------------------------------------------------------------------------

    def set_report(self, report: ToolReport | None) -> None:
        self.report = report
        self.previous_note.hide()
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
            widget = _ChartTab(lambda plot=plot: self._plot_widget(plot))
            self.plot_widgets.append(widget)
            self.tabs.addTab(widget, f"{plot.title} (chart)" if plot.title in table_titles else plot.title)
        self.tabs.setVisible(self.tabs.count() > 0)
        self._filler.changeSize(0, 0, QSizePolicy.Policy.Minimum,
                                QSizePolicy.Policy.Fixed if self.tabs.count() else QSizePolicy.Policy.Expanding)
        self.scroll.widget().layout().invalidate()
        self.scroll.verticalScrollBar().setValue(0)
        if report.outputs:
            self.outputs.setText("Written: " + "  ·  ".join(_shown_path(self.base_dir, p) for p in report.outputs))
            self.outputs.setToolTip("\n".join(report.outputs))
            self.outputs.show()
        self._update_buttons()

    def mark_previous(self, note: str) -> None:
        """Say that the report on show is an earlier run's (``note``: when, and what became of
        the run since); ``set_report`` takes the mark off."""
        if self.report is None:
            return
        self.previous_note.setText(note)
        self.previous_note.show()

    @property
    def shows_previous(self) -> bool:
        return self.report is not None and not self.previous_note.isHidden()

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
        """One card per figure, FIGURES_PER_ROW to a row. A value too long for a card takes as
        many cards' width as it needs (up to a row); a card that no longer fits in its row
        starts the next, and the card before it widens to fill the gap."""
        self.figures.setVisible(bool(figures))
        value_font = QFont(self.font())
        value_font.setPixelSize(VALUE_PIXELS)
        value_font.setWeight(QFont.Weight.DemiBold)
        metrics = QFontMetrics(value_font)
        available = self.scroll.viewport().width() if self.isVisible() else 0
        available = available if available > 200 else ASSUMED_WIDTH
        card_text = (available - CARD_GAP * (FIGURES_PER_ROW - 1)) / FIGURES_PER_ROW - CARD_PADDING
        # n cards side by side give their text n * card_text and the n - 1 gaps between them.
        gap = CARD_GAP + CARD_PADDING
        grid = self._figures_grid
        row = col = 0
        last: tuple[QFrame, int, int, int] | None = None
        for name, value in figures.items():
            text = format_figure(name, value)
            if isinstance(value, str) and Path(value).is_absolute():
                text = _shown_path(self.base_dir, value)
            needed = math.ceil((metrics.horizontalAdvance(text) + gap) / (card_text + gap))
            span = min(FIGURES_PER_ROW, max(1, needed))
            if col + span > FIGURES_PER_ROW:
                if last is not None and last[1] == row:
                    card, at_row, at_col, _span = last
                    grid.removeWidget(card)
                    grid.addWidget(card, at_row, at_col, 1, FIGURES_PER_ROW - at_col)
                row, col = row + 1, 0
            card = self._figure_card(name, value, text)
            grid.addWidget(card, row, col, 1, span)
            last = (card, row, col, span)
            col += span
            if col >= FIGURES_PER_ROW:
                row, col = row + 1, 0
        for number in range(FIGURES_PER_ROW):
            grid.setColumnStretch(number, 1)

    def _figure_card(self, name: str, value: Any, text: str) -> QFrame:
        card = QFrame()
        card.setObjectName(f"figure-{name}")
        card.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        theme.set_themed_style_sheet(card, "QFrame { background: @PANEL_BACKGROUND;"
                                           " border: 1px solid @PANEL_BORDER; border-radius: 4px; } QLabel { border: none; background: transparent; }")
        column = QVBoxLayout(card)
        column.setContentsMargins(10, 6, 10, 6)
        column.setSpacing(0)
        caption = QLabel(figure_label(name))
        caption.setObjectName(f"figure-label-{name}")
        theme.set_themed_style_sheet(caption, "color: @MUTED_TEXT; font-size: 11px;")
        caption.setToolTip(name)
        caption.setWordWrap(True)
        shown = QLabel(text)
        shown.setObjectName(f"figure-value-{name}")
        shown.setToolTip(f"{text}\n({name} = {value!r})" if text != str(value) else text)
        shown.full_text = text  # type: ignore[attr-defined]
        # Words wrap; one long word (a path) is elided in the middle, whole in its tooltip.
        if " " in text.strip():
            shown.setWordWrap(True)
        else:
            shown.installEventFilter(self._eliding)
        # Cards share a row evenly: a long value does not widen its column.
        shown.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        caption.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        theme.set_themed_style_sheet(shown, f"font-size: {VALUE_PIXELS}px; font-weight: 600; color: @FOREGROUND;")
        shown.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        column.addWidget(caption)
        column.addWidget(shown)
        column.addStretch(1)
        return card

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
        view.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        # Each column as wide as its header and cells; a table wider than the window scrolls
        # sideways (smoothly) instead of squeezing its columns.
        view.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        header = view.horizontalHeader()
        header.setHighlightSections(False)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(False)
        view.resizeColumnsToContents()
        for col in range(model.columnCount()):
            width = max(view.columnWidth(col), header.sectionSizeHint(col)) + 12
            view.setColumnWidth(col, min(max(width, COLUMN_MIN_WIDTH), COLUMN_MAX_WIDTH))
        for r in range(model.rowCount()):
            for c in range(model.columnCount()):
                item = model.item(r, c)
                if item is not None and not item.toolTip() and view.columnWidth(c) >= COLUMN_MAX_WIDTH:
                    item.setToolTip(item.text())
        view.report_table = table  # type: ignore[attr-defined]
        return view

    def _plot_widget(self, plot: ReportPlot) -> QWidget:
        """The chart, with its legend in a row above it: outside the plot, so it never hides a
        bar, in dark text on the page's light background, a swatch for every series."""
        # Leave this import here: pyqtgraph loads only for a report that has a plot.
        import pyqtgraph as pg

        widget = pg.PlotWidget()
        widget.setObjectName(f"plot-area-{plot.title}")
        item = widget.getPlotItem()
        item.showGrid(y=True, alpha=0.25)
        if plot.y_label:
            item.setLabel("left", plot.y_label)
        item.getAxis("left").enableAutoSIPrefix(False)  # "ms", never "ms (x0.001)"
        _CategoryTicks(item, [str(c) for c in plot.categories])
        count = max(len(plot.series), 1)
        width = 0.8 / count
        legend: list[tuple[str, str]] = []
        for number, series in enumerate(plot.series):
            colour = SERIES_COLOURS[number % len(SERIES_COLOURS)]
            values = [_plottable(v) for v in series.get("values", [])]
            name = str(series.get("name", ""))
            legend.append((name, colour))
            if plot.kind == "line":
                item.plot(list(range(len(values))), values, pen=pg.mkPen(colour, width=2), symbol="o",
                          symbolSize=6, symbolBrush=colour)
            else:
                xs = [i - 0.4 + width * (number + 0.5) for i in range(len(values))]
                item.addItem(pg.BarGraphItem(x=xs, height=values, width=width * 0.9, brush=colour, pen=None))
        # Half a category of room on each side: a line's first and last points (and their
        # labels under the axis) would otherwise sit on the plot's edges, the last label cut off.
        item.setXRange(-0.5, max(len(plot.categories), 1) - 0.5, padding=0)
        item.setMouseEnabled(x=False, y=False)
        item.hideButtons()
        holder = QWidget()
        holder.setObjectName(f"plot-{plot.title}")
        theme.set_themed_style_sheet(holder, "background: @CHART_BACKGROUND;")
        _PlotColours(widget, plot.y_label)
        column = QVBoxLayout(holder)
        column.setContentsMargins(0, 4, 0, 0)
        column.setSpacing(2)
        holder.legend = None  # type: ignore[attr-defined]
        if len(legend) > 1:
            holder.legend = _legend_row(legend)  # type: ignore[attr-defined]
            column.addWidget(holder.legend)
        column.addWidget(widget, 1)
        holder.plot = widget  # type: ignore[attr-defined]
        return holder

    # --- exports ------------------------------------------------------------------------------

    def height_wanted(self, rows_at_most: int = FIT_ROWS_AT_MOST) -> int:
        """How many pixels taller the report would like to be to show its longest table whole
        (at most ``rows_at_most`` rows), 0 when every table fits."""
        wanted = 0
        for view in self.table_views:
            rows = min(view.model().rowCount(), rows_at_most)
            if rows == 0:
                continue
            rows_height = sum(view.rowHeight(row) for row in range(rows))
            # The viewport is what is left for rows once the header and a sideways scroll bar
            # (already on screen when shown) have their share.
            wanted = max(wanted, rows_height - view.viewport().height())
        return max(wanted, 0)

    def width_wanted(self) -> int:
        """How many pixels wider the report would like to be to show its widest table's
        columns side by side, 0 when every table fits."""
        wanted = 0
        for view in self.table_views:
            columns = sum(view.columnWidth(column) for column in range(view.model().columnCount()))
            wanted = max(wanted, columns - view.viewport().width())
        return max(wanted, 0)

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
        from workbench.platform.atomic_files import write_text_atomically

        write_text_atomically(Path(path), text)
        self.sig_exported.emit(str(path))
        return str(path)

    def _update_buttons(self, *_args) -> None:
        self.export_csv_button.setEnabled(self.current_table() is not None)

    def _ask_save_path(self, title: str, suggested: str, filters: str) -> str:
        path, _ = QFileDialog.getSaveFileName(self, title, suggested, filters)
        return path


class _ReportTabs(QTabWidget):
    """The tables and charts: they take the height left under the figures (at least
    TABLES_MIN_HEIGHT) and scroll inside, rather than asking for their full height and making
    the whole report scroll, which would hide a wide table's scroll bar below the window."""

    def sizeHint(self):
        hint = super().sizeHint()
        hint.setHeight(TABLES_MIN_HEIGHT)
        return hint


class _ChartTab(QWidget):
    """A chart's tab, drawn the first time it shows: pyqtgraph (with NumPy, about 50 MB of a
    window's memory) loads only for a chart someone looks at. ``legend`` and ``plot`` are the
    drawn chart's (None until then)."""

    def __init__(self, draw: Callable[[], QWidget]):
        super().__init__()
        self._draw: Callable[[], QWidget] | None = draw
        self.legend: QWidget | None = None
        self.plot: QWidget | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._draw is not None:
            draw, self._draw = self._draw, None
            chart = draw()
            self.layout().addWidget(chart)
            self.legend, self.plot = chart.legend, chart.plot


def _shown_path(base: Path | None, path: str) -> str:
    """A written file relative to the project when it lies in it, else its whole path."""
    return name_in_project(base, path) if base is not None and _inside(Path(path), base) else str(path)


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except (OSError, ValueError):
        return False
    return True


def _legend_row(entries: list[tuple[str, str]]) -> QWidget:
    """A swatch and a name per series, in one row (right-aligned, above the plot)."""
    row = QWidget()
    row.setObjectName("plot-legend")
    layout = QHBoxLayout(row)
    layout.setContentsMargins(8, 0, 8, 0)
    layout.setSpacing(14)
    layout.addStretch(1)
    for name, colour in entries:
        entry = QWidget()
        entry.setObjectName(f"legend-{name}")
        pair = QHBoxLayout(entry)
        pair.setContentsMargins(0, 0, 0, 0)
        pair.setSpacing(5)
        swatch = QLabel()
        swatch.setObjectName("legend-swatch")
        swatch.setFixedSize(12, 12)
        swatch.setStyleSheet(f"background: {colour}; border: 1px solid {colour}; border-radius: 2px;")
        swatch.colour = colour  # type: ignore[attr-defined]
        label = QLabel(name)
        label.setObjectName("legend-name")
        theme.set_themed_style_sheet(label, "color: @CHART_FOREGROUND; background: transparent;")
        pair.addWidget(swatch)
        pair.addWidget(label)
        layout.addWidget(entry)
    return row


class _CategoryTicks(QObject):
    """A chart's category labels under its x axis, as many as fit side by side: every k-th one
    (the last always) when the plot is too narrow for all of them, the others ticked without a
    label. pyqtgraph draws given labels over each other (a per-layer chart of nine layers was a
    smudge)."""

    GAP_PIXELS = 12

    def __init__(self, item, categories: list[str]):
        super().__init__(item.getViewBox())
        self._item = item
        self._categories = categories
        self.shown: list[str] = list(categories)
        item.getViewBox().sigResized.connect(self.relabel)
        self.relabel()

    def relabel(self, *_args) -> None:
        axis = self._item.getAxis("bottom")
        count = len(self._categories)
        metrics = QFontMetrics(axis.style.get("tickFont") or QFont())
        widest = max((metrics.horizontalAdvance(c) for c in self._categories), default=0) + self.GAP_PIXELS
        room = max(self._item.getViewBox().width(), 1.0) / max(count, 1)
        step = max(1, math.ceil(widest / room))
        chosen = list(range(0, count, step))
        last = count - 1
        if count and chosen[-1] != last:
            if len(chosen) > 1:
                chosen.pop()  # it would touch the last label, which is always shown
            chosen.append(last)
        major = [(i, self._categories[i]) for i in chosen]
        minor = [(i, "") for i in range(count) if i not in chosen]
        self.shown = [label for _, label in major]
        axis.setTicks([major, minor])
        # The last label, centred on the last category, may reach past the axis' end; pyqtgraph
        # hides such a label unless told how far it may go (the plot keeps a margin for it).
        last_reach = metrics.horizontalAdvance(self._categories[last]) / 2 - room / 2 if count else 0
        axis.setStyle(hideOverlappingLabels=max(1, math.ceil(last_reach) + 2))
        layout = self._item.layout
        left, top, _, bottom = layout.getContentsMargins()
        layout.setContentsMargins(left, top, max(4.0, last_reach + 4), bottom)


class _PlotColours(QObject):
    """Keeps a report chart's background, axes and axis label in the current theme's chart
    colours (a child of the chart, so it goes with it)."""

    def __init__(self, widget, y_label: str):
        super().__init__(widget)
        self._y_label = y_label
        theme.theme_changes().sig_theme_changed.connect(self.restyle)
        self.restyle()

    def restyle(self, _theme: str = "") -> None:
        import pyqtgraph as pg

        widget = self.parent()
        widget.setBackground(theme.colour("CHART_BACKGROUND"))
        item = widget.getPlotItem()
        pen = pg.mkPen(theme.colour("CHART_FOREGROUND"))
        for side in ("left", "bottom"):
            item.getAxis(side).setTextPen(pen)
            item.getAxis(side).setPen(pen)
        if self._y_label:
            item.setLabel("left", self._y_label, color=theme.colour("CHART_FOREGROUND"))


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

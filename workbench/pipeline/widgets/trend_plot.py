"""A metric across iterations: one point per iteration that trained a model, filled when it
passed its gates and hollow red when it failed one, the selected iteration ringed; the look of
the Registry's metric plot.

pyqtgraph costs over half a second to import, so the plot is built only when it is first shown
with points to draw; ``preload_pyqtgraph`` starts that import on a background thread as soon as
there are iterations.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QStackedLayout, QVBoxLayout, QWidget

from workbench.pipeline.iterations import Iteration
from workbench.pipeline.widgets.iteration_rows import metric_names, trend_points
from workbench.qt import theme
from workbench.qt.plot_loading import preload_pyqtgraph

LINE_COLOUR = "#1f77b4"
SELECTED_COLOUR = "#ff7f0e"
FAILED_COLOUR = "#d62728"
NO_METRICS_TEXT = "No iteration has trained a model with metrics yet."


class TrendPlot(QWidget):
    """The chosen metric of every iteration against its number."""

    sig_iteration_clicked = Signal(str)
    """The user clicked the point of this iteration (its NNNN)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._iterations: list[Iteration] = []
        self._selected: int | None = None
        self._plot_widget = None
        self._plot = None
        self._curve = None
        self._failed = None
        self._ring = None
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        row = QHBoxLayout()
        row.setContentsMargins(6, 2, 6, 0)
        row.addWidget(QLabel("Metric:"))
        self.metric_box = QComboBox()
        self.metric_box.setObjectName("pipeline-plot-metric")
        self.metric_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.metric_box.currentTextChanged.connect(lambda _name: self._draw())
        row.addWidget(self.metric_box)
        row.addStretch(1)
        column.addLayout(row)
        self._stack = QStackedLayout()
        self.empty_label = QLabel(NO_METRICS_TEXT)
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setWordWrap(True)
        theme.set_themed_style_sheet(self.empty_label, "color: @MUTED_TEXT;")
        self._stack.addWidget(self.empty_label)
        column.addLayout(self._stack, 1)

    @property
    def chosen_metric(self) -> str:
        return self.metric_box.currentText()

    def set_iterations(self, iterations: list[Iteration], preferred: str = "") -> None:
        """Plot ``iterations``; the metric stays the one chosen while they have it, else
        ``preferred`` (the project's metric), else the first they have."""
        self._iterations = list(iterations)
        names = metric_names(iterations, preferred)
        current = self.chosen_metric
        self.metric_box.blockSignals(True)
        self.metric_box.clear()
        self.metric_box.addItems(names)
        keep = current if current in names else (preferred if preferred in names else "")
        if keep:
            self.metric_box.setCurrentText(keep)
        self.metric_box.blockSignals(False)
        if iterations:
            preload_pyqtgraph()
        self._draw()

    def select(self, version: str | None) -> None:
        self._selected = int(version) if version else None
        self._draw_selection()

    def points(self) -> tuple[list[int], list[float]]:
        """The (iteration numbers, values) the plot draws for the chosen metric."""
        xs, ys, _passed = trend_points(self._iterations, self.chosen_metric) if self.chosen_metric else ([], [], [])
        return xs, ys

    def plotted(self) -> tuple[list[float], list[float]]:
        """What the curve holds now (empty before the plot is built)."""
        if self._curve is None:
            return [], []
        xs, ys = self._curve.getData()
        return ([] if xs is None else [float(x) for x in xs]), ([] if ys is None else [float(y) for y in ys])

    def showEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().showEvent(event)
        self._draw()

    def _draw(self) -> None:
        xs, ys, passed = trend_points(self._iterations, self.chosen_metric) if self.chosen_metric else ([], [], [])
        if not xs:
            self.empty_label.setText(NO_METRICS_TEXT if self._iterations else "")
            self._stack.setCurrentWidget(self.empty_label)
            return
        if not self.isVisible():
            return  # drawn when shown: no pyqtgraph before
        self._build()
        self._curve.setData(xs, ys)
        self._failed.setData([x for x, ok in zip(xs, passed) if not ok], [y for y, ok in zip(ys, passed) if not ok])
        self._plot.setLabel("left", self.chosen_metric)
        self._plot.setXRange(min(xs) - 0.6, max(xs) + 0.6, padding=0)
        step = max(1, -(-len(xs) // 12))
        self._plot.getAxis("bottom").setTicks([[(x, f"{x:04d}") for x in xs[::step]]])
        self._draw_selection()
        self._stack.setCurrentWidget(self._plot_widget)

    def _draw_selection(self) -> None:
        if self._ring is None:
            return
        xs, ys = self.points()
        chosen = [(x, y) for x, y in zip(xs, ys) if x == self._selected]
        self._ring.setData([x for x, _ in chosen], [y for _, y in chosen])

    def _build(self) -> None:
        if self._plot_widget is not None:
            return
        # Leave this import here: see the module docstring.
        import pyqtgraph as pg

        widget = pg.PlotWidget(background=theme.CHART_BACKGROUND)
        widget.setObjectName("pipeline-trend-plot")
        widget.setMinimumSize(160, 120)
        plot = widget.getPlotItem()
        plot.showGrid(x=True, y=True, alpha=0.25)
        plot.setLabel("bottom", "iteration")
        plot.setMenuEnabled(False)
        plot.getAxis("left").enableAutoSIPrefix(False)
        plot.getViewBox().setDefaultPadding(0.12)
        self._curve = plot.plot([], [], pen=pg.mkPen(LINE_COLOUR, width=2), symbol="o", symbolSize=7,
                                symbolBrush=pg.mkBrush(LINE_COLOUR), symbolPen=pg.mkPen(LINE_COLOUR))
        self._curve.sigPointsClicked.connect(self._clicked)
        # An iteration whose gates failed: its point drawn over, hollow and red.
        self._failed = pg.ScatterPlotItem([], [], size=9, pen=pg.mkPen(FAILED_COLOUR, width=2),
                                          brush=pg.mkBrush(theme.CHART_BACKGROUND))
        plot.addItem(self._failed)
        self._ring = pg.ScatterPlotItem([], [], size=15, pen=pg.mkPen(SELECTED_COLOUR, width=2),
                                        brush=pg.mkBrush(None))
        plot.addItem(self._ring)
        self._plot_widget, self._plot = widget, plot
        self._take_theme_colours()
        theme.theme_changes().sig_theme_changed.connect(self._take_theme_colours)
        self._stack.addWidget(widget)

    def _take_theme_colours(self, _theme: str = "") -> None:
        import pyqtgraph as pg

        self._plot_widget.setBackground(theme.CHART_BACKGROUND)
        self._failed.setBrush(pg.mkBrush(theme.CHART_BACKGROUND))
        dark = theme.current_theme() == theme.DARK
        for axis in ("left", "bottom"):
            self._plot.getAxis(axis).setPen(pg.mkPen("#6b6b6b" if dark else "#999"))
            self._plot.getAxis(axis).setTextPen(pg.mkPen(theme.CHART_FOREGROUND))

    def _clicked(self, _item, spots, *_args) -> None:
        if spots:
            self.sig_iteration_clicked.emit(f"{int(round(spots[0].pos().x())):04d}")

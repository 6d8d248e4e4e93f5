"""A metric across versions: one point per version number, the metric chosen in a box above the
plot, the selected version ringed, the point of a version that failed drawn hollow and red, a few
words written above a point that has them, and a point's version and value in a tooltip when the
pointer rests on it. The Registry (model versions, named by their
aliases) and the Pipeline (iterations, failed when a gate failed) draw their metrics with it; they
hand it plain points.

pyqtgraph costs over half a second to import, so the plot is built only when it is first shown
with points to draw; ``preload_pyqtgraph`` starts that import on a background thread as soon as
there are points.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QStackedLayout, QVBoxLayout, QWidget

from workbench.qt import theme
from workbench.qt.plot_loading import preload_pyqtgraph

LINE_COLOUR = "#1f77b4"
SELECTED_COLOUR = "#ff7f0e"
FAILED_COLOUR = "#d62728"
MOST_TICKS = 12


@dataclass(frozen=True)
class TrendPoint:
    """One version's value of a metric."""

    number: int
    value: float
    failed: bool = False
    """Drawn hollow and red over the line."""
    label: str = ""
    """Written above the point."""
    note: str = ""
    """Added to the point's tooltip."""


class VersionTrendPlot(QWidget):
    """The chosen metric of every version against its number. ``show_points`` gives it what to
    draw; ``metric_box`` is the metric chooser, ``empty_label`` what shows when there is nothing
    to draw."""

    sig_number_clicked = Signal(int)
    """The user clicked the point of the version with this number."""

    def __init__(self, axis_label: str, box_name: str, plot_name: str, parent: QWidget | None = None):
        super().__init__(parent)
        self._axis_label = axis_label
        self._plot_name = plot_name
        self._points: dict[str, list[TrendPoint]] = {}
        self._selected: int | None = None
        self._plot_widget = None
        self._plot = None
        self._curve = None
        self._failed = None
        self._ring = None
        self._labels: list = []
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        row = QHBoxLayout()
        row.setContentsMargins(6, 2, 6, 0)
        row.addWidget(QLabel("Metric:"))
        self.metric_box = QComboBox()
        self.metric_box.setObjectName(box_name)
        self.metric_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.metric_box.currentTextChanged.connect(lambda _name: self._draw())
        row.addWidget(self.metric_box)
        row.addStretch(1)
        column.addLayout(row)
        self._stack = QStackedLayout()
        self.empty_label = QLabel()
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setWordWrap(True)
        theme.set_themed_style_sheet(self.empty_label, "color: @MUTED_TEXT;")
        self._stack.addWidget(self.empty_label)
        column.addLayout(self._stack, 1)

    # --- data ---------------------------------------------------------------------------------

    @property
    def chosen_metric(self) -> str:
        return self.metric_box.currentText()

    def show_points(self, points: dict[str, list[TrendPoint]], preferred: str = "", empty_text: str = "") -> None:
        """Plot ``points`` (by metric name, in the order the box lists them). The metric stays the
        one chosen while there are points of it, else ``preferred``, else the first; when the
        chosen metric has no points, ``empty_text`` shows instead."""
        self._points = {name: sorted(values, key=lambda point: point.number) for name, values in points.items()}
        self.empty_label.setText(empty_text)
        names = list(self._points)
        current = self.chosen_metric
        self.metric_box.blockSignals(True)
        self.metric_box.clear()
        self.metric_box.addItems(names)
        keep = current if current in names else (preferred if preferred in names else "")
        if keep:
            self.metric_box.setCurrentText(keep)
        self.metric_box.blockSignals(False)
        if any(self._points.values()):
            preload_pyqtgraph()
        self._draw()

    def set_metric(self, name: str) -> None:
        self.metric_box.setCurrentText(name)

    def select_number(self, number: int | None) -> None:
        """Ring the point of version ``number`` (none for None)."""
        self._selected = number
        self._draw_selection()

    def chosen_points(self) -> list[TrendPoint]:
        return self._points.get(self.chosen_metric, [])

    def points(self) -> tuple[list[int], list[float]]:
        """The (version numbers, values) the plot draws for the chosen metric."""
        chosen = self.chosen_points()
        return [point.number for point in chosen], [point.value for point in chosen]

    def point_tooltip(self, number: int) -> str:
        """What the tooltip of version ``number``'s point says (empty when it has no point)."""
        for point in self.chosen_points():
            if point.number == number:
                lines = [f"{self._axis_label} {number:04d}", f"{self.chosen_metric} = {point.value:.6g}"]
                return "\n".join(lines + [text for text in (point.label, point.note) if text])
        return ""

    def plotted(self) -> tuple[list[float], list[float]]:
        """What the curve holds now (empty before the plot is built)."""
        if self._curve is None:
            return [], []
        xs, ys = self._curve.getData()
        return ([] if xs is None else [float(x) for x in xs]), ([] if ys is None else [float(y) for y in ys])

    # --- drawing ------------------------------------------------------------------------------

    def showEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().showEvent(event)
        self._draw()

    def _draw(self) -> None:
        chosen = self.chosen_points()
        if not chosen:
            self._stack.setCurrentWidget(self.empty_label)
            return
        if not self.isVisible():
            return  # drawn when shown: no pyqtgraph before
        self._build()
        import pyqtgraph as pg

        xs, ys = self.points()
        self._curve.setData(xs, ys)
        failed = [point for point in chosen if point.failed]
        self._failed.setData([point.number for point in failed], [point.value for point in failed])
        for label in self._labels:
            self._plot.removeItem(label)
        self._labels = []
        for point in chosen:
            if point.label:
                label = pg.TextItem(point.label, color=theme.CHART_FOREGROUND, anchor=(0.5, 1.4))
                label.setPos(point.number, point.value)
                self._plot.addItem(label)
                self._labels.append(label)
        self._plot.setLabel("left", self.chosen_metric)
        # Half a version of room at each end, so the words above the first or last point are
        # not cut at the plot's edge.
        self._plot.setXRange(min(xs) - 0.6, max(xs) + 0.6, padding=0)
        self._plot.getAxis("bottom").setTicks([[(x, f"{x:04d}") for x in _ticks(xs)]])
        self._draw_selection()
        self._stack.setCurrentWidget(self._plot_widget)

    def _draw_selection(self) -> None:
        if self._ring is None:
            return
        chosen = [point for point in self.chosen_points() if point.number == self._selected]
        self._ring.setData([point.number for point in chosen], [point.value for point in chosen])

    def _build(self) -> None:
        if self._plot_widget is not None:
            return
        # Leave this import here: see the module docstring.
        import pyqtgraph as pg

        widget = pg.PlotWidget(background=theme.CHART_BACKGROUND)
        widget.setObjectName(self._plot_name)
        widget.setMinimumSize(160, 120)
        plot = widget.getPlotItem()
        plot.showGrid(x=True, y=True, alpha=0.25)
        plot.setLabel("bottom", self._axis_label)
        plot.setMenuEnabled(False)
        plot.getAxis("left").enableAutoSIPrefix(False)
        plot.getViewBox().setDefaultPadding(0.12)
        self._curve = plot.plot([], [], pen=pg.mkPen(LINE_COLOUR, width=2), symbol="o", symbolSize=7,
                                symbolBrush=pg.mkBrush(LINE_COLOUR), symbolPen=pg.mkPen(LINE_COLOUR))
        self._curve.sigPointsClicked.connect(self._clicked)
        self._curve.scatter.setData([], [], hoverable=True,
                                    tip=lambda x, y, data: self.point_tooltip(int(round(x))))
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
        for label in self._labels:
            label.setColor(theme.CHART_FOREGROUND)

    def _clicked(self, _item, spots, *_args) -> None:
        if spots:
            self.sig_number_clicked.emit(int(round(spots[0].pos().x())))


def _ticks(numbers: list[int], most: int = MOST_TICKS) -> list[int]:
    """Whole version numbers for the axis, at most ``most`` of them (every n-th one)."""
    step = max(1, -(-len(numbers) // most))
    return numbers[::step]

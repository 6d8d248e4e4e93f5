"""A metric across model versions: one point per version, the chosen metric selectable, the
selected version ringed and the aliased ones named.

pyqtgraph costs over half a second to import, so the plot is built only when the view is first
shown with points to draw; ``preload_pyqtgraph`` starts that import on a background thread as
soon as there are versions.
"""

from __future__ import annotations


from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QStackedLayout, QVBoxLayout, QWidget

from workbench.qt import theme
from workbench.registry.models import ModelVersion
from workbench.registry.widgets.version_rows import metric_names, points
from workbench.qt.plot_loading import preload_pyqtgraph

LINE_COLOUR = "#1f77b4"
SELECTED_COLOUR = "#ff7f0e"
NO_METRICS_TEXT = "The versions record no metrics to plot."

class MetricPlot(QWidget):
    """The chosen metric of every version against its number."""

    sig_version_clicked = Signal(int)
    """The user clicked the point of this version."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._versions: list[ModelVersion] = []
        self._selected: int | None = None
        self._plot_widget = None
        self._curve = None
        self._ring = None
        self._labels: list = []
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        row = QHBoxLayout()
        row.setContentsMargins(6, 2, 6, 0)
        row.addWidget(QLabel("Metric:"))
        self.metric_box = QComboBox()
        self.metric_box.setObjectName("registry-plot-metric")
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

    # --- data ---------------------------------------------------------------------------------

    @property
    def chosen_metric(self) -> str:
        return self.metric_box.currentText()

    def set_versions(self, versions: list[ModelVersion], preferred: str = "") -> None:
        """Plot ``versions``; the metric stays the one chosen when the versions still have it,
        else ``preferred``, else the first they have."""
        self._versions = list(versions)
        names = metric_names(versions)
        current = self.chosen_metric
        self.metric_box.blockSignals(True)
        self.metric_box.clear()
        self.metric_box.addItems(names)
        keep = current if current in names else (preferred if preferred in names else "")
        if keep:
            self.metric_box.setCurrentText(keep)
        self.metric_box.blockSignals(False)
        if versions:
            preload_pyqtgraph()
        self._draw()

    def set_metric(self, name: str) -> None:
        self.metric_box.setCurrentText(name)

    def select(self, number: int | None) -> None:
        self._selected = number
        self._draw_selection()

    def points(self) -> tuple[list[int], list[float]]:
        """The (version numbers, values) the plot draws for the chosen metric."""
        return points(self._versions, self.chosen_metric) if self.chosen_metric else ([], [])

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
        xs, ys = self.points()
        if not xs:
            self.empty_label.setText(NO_METRICS_TEXT if self._versions else "")
            self._stack.setCurrentWidget(self.empty_label)
            return
        if not self.isVisible():
            return  # drawn when shown: no pyqtgraph before
        self._build()
        import pyqtgraph as pg

        self._curve.setData(xs, ys)
        for label in self._labels:
            self._plot.removeItem(label)
        self._labels = []
        aliased = {version.number: ", ".join(version.aliases) for version in self._versions if version.aliases}
        for x, y in zip(xs, ys):
            if x in aliased:
                label = pg.TextItem(aliased[x], color=theme.CHART_FOREGROUND, anchor=(0.5, 1.4))
                label.setPos(x, y)
                self._plot.addItem(label)
                self._labels.append(label)
        self._plot.setLabel("left", self.chosen_metric)
        # Half a version of room at each end, so the names of aliases on the first or last
        # version are not cut at the plot's edge.
        self._plot.setXRange(min(xs) - 0.6, max(xs) + 0.6, padding=0)
        self._plot.getAxis("bottom").setTicks([[(x, f"{x:04d}") for x in _ticks(xs)]])
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
        widget.setObjectName("registry-metric-plot")
        widget.setMinimumSize(160, 120)
        plot = widget.getPlotItem()
        plot.showGrid(x=True, y=True, alpha=0.25)
        plot.setLabel("bottom", "version")
        plot.setMenuEnabled(False)
        plot.getAxis("left").enableAutoSIPrefix(False)
        plot.getViewBox().setDefaultPadding(0.12)
        self._curve = plot.plot([], [], pen=pg.mkPen(LINE_COLOUR, width=2), symbol="o", symbolSize=7,
                                symbolBrush=pg.mkBrush(LINE_COLOUR), symbolPen=pg.mkPen(LINE_COLOUR))
        self._curve.sigPointsClicked.connect(self._clicked)
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
        dark = theme.current_theme() == theme.DARK
        for axis in ("left", "bottom"):
            self._plot.getAxis(axis).setPen(pg.mkPen("#6b6b6b" if dark else "#999"))
            self._plot.getAxis(axis).setTextPen(pg.mkPen(theme.CHART_FOREGROUND))
        for label in self._labels:
            label.setColor(theme.CHART_FOREGROUND)

    def _clicked(self, _item, spots, *_args) -> None:
        if spots:
            self.sig_version_clicked.emit(int(round(spots[0].pos().x())))


def _ticks(numbers: list[int], most: int = 12) -> list[int]:
    """Whole version numbers for the axis, at most ``most`` of them (every n-th one)."""
    step = max(1, -(-len(numbers) // most))
    return numbers[::step]

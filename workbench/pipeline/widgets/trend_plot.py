"""A metric across iterations: one point per iteration that trained a model, filled when it
passed its gates and hollow red when it failed one, the selected iteration ringed; drawn by the
plot the Registry's metrics use (``workbench.qt.version_trend_plot``)."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QWidget

from workbench.pipeline.iterations import Iteration
from workbench.pipeline.widgets.iteration_rows import metric_names, trend_points
from workbench.qt.version_trend_plot import TrendPoint, VersionTrendPlot

NO_METRICS_TEXT = "No iteration has trained a model with metrics yet."


class TrendPlot(VersionTrendPlot):
    """The chosen metric of every iteration against its number."""

    sig_iteration_clicked = Signal(str)
    """The user clicked the point of this iteration (its NNNN)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__("iteration", "pipeline-plot-metric", "pipeline-trend-plot", parent)
        self.sig_number_clicked.connect(lambda number: self.sig_iteration_clicked.emit(f"{number:04d}"))

    def set_iterations(self, iterations: list[Iteration], preferred: str = "") -> None:
        """Plot ``iterations``; the metric stays the one chosen while they have it, else
        ``preferred`` (the project's metric), else the first they have."""
        self.show_points({name: _points(iterations, name) for name in metric_names(iterations, preferred)},
                         preferred, NO_METRICS_TEXT if iterations else "")

    def select(self, version: str | None) -> None:
        """Ring the point of iteration ``version`` (NNNN; none for None)."""
        self.select_number(int(version) if version else None)


def _points(iterations: list[Iteration], metric: str) -> list[TrendPoint]:
    numbers, values, passed = trend_points(iterations, metric)
    return [TrendPoint(number, value, failed=not ok, note="" if ok else "a gate failed")
            for number, value, ok in zip(numbers, values, passed)]

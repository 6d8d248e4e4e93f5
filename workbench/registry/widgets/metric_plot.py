"""A metric across model versions: one point per version, the chosen metric selectable, the
selected version ringed and the aliased ones named; drawn by the plot the Pipeline's iterations
use (``workbench.qt.version_trend_plot``)."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from workbench.qt.version_trend_plot import TrendPoint, VersionTrendPlot
from workbench.registry.models import ModelVersion
from workbench.registry.widgets.version_rows import metric_names, points

NO_METRICS_TEXT = "The versions record no metrics to plot."


class MetricPlot(VersionTrendPlot):
    """The chosen metric of every version against its number, a version's aliases above its
    point."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__("version", "registry-plot-metric", "registry-metric-plot", parent)

    def set_versions(self, versions: list[ModelVersion], preferred: str = "") -> None:
        """Plot ``versions``; the metric stays the one chosen when the versions still have it,
        else ``preferred``, else the first they have."""
        aliases = {version.number: ", ".join(version.aliases) for version in versions if version.aliases}

        def of(name: str) -> list[TrendPoint]:
            numbers, values = points(versions, name)
            return [TrendPoint(number, value, label=aliases.get(number, "")) for number, value in zip(numbers, values)]

        self.show_points({name: of(name) for name in metric_names(versions)}, preferred,
                         NO_METRICS_TEXT if versions else "")

"""Live training curves: loss, accuracy and learning rate against the step, for one run or
overlaid for several.

pyqtgraph costs over half a second to import, so the plots are built only when the view is
first shown with points to draw; until then the records are only kept. As soon as a run is
given to the view, pyqtgraph starts loading on a background thread, so neither the window nor
the first point waits for it.
"""

from __future__ import annotations

import math
from typing import Iterable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QBoxLayout, QLabel, QStackedLayout, QVBoxLayout, QWidget

from workbench.qt import theme
from workbench.qt.plot_loading import preload_pyqtgraph

# (plot id, y-axis label, where its legend goes: (x, y) offset, negative from the right/bottom;
# None: no legend, the axis says what the one curve of a run is)
PLOTS = (("loss", "loss", (-8, 8)), ("acc", "accuracy", (-8, -8)), ("lr", "learning rate", None))
# One colour per metric for a single run; one colour per run in a comparison.
METRIC_COLOURS = {"loss": "#1f77b4", "acc": "#1f77b4", "val_loss": "#ff7f0e", "val_acc": "#ff7f0e",
                  "test_loss": "#2ca02c", "test_acc": "#2ca02c", "lr": "#9467bd"}
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")
NOT_METRICS = ("step", "epoch", "time")
EMPTY_TEXT = ("Waiting for the first metrics…\nThe script reports them through workbench_trainkit, "
              "or by printing lines such as  step=10 loss=0.52 acc=0.91")


def plot_for(name: str) -> str:
    """Which plot a metric goes on: "lr", "acc", or "loss" (also for any other name)."""
    lower = name.lower()
    if lower == "lr" or lower.endswith("_lr") or "learning_rate" in lower:
        return "lr"
    if "acc" in lower:
        return "acc"
    return "loss"


def _line_style(name: str) -> Qt.PenStyle:
    """Training metrics solid, validation dashed, test dotted (what tells them apart when a
    comparison gives each run one colour)."""
    if name.startswith("val_"):
        return Qt.PenStyle.DashLine
    if name.startswith("test_"):
        return Qt.PenStyle.DotLine
    return Qt.PenStyle.SolidLine


def _chart_colours(plot, widget) -> None:
    """Give one plot the current theme's background, axes and legend."""
    import pyqtgraph as pg

    widget.setBackground(theme.CHART_BACKGROUND)
    dark = theme.current_theme() == theme.DARK
    for axis in ("left", "bottom"):
        plot.getAxis(axis).setPen(pg.mkPen("#6b6b6b" if dark else "#999"))
        plot.getAxis(axis).setTextPen(pg.mkPen(theme.CHART_FOREGROUND))
    legend = plot.legend
    if legend is not None:
        legend.setBrush(pg.mkBrush(30, 30, 30, 200) if dark else pg.mkBrush(255, 255, 255, 200))
        legend.setLabelTextColor(theme.CHART_FOREGROUND)


class CurvesView(QWidget):
    """Three plots sharing the step axis, fed with metric records (``add_records``); a plot
    with no points for the runs shown is left out until it gets some."""

    def __init__(self, parent: QWidget | None = None, empty_text: str = EMPTY_TEXT):
        super().__init__(parent)
        self._stack = QStackedLayout(self)
        self.empty_label = QLabel(empty_text)
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setWordWrap(True)
        theme.set_themed_style_sheet(self.empty_label, "color: @MUTED_TEXT;")
        self._stack.addWidget(self.empty_label)
        self._plots_page: QWidget | None = None
        self._plots_row: QBoxLayout | None = None
        self.runs_legend: QLabel | None = None
        self._plots: dict[str, object] = {}
        self._plot_widgets: dict[str, QWidget] = {}
        self._items: dict[tuple[str, str], object] = {}
        self._data: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
        self._dirty: set[tuple[str, str]] = set()
        self._last_step: dict[str, float] = {}
        self._runs: list[str] = []
        self._labels: dict[str, str] = {}

    # --- data ---------------------------------------------------------------------------------

    def set_runs(self, run_ids: list[str], labels: dict[str, str] | None = None) -> None:
        """Show these runs (from no points); more than one overlays them, a colour each."""
        self._runs = list(run_ids)
        self._labels = dict(labels or {})
        self._data.clear()
        self._dirty.clear()
        self._last_step.clear()
        for plot in self._plots.values():
            plot.clear()
            if plot.legend is not None:
                plot.legend.clear()
        self._items.clear()
        self._update_runs_legend()
        self._update_plot_visibility()
        self._stack.setCurrentWidget(self.empty_label)
        if run_ids:
            preload_pyqtgraph()

    @property
    def comparing(self) -> bool:
        return len(self._runs) > 1

    def add_records(self, run_id: str, records: Iterable[dict]) -> None:
        """Append metric records (``{"step": 120, "loss": 0.41, ...}``) of ``run_id``."""
        step = self._last_step.get(run_id)
        for record in records:
            raw_step = record.get("step")
            if isinstance(raw_step, (int, float)) and not isinstance(raw_step, bool):
                step = float(raw_step)
            if step is None:
                continue  # nothing to place it at yet
            for name, value in record.items():
                if name in NOT_METRICS or isinstance(value, bool) or not isinstance(value, (int, float)):
                    continue
                xs, ys = self._data.setdefault((run_id, name), ([], []))
                xs.append(step)
                ys.append(float(value) if math.isfinite(value) else math.nan)
                self._dirty.add((run_id, name))
        if step is not None:
            self._last_step[run_id] = step
        self._draw()

    def clear_run(self, run_id: str) -> None:
        """Forget the points of one run (its metrics file started over)."""
        for key in [k for k in self._data if k[0] == run_id]:
            del self._data[key]
            self._dirty.discard(key)
            item = self._items.pop(key, None)
            if item is not None:
                plot = self._plots[plot_for(key[1])]
                plot.removeItem(item)
                if plot.legend is not None:
                    plot.legend.removeItem(item)
        self._last_step.pop(run_id, None)
        self._update_plot_visibility()

    def _update_plot_visibility(self) -> None:
        # A plot with nothing to draw (no learning rate reported, say) gives its room to the others.
        with_data = {plot_for(name) for (_run_id, name), (xs, _ys) in self._data.items() if xs}
        for plot_id, widget in self._plot_widgets.items():
            widget.setVisible(plot_id in with_data)

    def points(self, run_id: str, name: str) -> tuple[list[float], list[float]]:
        """The (steps, values) received for one metric of one run."""
        xs, ys = self._data.get((run_id, name), ([], []))
        return list(xs), list(ys)

    def plotted(self, run_id: str, name: str) -> int:
        """How many points of that metric the plot draws now (0 before the plots exist)."""
        item = self._items.get((run_id, name))
        if item is None:
            return 0
        xs, _ys = item.getOriginalDataset()
        return 0 if xs is None else len(xs)

    def legend_labels(self, plot_id: str) -> list[str]:
        """The names in a plot's legend (a single run's metrics; none when comparing runs)."""
        plot = self._plots.get(plot_id)
        if plot is None or plot.legend is None:
            return []
        return [label.text for _sample, label in plot.legend.items]

    def _update_runs_legend(self) -> None:
        # Comparing, one legend above the plots says which colour is which run: per-plot legends
        # would list every run twice (training and validation) and hide the curves.
        if self.runs_legend is None:
            return
        self.runs_legend.setVisible(self.comparing)
        if not self.comparing:
            return
        entries = [f"<span style='color:{PALETTE[i % len(PALETTE)]}; font-weight:bold'>━━</span>&nbsp;"
                   f"{self._labels.get(run_id, run_id)}" for i, run_id in enumerate(self._runs)]
        key = "<span style='color:#777'>━ training&nbsp;&nbsp;╍ validation&nbsp;&nbsp;┅ test</span>"
        self.runs_legend.setText("&nbsp;&nbsp;&nbsp;&nbsp;".join(entries) + "&nbsp;&nbsp;&nbsp;&nbsp;" + key)

    # --- drawing ------------------------------------------------------------------------------

    def showEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().showEvent(event)
        self._draw()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().resizeEvent(event)
        if self._plots_row is not None:
            wide = self.width() > 1.6 * self.height()
            self._plots_row.setDirection(
                QBoxLayout.Direction.LeftToRight if wide else QBoxLayout.Direction.TopToBottom)

    def _draw(self) -> None:
        if not self._data or not self.isVisible():
            return  # kept for when the view is shown: no plots (and no pyqtgraph) before
        self._build_plots()
        import numpy as np

        learning_rate_changed = False
        for key in sorted(self._dirty):
            run_id, name = key
            xs, ys = self._data[key]
            item = self._items.get(key) or self._add_item(run_id, name)
            item.setData(np.asarray(xs, dtype=float), np.asarray(ys, dtype=float))
            learning_rate_changed |= plot_for(name) == "lr"
        self._dirty.clear()
        if learning_rate_changed:
            self._range_learning_rate_from_zero()
        self._update_plot_visibility()
        self._stack.setCurrentWidget(self._plots_page)

    def _range_learning_rate_from_zero(self) -> None:
        # A constant learning rate would otherwise sit in the middle of a ±0.5 range, reading
        # as 0; from zero to just above the largest value shows its size and its schedule.
        values = [y for (run_id, name), (_xs, ys) in self._data.items() if plot_for(name) == "lr"
                  for y in ys if math.isfinite(y)]
        top = max(values, default=0.0)
        if top > 0:
            self._plots["lr"].setYRange(0, top * 1.08, padding=0)

    def _take_theme_colours(self, _theme: str = "") -> None:
        for plot_id, plot in self._plots.items():
            _chart_colours(plot, self._plot_widgets[plot_id])

    def _build_plots(self) -> None:
        if self._plots_page is not None:
            return
        # Leave this import here: see the module docstring.
        import pyqtgraph as pg

        page = QWidget(self)
        column = QVBoxLayout(page)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        self.runs_legend = QLabel()
        self.runs_legend.setTextFormat(Qt.TextFormat.RichText)
        self.runs_legend.setContentsMargins(8, 2, 8, 2)
        column.addWidget(self.runs_legend)
        layout = QBoxLayout(QBoxLayout.Direction.LeftToRight)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        column.addLayout(layout, 1)
        self._plots_row = layout
        first = None
        for plot_id, label, legend_offset in PLOTS:
            widget = pg.PlotWidget(background=theme.CHART_BACKGROUND)
            widget.setObjectName(f"curves-{plot_id}")
            widget.setMinimumSize(160, 120)
            plot = widget.getPlotItem()
            plot.showGrid(x=True, y=True, alpha=0.25)
            plot.setLabel("left", label)
            plot.setLabel("bottom", "step")
            plot.setClipToView(True)
            plot.setDownsampling(auto=True, mode="peak")
            plot.setMenuEnabled(False)
            if legend_offset is not None:
                plot.addLegend(offset=legend_offset, labelTextSize="8pt")
            # Metrics have no unit for an SI prefix to scale: an accuracy of 0.2-0.8 read
            # "200-800 (x0.001)".
            plot.getAxis("left").enableAutoSIPrefix(False)
            if first is None:
                first = plot
            else:
                plot.setXLink(first)  # the three plots share the step axis
            self._plots[plot_id] = plot
            self._plot_widgets[plot_id] = widget
            layout.addWidget(widget, 1)
        self._plots_page = page
        self._take_theme_colours()
        theme.theme_changes().sig_theme_changed.connect(self._take_theme_colours)
        self._stack.addWidget(page)
        self._update_runs_legend()
        wide = self.width() > 1.6 * self.height()
        layout.setDirection(QBoxLayout.Direction.LeftToRight if wide else QBoxLayout.Direction.TopToBottom)

    def _add_item(self, run_id: str, name: str):
        import pyqtgraph as pg

        if self.comparing:
            index = self._runs.index(run_id) if run_id in self._runs else len(self._runs)
            colour = PALETTE[index % len(PALETTE)]
            label = None  # the runs legend above the plots names the colours
        else:
            colour = METRIC_COLOURS.get(name) or PALETTE[(len(self._items) + 4) % len(PALETTE)]
            label = name
        pen = pg.mkPen(colour, width=2, style=_line_style(name))
        plot = self._plots[plot_for(name)]
        item = plot.plot([], [], pen=pen, name=label, connect="finite")
        if name.startswith(("val_", "test_")):
            # Evaluation points are few (once an epoch): a dot at each shows where they were taken.
            item.setSymbol("o")
            item.setSymbolSize(5)
            item.setSymbolBrush(pg.mkBrush(colour))
            item.setSymbolPen(pg.mkPen(colour))
        self._items[(run_id, name)] = item
        return item

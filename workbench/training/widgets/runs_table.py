"""The list of runs: newest first, with state, times and final metrics; rows keep their
selection when the list is refreshed."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTreeWidget, QTreeWidgetItem, QWidget

from workbench.training.metrics import shown_metric_names
from workbench.training.run_text import problem_text, state_text
from workbench.training.widgets.comparison import format_value

COLUMNS = ("Run", "State", "Hyper-parameters", "Started", "Duration", "loss", "acc", "val_acc")
(COLUMN_RUN, COLUMN_STATE, COLUMN_SOURCE, COLUMN_STARTED, COLUMN_DURATION,
 COLUMN_LOSS, COLUMN_ACC, COLUMN_VAL_ACC) = range(len(COLUMNS))
# The three metric columns show these names when the runs have them; runs that log other names
# (a project of one's own: train_loss, test_accuracy) get theirs, and the header says which.
PREFERRED_METRICS = ("loss", "acc", "val_acc")
METRIC_COLUMNS = {COLUMN_LOSS: "loss", COLUMN_ACC: "acc", COLUMN_VAL_ACC: "val_acc"}
STATE_COLOURS = {
    "starting": "#4a90d9", "running": "#1a73e8", "stopping": "#e0a000", "stopped": "#8a8a8a",
    "completed": "#2e9d48", "failed": "#d93025", "terminated": "#a52714", "lost": "#9c6ade",
}
RUN_ID_ROLE = Qt.ItemDataRole.UserRole
# Room around a metric's text in its cell (margins, and the focus frame of the selected row).
METRIC_PADDING = 16


def state_icon(state: str) -> QIcon:
    """A coloured dot for a run state (a ring while the run is still going)."""
    pixmap = QPixmap(12, 12)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    colour = QColor(STATE_COLOURS.get(state, "#8a8a8a"))
    painter.setPen(colour)
    painter.setBrush(colour)
    painter.drawEllipse(1, 1, 10, 10)
    if state in ("starting", "running", "stopping"):
        painter.setBrush(QColor("white"))
        painter.drawEllipse(4, 4, 4, 4)
    painter.end()
    return QIcon(pixmap)


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


def format_started(timestamp: float | None, now: float | None = None) -> str:
    if not timestamp:
        return ""
    when = datetime.fromtimestamp(timestamp)
    today = datetime.fromtimestamp(now or time.time()).date()
    return when.strftime("%H:%M:%S") if when.date() == today else when.strftime("%Y-%m-%d %H:%M")


def source_parts(info) -> list[str]:
    """The hyper-parameter file's name, the overrides and the processes of a run."""
    parts = [Path(info.hparams_file).name if info.hparams_file else "defaults", *info.effective_overrides]
    if getattr(info, "nproc", 1) and info.nproc > 1:
        parts.append(f"×{info.nproc} processes")
    return parts


def source_text(info) -> str:
    """The hyper-parameter file's name and the overrides of a run, as a short cell."""
    return "  ".join(source_parts(info))


def source_tooltip(info) -> str:
    """All of what the cell may cut: the file's project path, each override and the processes
    on a line of their own."""
    parts = source_parts(info)
    parts[0] = info.hparams_file or "(no file: the defaults)"
    return "\n".join(parts)


class RunsTable(QTreeWidget):
    """The runs, one row each; select several to compare them."""

    sig_selection_changed = Signal(list)
    """The selected run ids changed (in list order)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setColumnCount(len(COLUMNS))
        self.setHeaderLabels(list(COLUMNS))
        self.setRootIsDecorated(False)
        self.setUniformRowHeights(True)
        self.setAllColumnsShowFocus(True)
        self.setAlternatingRowColors(True)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setIconSize(QSize(12, 12))
        header = self.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        run_width = self.fontMetrics().horizontalAdvance("20261130-083325-340") + 16
        for column, width in ((COLUMN_RUN, run_width), (COLUMN_STATE, 96), (COLUMN_SOURCE, 130),
                              (COLUMN_STARTED, 64), (COLUMN_DURATION, 60)):
            self.setColumnWidth(column, width)
        # Wide enough for 4 significant digits of a small loss ("0.0001234") from the start.
        metric_width = self.fontMetrics().horizontalAdvance("0.0001234") + METRIC_PADDING
        for column in METRIC_COLUMNS:
            self.setColumnWidth(column, metric_width)
            self.headerItem().setTextAlignment(column, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self._items: dict[str, QTreeWidgetItem] = {}
        self._icons: dict[str, QIcon] = {}
        self._live: dict[str, dict] = {}
        self._selected: list[str] = []
        self._extra: dict[int, tuple] = {}
        self._metric_names = dict(METRIC_COLUMNS)  # column -> the metric it shows
        self._infos: dict[str, object] = {}
        self.itemSelectionChanged.connect(self._on_selection)

    def metric_names(self) -> list[str]:
        """The metric each metric column shows, in column order."""
        return list(self._metric_names.values())

    def _choose_metric_columns(self) -> bool:
        """Point the metric columns at the names the listed runs have; True when they changed."""
        finals = [{**(info.final_metrics or {}), **self._live.get(run_id, {})} for run_id, info in self._infos.items()]
        names = shown_metric_names(finals, PREFERRED_METRICS, len(METRIC_COLUMNS))
        chosen = dict(zip(METRIC_COLUMNS, names))
        if chosen == self._metric_names:
            return False
        self._metric_names = chosen
        for column, name in chosen.items():
            self.headerItem().setText(column, name)
            # The whole name in the header: "test_accuracy" is wider than its values.
            needed = self.header().fontMetrics().horizontalAdvance(name) + 2 * METRIC_PADDING
            if self.columnWidth(column) < needed:
                self.setColumnWidth(column, needed)
        return True

    def add_column(self, title: str, text_of, tooltip_of=None, after: int = COLUMN_STATE, width: int = 90) -> int:
        """Another capability's column (the cluster's "Cluster", "Job"…): ``text_of(info)`` and
        ``tooltip_of(info)`` give a run's cell. Shown after column ``after``, and only while some
        listed run has text in it. Returns the column's index."""
        column = self.columnCount()
        self.setColumnCount(column + 1)
        self.headerItem().setText(column, title)
        self.setColumnWidth(column, width)
        header = self.header()
        header.moveSection(column, header.visualIndex(after) + 1 + sum(
            1 for other in self._extra if header.visualIndex(other) > header.visualIndex(after)))
        self._extra[column] = (text_of, tooltip_of)
        self.setColumnHidden(column, True)  # filled, and shown, from the next listing on
        return column

    def set_rows(self, rows) -> None:
        """Show ``rows`` (``RunRow``, newest first), keeping the selection and scroll position."""
        wanted = [row.id for row in rows]
        blocked = self.blockSignals(True)
        try:
            for run_id in list(self._items):
                if run_id not in wanted:
                    item = self._items.pop(run_id)
                    self.takeTopLevelItem(self.indexOfTopLevelItem(item))
            for index, row in enumerate(rows):
                item = self._items.get(row.id)
                if item is None:
                    item = QTreeWidgetItem()
                    item.setData(COLUMN_RUN, RUN_ID_ROLE, row.id)
                    for column in METRIC_COLUMNS:
                        item.setTextAlignment(column, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                    self._items[row.id] = item
                    self.insertTopLevelItem(index, item)
                elif self.indexOfTopLevelItem(item) != index:
                    selected = item.isSelected()
                    self.takeTopLevelItem(self.indexOfTopLevelItem(item))
                    self.insertTopLevelItem(index, item)
                    item.setSelected(selected)
                self._fill(item, row)
        finally:
            self.blockSignals(blocked)
        self._infos = {row.id: row.info for row in rows}
        if self._choose_metric_columns():
            for row in rows:
                self._fill(self._items[row.id], row)
        for column in self._extra:
            self.setColumnHidden(column, not any(item.text(column) for item in self._items.values()))
        self._on_selection()

    def _fill(self, item: QTreeWidgetItem, row) -> None:
        info = row.info
        item.setText(COLUMN_RUN, info.id)
        tooltip = [f"Run {info.id}", f"Folder: {info.run_dir}"]
        if info.resumed_from:
            tooltip.append(f"Resumed from {info.resumed_from}")
        problem = problem_text(info)
        if problem:
            tooltip.append(problem)
        item.setToolTip(COLUMN_RUN, "\n".join(tooltip))
        if info.state not in self._icons:
            self._icons[info.state] = state_icon(info.state)
        item.setIcon(COLUMN_STATE, self._icons[info.state])
        item.setText(COLUMN_STATE, state_text(info))
        item.setForeground(COLUMN_STATE, QBrush(QColor(STATE_COLOURS.get(info.state, "#555"))))
        item.setToolTip(COLUMN_STATE, problem or info.state)
        item.setText(COLUMN_SOURCE, source_text(info))
        item.setToolTip(COLUMN_SOURCE, source_tooltip(info))
        item.setText(COLUMN_STARTED, format_started(info.started_at or info.created_at))
        item.setText(COLUMN_DURATION, format_duration(info.duration))
        metrics = dict(info.final_metrics or {})
        if info.is_active:
            metrics.update(self._live.get(info.id, {}))
        for column, name in self._metric_names.items():
            self._set_metric(item, column, metrics.get(name))
        for column, (text_of, tooltip_of) in self._extra.items():
            item.setText(column, text_of(info) or "")
            item.setToolTip(column, (tooltip_of(info) if tooltip_of else "") or item.text(column))

    def show_live_metrics(self, run_id: str, final: dict) -> None:
        """The latest values the curves received for an active run (between two listings)."""
        self._live.setdefault(run_id, {}).update(final)
        item = self._items.get(run_id)
        if item is None:
            return
        if self._choose_metric_columns():  # the first values of a run that logs other names
            for other_id, other in self._items.items():
                for column, name in self._metric_names.items():
                    info = self._infos.get(other_id)
                    values = {**(getattr(info, "final_metrics", None) or {}), **self._live.get(other_id, {})}
                    self._set_metric(other, column, values.get(name))
            return
        for column, name in self._metric_names.items():
            if name in final:
                self._set_metric(item, column, final[name])

    def _set_metric(self, item: QTreeWidgetItem, column: int, value) -> None:
        text = format_value(value) if value is not None else ""
        item.setToolTip(column, repr(value) if isinstance(value, float) else text)  # every digit
        if item.text(column) == text:
            return
        item.setText(column, text)
        # A column only grows to show a whole number (a small loss would read "0.000…"); one
        # the user widened stays as wide.
        needed = self.fontMetrics().horizontalAdvance(text) + METRIC_PADDING
        if self.columnWidth(column) < needed:
            self.setColumnWidth(column, needed)

    def select_runs(self, run_ids: list[str]) -> None:
        """Select exactly these runs (those listed) and show the first."""
        blocked = self.blockSignals(True)
        try:
            self.clearSelection()
            first = None
            for run_id in run_ids:
                item = self._items.get(run_id)
                if item is not None:
                    item.setSelected(True)
                    first = first or item
            if first is not None:
                self.setCurrentItem(first, 0, self.selectionModel().SelectionFlag.NoUpdate)
                self.scrollToItem(first)
        finally:
            self.blockSignals(blocked)
        self._on_selection()

    def selected_runs(self) -> list[str]:
        return list(self._selected)

    def _on_selection(self) -> None:
        order = {run_id: self.indexOfTopLevelItem(item) for run_id, item in self._items.items()}
        selected = sorted((item.data(COLUMN_RUN, RUN_ID_ROLE) for item in self.selectedItems()),
                          key=lambda run_id: order.get(run_id, 0))
        if selected != self._selected:
            self._selected = selected
            self.sig_selection_changed.emit(selected)

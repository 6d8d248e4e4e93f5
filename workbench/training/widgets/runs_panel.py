"""The Runs panel: the list of runs beside the selected run's curves and log, or a comparison
when several runs are selected.

The list is refreshed every second while a run is active, every few seconds while the panel is
visible (a run started from the command line appears), and when the window is activated.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QSplitter,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.training.widgets.compare_view import CompareView
from workbench.training.widgets.run_details import RunDetails
from workbench.training.widgets.run_poller import RunPoller, WatchedRun
from workbench.training.widgets.runs_table import RunsTable
from workbench.training.widgets.session import RunRow, TrainingSession
from workbench.qt import theme

ACTIVE_REFRESH_MS = 1000
IDLE_REFRESH_MS = 4000
NO_RUNS_TEXT = "No runs yet — press F5 (Run ▸ Train Locally), or Ctrl+F5 to choose the hyper-parameters first"
NOTHING_SELECTED_TEXT = ("Select a run to see its curves and log.\n"
                         "Select two or more (Ctrl+click) to compare them.")
# (command id, button text) of the panel's tool bar, in order.
BUTTONS = (
    ("training.trainLocally", "▶ Train"),
    ("training.stopRun", "Stop"),
    ("training.resumeRun", "Resume"),
    ("training.resumeAsNewRun", "Resume as New…"),
    ("training.terminateRun", "Terminate"),
    ("training.compareRuns", "Compare"),
    ("training.openRunFolder", "Open Folder"),
)


def _hint(text: str) -> QLabel:
    label = QLabel(text)
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    label.setWordWrap(True)
    theme.set_themed_style_sheet(label, "color: @MUTED_TEXT; padding: 12px;")
    return label


class RunsPanel(QWidget):
    """The runs of the project, their details and comparisons."""

    sig_selection_changed = Signal(list)
    """The selected run ids changed."""

    def __init__(self, session: TrainingSession, commands, show_error: Callable[[str], None],
                 open_location: Callable[[str, int], None], parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.commands = commands
        self.show_error = show_error
        self.open_location = open_location
        self._pending_selection: list[str] = []
        self._first_listing = True
        self._generation = 0

        self.buttons: dict[str, QToolButton] = {}
        self._bar = bar = QHBoxLayout()
        bar.setContentsMargins(4, 2, 4, 2)
        bar.setSpacing(2)
        for command_id, text in BUTTONS:
            self._button(command_id, text)
            if command_id == "training.trainLocally":
                bar.addSpacing(8)
        bar.addStretch(1)

        self.table = RunsTable()
        self.table.setObjectName("runs-table")
        self.table.sig_selection_changed.connect(self._on_selection_changed)
        self.no_runs = _hint(NO_RUNS_TEXT)
        self.no_runs.setObjectName("runs-empty")
        self.list_stack = QStackedWidget()
        self.list_stack.addWidget(self.no_runs)
        self.list_stack.addWidget(self.table)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.setSpacing(0)
        left_layout.addLayout(bar)
        left_layout.addWidget(self.list_stack, 1)

        self.nothing_selected = _hint(NOTHING_SELECTED_TEXT)
        self.details = RunDetails()
        self.details.sig_link_activated.connect(self._open_link)
        self.compare = CompareView()
        self.detail_stack = QStackedWidget()
        for page in (self.nothing_selected, self.details, self.compare):
            self.detail_stack.addWidget(page)

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(left)
        self.splitter.addWidget(self.detail_stack)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 3)
        self.splitter.setSizes([700, 700])
        self.splitter.setChildrenCollapsible(False)
        self._layout = layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.splitter)

        self.poller = RunPoller(self)
        self.poller.sig_metrics_read.connect(self._on_metrics)
        self.poller.sig_log_read.connect(self._on_log)
        self.session.sig_runs_changed.connect(self._on_runs_changed)
        self.session.sig_run_started.connect(self._on_run_started)
        self._timer = QTimer(self)
        self._timer.setInterval(IDLE_REFRESH_MS)
        self._timer.timeout.connect(self._on_timer)
        self._timer.start()
        self.update_buttons()

    # --- what other parts ask -----------------------------------------------------------------

    def selected_runs(self) -> list[str]:
        return self.table.selected_runs()

    def selected_rows(self) -> list[RunRow]:
        return [row for row in (self.session.row(run_id) for run_id in self.selected_runs()) if row is not None]

    def select_runs(self, run_ids: list[str]) -> None:
        """Select these runs (as soon as they are listed); none: clear the selection."""
        self._pending_selection = list(run_ids)
        if run_ids:
            self._apply_pending_selection()
        else:
            self.table.select_runs([])

    def refresh(self) -> None:
        self.session.refresh()

    def add_button(self, command_id: str, text: str) -> QToolButton:
        """Another capability's command in the tool bar (before Open Folder), enabled as the
        command is."""
        button = self._button(command_id, text, self._bar.indexOf(self.buttons["training.openRunFolder"]))
        self.update_buttons()
        return button

    def add_banner(self, widget: QWidget) -> None:
        """Another capability's notice, above the runs and details (it hides itself)."""
        self._layout.insertWidget(self._layout.indexOf(self.splitter), widget)

    def _button(self, command_id: str, text: str, index: int = -1) -> QToolButton:
        button = QToolButton()
        button.setText(text)
        button.setAutoRaise(True)
        button.setObjectName(command_id)
        button.clicked.connect(lambda _checked=False, cid=command_id: self._run(cid))
        self.buttons[command_id] = button
        self._bar.insertWidget(index, button)
        return button

    def close_down(self) -> None:
        """Stop polling (the window closes; the runs themselves go on)."""
        self._timer.stop()
        self.poller.stop()

    def update_buttons(self) -> None:
        for command_id, button in self.buttons.items():
            try:
                command = self.commands.get(command_id)
            except Exception:  # noqa: BLE001 — not registered (yet): nothing to press
                button.setEnabled(False)
                continue
            button.setEnabled(command.is_enabled())
            button.setToolTip(command.title + (f" ({command.shortcut})" if command.shortcut else ""))

    # --- reacting -----------------------------------------------------------------------------

    def _run(self, command_id: str) -> None:
        try:
            self.commands.execute(command_id)
        except Exception as exc:  # noqa: BLE001 — a CommandError from the registry, shown
            self.show_error(str(exc))

    def _on_timer(self) -> None:
        if self.session.any_active or self.isVisible():
            self.session.refresh()

    def _on_runs_changed(self, rows: list[RunRow]) -> None:
        self.list_stack.setCurrentWidget(self.table if rows else self.no_runs)
        self.table.set_rows(rows)
        if self._first_listing:
            self._first_listing = False
            if not self._pending_selection and not self.selected_runs():
                # A run still going when the window opens is shown at once: its curves continue.
                active = [row.id for row in rows if row.info.is_active]
                if active:
                    self._pending_selection = active[:1]
        self._apply_pending_selection()
        selected = self.selected_rows()
        if len(selected) == 1 and self.details.run_id == selected[0].id:
            self.details.update_info(selected[0])
        elif len(selected) > 1 and self.compare.run_ids == [row.id for row in selected]:
            self.compare.update_table(selected)
        self._timer.setInterval(ACTIVE_REFRESH_MS if self.session.any_active else IDLE_REFRESH_MS)
        self.update_buttons()

    def _on_run_started(self, info) -> None:
        self.select_runs([info.id])

    def _apply_pending_selection(self) -> None:
        if not self._pending_selection:
            return
        listed = [run_id for run_id in self._pending_selection if self.session.row(run_id) is not None]
        if len(listed) == len(self._pending_selection):
            self._pending_selection = []
            self.table.select_runs(listed)

    def _on_selection_changed(self, run_ids: list[str]) -> None:
        rows = self.selected_rows()
        if not rows:
            self.detail_stack.setCurrentWidget(self.nothing_selected)
            self.details.run_id = None
            self.compare.run_ids = []
            self._generation = self.poller.watch([])
        elif len(rows) == 1:
            row = rows[0]
            self.details.show_run(row)
            self.detail_stack.setCurrentWidget(self.details)
            run_dir = Path(row.info.run_dir)
            self._generation = self.poller.watch([WatchedRun(row.id, run_dir / "metrics.jsonl", run_dir)])
        else:
            self.compare.show_runs(rows)
            self.detail_stack.setCurrentWidget(self.compare)
            self.details.run_id = None
            self._generation = self.poller.watch(
                [WatchedRun(row.id, Path(row.info.run_dir) / "metrics.jsonl") for row in rows])
        self.update_buttons()
        self.sig_selection_changed.emit(run_ids)

    def _on_metrics(self, generation: int, run_id: str, records: list, restarted: bool) -> None:
        if generation != self._generation:
            return  # read for an earlier selection
        curves = self.details.curves if self.details.run_id == run_id else self.compare.curves
        if restarted:
            curves.clear_run(run_id)
        curves.add_records(run_id, records)
        row = self.session.row(run_id)
        if records and row is not None and row.info.is_active:
            latest: dict = {}
            for record in records:
                latest.update((name, value) for name, value in record.items() if name != "time"
                              and isinstance(value, (int, float)) and not isinstance(value, bool))
            self.table.show_live_metrics(run_id, latest)
            self.details.show_live_metrics(run_id, latest, restarted)
        elif restarted:
            self.details.show_live_metrics(run_id, {}, restarted)

    def _on_log(self, generation: int, run_id: str, stream: str, text: str) -> None:
        if generation == self._generation and self.details.run_id == run_id:
            self.details.log.append(text, stream)

    def _open_link(self, path: str, line: int) -> None:
        row = self.session.row(self.details.run_id) if self.details.run_id else None
        base = Path(row.info.project_dir) if row is not None else self.session.project_dir
        target = Path(path)
        if not target.is_absolute():
            target = base / target  # the trainer runs in the project folder
        self.open_location(str(target), line)

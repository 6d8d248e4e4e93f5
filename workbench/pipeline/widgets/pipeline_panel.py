"""The Pipeline panel: the project's iterations as a table beside a plot of a metric across
them, the selected iteration's steps below (with what started it), and Start / Stop / Resume;
at the bottom, the trigger watcher's state with Start Watcher / Stop Watcher (``watcher_bar``).

Start and Resume run ``workbench pipeline start|resume`` in a detached process
(``workbench.pipeline.background``), so an iteration goes on when the window closes; what would
refuse it (a broken ``[pipeline]``, another iteration holding the lock) is checked on the task
runner first and shown on the status line and in the window's error box. Stop leaves the stop
request the running iteration honours. The iterations are read again shortly after anything in
``registry/pipeline`` changes: each step's progress is written there as it goes.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QFileSystemWatcher, QSize, Qt, QTimer, Signal
from PySide6.QtWidgets import QLabel, QSplitter, QStackedWidget, QToolBar, QToolButton, QVBoxLayout, QWidget

from workbench.pipeline.background import Launch, Launcher, launch_iteration, start_detached_process
from workbench.pipeline.errors import PipelineError
from workbench.pipeline.iterations import FAILED, PIPELINE_FOLDER, RUNNING, STOPPED, Iteration
from workbench.pipeline.service import PipelineService
from workbench.pipeline.widgets.iteration_rows import metric_names, started_by_text
from workbench.pipeline.widgets.iterations_table import IterationsTable
from workbench.pipeline.widgets.steps_view import StepsView
from workbench.pipeline.widgets.trend_plot import TrendPlot
from workbench.pipeline.widgets.watcher_bar import WatcherBar
from workbench.qt import theme
from workbench.qt.tasks import Operation, TaskRunner

log = logging.getLogger(__name__)

WATCH_DEBOUNCE_MS = 300
FOLLOW_LAUNCH_MS = 500
FOLLOW_LAUNCH_FOR_S = 60.0
"""How long after Start the panel looks at the command's log for an error of its own."""
HEADLINE_METRICS = 3
EMPTY_TEXT = ("No pipeline iterations yet.\n\nDeclare the steps in workbench.toml ([[pipeline.steps]]: dataset, "
              "train, convert, quantize, verify, gate, deploy; see docs/pipeline.md), then Start runs one.")


class PipelinePanel(QWidget):
    """The pipeline iterations of one project."""

    sig_listed = Signal()
    """The table shows the iterations as they are on disk now."""

    sig_operation_finished = Signal(object)
    """Something the panel started (an ``Operation``: start, resume, stop) is over: done or failed."""

    def __init__(self, project_root: Path, tasks: TaskRunner, show_error: Callable[[str], None] | None = None,
                 launcher: Launcher = start_detached_process, parent: QWidget | None = None):
        super().__init__(parent)
        self.project_root = Path(project_root)
        self.tasks = tasks
        self._show_error = show_error
        self.launcher = launcher
        self.iterations: list[Iteration] = []
        self.project_metric = ""
        self.launch: Launch | None = None
        self._folder = self.project_root / "registry" / PIPELINE_FOLDER  # until the settings are read
        self.operations: list[Operation] = []

        bar = QToolBar()
        bar.setObjectName("pipeline-toolbar")
        bar.setIconSize(QSize(16, 16))
        bar.setContentsMargins(4, 0, 4, 0)
        self.buttons: dict[str, QToolButton] = {}
        for key, text, tip, run in (
                ("start", "Start", "Run a new iteration of the declared steps, in a process of its own",
                 lambda: self.start()),
                ("stop", "Stop", "Ask the running iteration to stop (resume goes on from its step)",
                 lambda: self.stop()),
                ("resume", "Resume", "Go on with the selected iteration from the step it failed or stopped at",
                 lambda: self.resume()),
                ("refresh", "Refresh", "Read the iterations again", self.refresh)):
            button = QToolButton()
            button.setObjectName(f"pipeline-{key}")
            button.setText(text)
            button.setToolTip(tip)
            button.setAutoRaise(True)
            button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
            button.clicked.connect(run)
            bar.addWidget(button)
            self.buttons[key] = button

        self.table = IterationsTable()
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.plot = TrendPlot()
        self.plot.sig_iteration_clicked.connect(self.table.select_version)
        self.steps = StepsView(self.project_root)
        self.started_by = QLabel()
        self.started_by.setObjectName("pipeline-started-by")
        self.started_by.setContentsMargins(6, 2, 6, 2)
        self.started_by.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        below = QWidget()
        below_column = QVBoxLayout(below)
        below_column.setContentsMargins(0, 0, 0, 0)
        below_column.setSpacing(0)
        below_column.addWidget(self.started_by)
        below_column.addWidget(self.steps, 1)
        top = QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(self.table)
        top.addWidget(self.plot)
        top.setStretchFactor(0, 3)
        top.setStretchFactor(1, 2)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.addWidget(top)
        self.splitter.addWidget(below)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.empty_label = QLabel(EMPTY_TEXT)
        self.empty_label.setObjectName("pipeline-empty")
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setWordWrap(True)
        self.empty_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        theme.set_themed_style_sheet(self.empty_label, "color: @MUTED_TEXT; padding: 12px;")
        self.stack = QStackedWidget()
        self.stack.addWidget(self.empty_label)
        self.stack.addWidget(self.splitter)
        self.status_line = QLabel()
        self.status_line.setObjectName("pipeline-status")
        self.status_line.setWordWrap(True)
        self.status_line.setContentsMargins(6, 2, 6, 2)
        self.status_line.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.status_line.hide()
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(bar)
        column.addWidget(self.stack, 1)
        self.watcher_bar = WatcherBar(self.project_root, tasks)
        self.watcher_bar.sig_watcher_changed.connect(lambda text, failed: (self.say(text, error=failed),
                                                                           self.refresh()))
        column.addWidget(self.watcher_bar)
        column.addWidget(self.status_line)

        self._watcher = QFileSystemWatcher(self)
        self._watcher.directoryChanged.connect(self._soon)
        self._watcher.fileChanged.connect(self._soon)
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(WATCH_DEBOUNCE_MS)
        self._debounce.timeout.connect(self.refresh)
        self._follow = QTimer(self)
        self._follow.setInterval(FOLLOW_LAUNCH_MS)
        self._follow.timeout.connect(self._follow_launch)
        self._update_buttons()

    # --- listing ------------------------------------------------------------------------------

    @property
    def folder(self) -> Path:
        """Where the iterations' records are: ``<registry folder>/pipeline``."""
        return self._folder

    def refresh(self) -> None:
        """Read the iterations again and show them (the selected one stays selected)."""
        try:
            service = PipelineService(self.project_root)
            self._folder = service.store.folder
            self.iterations = service.list()
            self.project_metric = service.versions.settings.metric
        except (PipelineError, OSError, ValueError) as exc:
            self.iterations = []
            self.empty_label.setText(f"The pipeline's iterations cannot be read: {exc}")
        else:
            self.empty_label.setText(EMPTY_TEXT)
        self.table.show_iterations(self.iterations, metric_names(self.iterations, self.project_metric)[:HEADLINE_METRICS])
        self.plot.set_iterations(self.iterations, preferred=self.project_metric)
        self.stack.setCurrentWidget(self.splitter if self.iterations else self.empty_label)
        self._selection_changed()
        self.watcher_bar.refresh()
        self._watch()
        self.sig_listed.emit()

    def declares_pipeline(self) -> bool:
        """The project's workbench.toml has a ``[pipeline]`` table."""
        from workbench.project.errors import ProjectError
        from workbench.project.project_file import load_project

        try:
            return "pipeline" in load_project(self.project_root).settings
        except (ProjectError, OSError):
            return False

    def watched_paths(self) -> list[Path]:
        """The iterations' folder (the nearest folder above it that is there, so its creation
        is seen) and each iteration's record (a record rewritten in place moves no entry)."""
        folder = self.folder
        if not folder.is_dir():
            return [folder.parent if folder.parent.is_dir() else self.project_root]
        return [folder, *sorted(folder.glob("iteration_*.json"))]

    def _watch(self) -> None:
        # Records replaced by renaming (every atomic write) leave the watcher: added again here.
        wanted = {str(path) for path in self.watched_paths()}
        watched = set(self._watcher.directories()) | set(self._watcher.files())
        if watched - wanted:
            self._watcher.removePaths(sorted(watched - wanted))
        if wanted - watched:
            self._watcher.addPaths(sorted(wanted - watched))

    def _soon(self, _path: str = "") -> None:
        self._debounce.start()

    def close_down(self) -> None:
        """Stop following the folder (the window is closing); a started iteration goes on."""
        self._debounce.stop()
        self._follow.stop()
        watched = self._watcher.directories() + self._watcher.files()
        if watched:
            self._watcher.removePaths(watched)

    # --- selection ----------------------------------------------------------------------------

    def selected_iteration(self) -> Iteration | None:
        version = self.table.selected_version()
        return next((iteration for iteration in self.iterations if iteration.version == version), None)

    def select_iteration(self, version: str) -> bool:
        return self.table.select_version(f"{int(version):04d}")

    def _selection_changed(self) -> None:
        iteration = self.selected_iteration()
        self.plot.select(iteration.version if iteration else None)
        self.steps.show_iteration(iteration)
        self.started_by.setText(started_by_text(iteration) if iteration is not None else "")
        self.started_by.setVisible(iteration is not None)
        self._update_buttons()

    def running_iteration(self) -> Iteration | None:
        return next((iteration for iteration in self.iterations if iteration.state == RUNNING), None)

    def _update_buttons(self) -> None:
        running = self.running_iteration() is not None
        selected = self.selected_iteration()
        self.buttons["start"].setEnabled(not running)
        self.buttons["stop"].setEnabled(running)
        self.buttons["resume"].setEnabled(not running and selected is not None
                                          and selected.state in (FAILED, STOPPED))

    # --- messages -----------------------------------------------------------------------------

    def say(self, text: str, error: bool = False) -> None:
        """Show ``text`` on the panel's status line (an error also in the window's message box)."""
        self.status_line.setText(text)
        theme.set_themed_style_sheet(self.status_line, "color: @ERROR_TEXT;" if error else "color: @FOREGROUND;")
        self.status_line.setVisible(bool(text))
        if error and self._show_error is not None:
            self._show_error(text)

    # --- acting -------------------------------------------------------------------------------

    def _act(self, name: str, title: str, function: Callable, done: Callable[[object], str]) -> Operation:
        """Run ``function`` on the task runner; when it is over, say how it went."""
        operation = Operation(name, "Pipeline")
        self.operations.append(operation)

        def finished(result) -> None:
            operation.result, operation.finished = result, True
            self.say(done(result))
            self.refresh()
            self.sig_operation_finished.emit(operation)

        def failed(error) -> None:
            operation.error, operation.finished = error, True
            if not isinstance(error, PipelineError):
                log.error("Pipeline %s failed: %r", name, error)
            self.say(str(error) if isinstance(error, PipelineError) else f"{title} failed: {error}", error=True)
            self.refresh()
            self.sig_operation_finished.emit(operation)

        self.tasks.run(f"pipeline.{name}", function, on_done=finished, on_error=failed, title=title)
        return operation

    def start(self) -> Operation:
        """Start a new iteration in a process of its own."""
        root, launcher = self.project_root, self.launcher
        return self._act("start", "Starting a pipeline iteration", lambda: launch_iteration(root, None, launcher),
                         self._launched)

    def resume(self, version: str | None = None) -> Operation | None:
        """Go on with iteration ``version`` (the selected one for None) in a process of its own."""
        if version is None:
            selected = self.selected_iteration()
            if selected is None:
                self.say("Select the iteration to resume first.", error=True)
                return None
            version = selected.version
        root, launcher = self.project_root, self.launcher
        return self._act("resume", f"Resuming iteration {version}",
                         lambda: launch_iteration(root, version, launcher), self._launched)

    def stop(self, version: str | None = None) -> Operation:
        """Ask the running iteration (``version``, else the newest) to stop."""
        root = self.project_root
        return self._act("stop", "Stopping the pipeline iteration", lambda: PipelineService(root).stop(version),
                         lambda iteration: f"Asked iteration {iteration.version} to stop: its running step "
                                           "stops, and Resume goes on from it.")

    def _launched(self, launch: Launch) -> str:
        self.launch = launch
        self._follow.start()
        what = f"iteration {launch.args[-1]}" if launch.args[1] == "resume" else "a new iteration"
        return f"Started {what} in a process of its own (it goes on if this window closes); its log: {launch.log}"

    def _follow_launch(self) -> None:
        """Until the started command shows in the records: an error it printed is the user's."""
        launch = self.launch
        if launch is None or time.time() - launch.started_at > FOLLOW_LAUNCH_FOR_S:
            self._follow.stop()
            return
        problem = launch.error_line()
        if problem:
            self._follow.stop()
            self.say(problem, error=True)
            self.refresh()
            return
        versions = [iteration.version for iteration in self.iterations]
        running = self.running_iteration()
        if (launch.args[1] == "start" and set(versions) - set(launch.known_before)) or \
                (launch.args[1] == "resume" and running is not None and running.version == launch.args[-1]):
            self._follow.stop()

"""The trigger watcher in one line under the Pipeline panel: running since when, its pid, what
is next due (or "not running", or why the project has none), with Start Watcher / Stop Watcher.

The line is read from ``registry/pipeline/watcher.json`` and the watcher's lock through
``watcher.watcher_status`` whenever the panel refreshes (the watcher rewrites its state there as
it goes, so the panel follows it). Start and Stop run on the task runner: starting waits until
the detached watcher holds its lock, stopping until it has let it go.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolButton, QWidget

from workbench.pipeline.errors import PipelineError
from workbench.pipeline.watcher import start_watcher_detached, status_line, stop_watcher, watcher_status
from workbench.qt import theme
from workbench.qt.tasks import TaskRunner

STARTED_FROM_THE_PANEL = "Start Watcher in the Pipeline panel"


class WatcherBar(QWidget):
    """The project's trigger watcher: its state in a line, and a button to start or stop it."""

    sig_watcher_changed = Signal(str, bool)
    """Start Watcher or Stop Watcher is over: what happened (or why it failed, and what to do),
    and whether it failed."""

    def __init__(self, project_root: Path, tasks: TaskRunner, parent: QWidget | None = None):
        super().__init__(parent)
        self.project_root = Path(project_root)
        self.tasks = tasks
        self.status: dict = {}
        self.declared = False
        self.busy = False
        self.line = QLabel()
        self.line.setObjectName("pipeline-watcher-line")
        self.line.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.buttons: dict[str, QToolButton] = {}
        row = QHBoxLayout(self)
        row.setContentsMargins(6, 1, 4, 1)
        row.setSpacing(4)
        row.addWidget(self.line, 1)
        for key, text, tip, run in (
                ("start", "Start Watcher", "Start the trigger watcher in a process of its own (it goes on when "
                                           "this window closes)", self.start_watcher),
                ("stop", "Stop Watcher", "End the trigger watcher (an iteration it started goes on)",
                 self.stop_watcher)):
            button = QToolButton()
            button.setObjectName(f"pipeline-watcher-{key}")
            button.setText(text)
            button.setToolTip(tip)
            button.setAutoRaise(True)
            button.clicked.connect(run)
            row.addWidget(button)
            self.buttons[key] = button
        theme.set_themed_style_sheet(self.line, "color: @MUTED_TEXT;")

    def refresh(self) -> None:
        """Read the watcher's state again and show it."""
        from workbench.pipeline.triggers import read_triggers

        try:
            self.declared = read_triggers(self.project_root).any
            self.status = watcher_status(self.project_root)
        except (PipelineError, OSError, ValueError) as exc:
            self.declared, self.status = False, {}
            self.line.setText(f"Trigger watcher: {exc}")
        else:
            text = status_line(self.status)
            if not self.status.get("running") and not self.declared:
                text = "Trigger watcher: none (the project declares no [pipeline.triggers])"
            self.line.setText(text)
            theme.set_themed_style_sheet(
                self.line, "color: @ERROR_TEXT;" if self.status.get("failed_on_open") else "color: @MUTED_TEXT;")
            self.line.setToolTip("\n".join([*self.status.get("triggers", []), f"log: {self.status.get('log', '')}"]))
        running = bool(self.status.get("running"))
        self.buttons["start"].setVisible(not running)
        self.buttons["stop"].setVisible(running)
        self.buttons["start"].setEnabled(self.declared and not self.busy)
        self.buttons["stop"].setEnabled(not self.busy)

    def line_text(self) -> str:
        return self.line.text()

    def start_watcher(self) -> None:
        """Start the project's watcher, detached."""
        root = self.project_root
        self._run("start", lambda: start_watcher_detached(root, started_by=STARTED_FROM_THE_PANEL),
                  lambda result: f"Started the trigger watcher (pid {result[0]})." if result[1] else
                  f"A trigger watcher already runs for this project (pid {result[0]}).")

    def stop_watcher(self) -> None:
        """End the project's watcher (an iteration it started goes on)."""
        root = self.project_root
        self._run("stop", lambda: stop_watcher(root),
                  lambda ended: "No trigger watcher was running." if ended is None else
                  f"Stopped the trigger watcher (pid {ended['pid']})"
                  + ("; the iteration it started goes on." if ended.get("iteration") else "."))

    def _run(self, name: str, function, done) -> None:
        self.busy = True
        self.refresh()

        def finished(result) -> None:
            self.busy = False
            self.refresh()
            self.sig_watcher_changed.emit(done(result), False)

        def failed(error) -> None:
            self.busy = False
            self.refresh()
            message = str(error) if isinstance(error, PipelineError) else f"The trigger watcher: {error}"
            self.sig_watcher_changed.emit(message, True)

        self.tasks.run(f"pipeline.watcher.{name}", function, on_done=finished, on_error=failed,
                       title=f"{'Starting' if name == 'start' else 'Stopping'} the trigger watcher")

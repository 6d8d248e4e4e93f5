"""The window of one model tool: its generated form, Run and Cancel, a progress bar that names
the stage, the log, and the report. Each tool window is its own process (see
workbench.app.tool_window_process); the tool itself runs in a job process under it, so Cancel
is a terminate and a crashing tool takes nothing with it.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QCloseEvent, QFont, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.modeltools.model_index import is_model_file
from workbench.modeltools.params import ToolInvocation, ToolSpec
from workbench.modeltools.report import ToolReport
from workbench.modeltools.widgets.job_runner import CANCELLED, FAILED, SUCCEEDED, JobRunner
from workbench.modeltools.widgets.param_form import ParamForm
from workbench.modeltools.widgets.result_view import ResultView
from workbench.modeltools.widgets.scrolling import WrappingScrollArea

IDLE, RUNNING = "idle", "running"
LOG_LINES = 20_000
PROGRESS_STEPS = 1000
GRAPH_SUFFIXES = (".onnx",)


def model_of(spec: ToolSpec, values: dict) -> str | None:
    """The model a tool works on: the value of its first positional parameter (the first file
    of a list)."""
    for param in spec.params:
        if param.positional:
            value = values.get(param.name)
            if isinstance(value, (list, tuple)):
                value = value[0] if value else None
            return str(value) if value else None
    return None


def window_title(spec: ToolSpec, values: dict) -> str:
    """"<Tool> — <model file name>" ("<Tool> — Workbench" without a model)."""
    model = model_of(spec, values)
    return f"{spec.title} — {Path(model).name if model else 'Workbench'}"


class ErrorBanner(QFrame):
    """A job's failure in one line, where the eye goes first; × hides it."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("tool-error-banner")
        self.setStyleSheet("#tool-error-banner { background: #fdecea; border: 1px solid #f0b6b0;"
                           " border-radius: 4px; } QLabel { color: #8c1d18; }")
        self.label = QLabel("")
        self.label.setObjectName("tool-error-message")
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        icon = QLabel("⚠")
        icon.setStyleSheet("font-size: 15px;")
        close = QToolButton()
        close.setText("×")
        close.setAutoRaise(True)
        close.setToolTip("Hide")
        close.clicked.connect(self.hide)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 6, 4, 6)
        layout.addWidget(icon, 0, Qt.AlignmentFlag.AlignTop)
        layout.addWidget(self.label, 1)
        layout.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self.hide()

    @property
    def message(self) -> str:
        return self.label.text() if self.isVisibleTo(self.parentWidget()) else ""

    def show_message(self, message: str) -> None:
        self.label.setText(message)
        self.show()


class ToolWindow(QMainWindow):
    """One tool invocation: fill in, run, watch, read the report, run again."""

    sig_state_changed = Signal(str)
    """``idle``, ``running``, ``succeeded``, ``failed`` or ``cancelled``."""

    sig_model_produced = Signal(dict)
    """A run wrote a model: {path, project, tool} (the ``model.produced`` event's data)."""

    sig_closed = Signal()
    """The window has closed (its job, if any, was cancelled)."""

    def __init__(self, spec: ToolSpec, invocation: ToolInvocation | None = None,
                 job_command: list[str] | None = None, tasks=None, parent: QWidget | None = None):
        super().__init__(parent)
        self.spec = spec
        invocation = invocation or ToolInvocation(spec.name)
        self.project = Path(invocation.project) if invocation.project else None
        self.state = IDLE
        self.stage_text = ""
        self.error_message = ""
        self.report: ToolReport | None = None
        self._fraction = 0.0
        self._stage_index, self._stage_count = -1, 0
        self._tasks = tasks
        self.setObjectName("tool-window")

        self.runner = JobRunner(job_command, self)
        self.runner.sig_stage.connect(self._on_stage)
        self.runner.sig_progress.connect(self._on_progress)
        self.runner.sig_log.connect(self.append_log)
        self.runner.sig_finished.connect(self._on_finished)

        heading = QLabel(spec.title)
        heading.setObjectName("tool-title")
        font = QFont(heading.font())
        font.setPointSizeF(font.pointSizeF() + 4)
        font.setWeight(QFont.Weight.DemiBold)
        heading.setFont(font)
        summary = QLabel(spec.summary)
        summary.setObjectName("tool-summary")
        summary.setWordWrap(True)
        summary.setStyleSheet("color: #5f6b7a;")
        self.banner = ErrorBanner()

        self.form = ParamForm(spec, self.project)
        self.form.set_values(invocation.values)
        self.form.sig_validity_changed.connect(lambda _valid: self._update_buttons())
        self.form.sig_changed.connect(self._update_title)
        form_scroll = WrappingScrollArea()
        form_scroll.setObjectName("tool-form-scroll")
        form_holder = QWidget()
        holder_layout = QVBoxLayout(form_holder)
        holder_layout.setContentsMargins(0, 0, 8, 0)
        holder_layout.addWidget(self.form)
        form_scroll.setWidget(form_holder)

        self.run_button = QPushButton("Run")
        self.run_button.setObjectName("tool-run")
        self.run_button.setDefault(True)
        self.run_button.setMinimumWidth(90)
        self.run_button.clicked.connect(self.run)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setObjectName("tool-cancel")
        self.cancel_button.setMinimumWidth(90)
        self.cancel_button.clicked.connect(self.cancel)
        self.progress = QProgressBar()
        self.progress.setObjectName("tool-progress")
        self.progress.setRange(0, PROGRESS_STEPS)
        self.progress.setValue(0)
        self.progress.setTextVisible(True)
        self.progress.setFormat("Ready")
        buttons = QHBoxLayout()
        buttons.setContentsMargins(0, 0, 0, 0)
        buttons.setSpacing(8)
        buttons.addWidget(self.progress, 1)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.run_button)

        self.result_view = ResultView()
        self.result_view.export_folder = self.project
        self.log_view = QPlainTextEdit()
        self.log_view.setObjectName("tool-log")
        self.log_view.setReadOnly(True)
        self.log_view.setMaximumBlockCount(LOG_LINES)
        self.log_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        mono = QFont("monospace")
        mono.setStyleHint(QFont.StyleHint.Monospace)
        mono.setPointSizeF(max(8.0, self.font().pointSizeF() - 1))
        self.log_view.setFont(mono)
        self.tabs = QTabWidget()
        self.tabs.setObjectName("tool-tabs")
        self.tabs.addTab(self.result_view, "Result")
        self.tabs.addTab(self.log_view, "Log")
        self.graph_panel = None
        model = model_of(spec, invocation.values)
        if spec.name == "inspect" and tasks is not None and model and Path(model).suffix.lower() in GRAPH_SUFFIXES:
            from workbench.modeltools.widgets.graph_view import GraphPanel

            self.graph_panel = GraphPanel(tasks)
            self.tabs.addTab(self.graph_panel, "Graph")
            self.tabs.currentChanged.connect(self._maybe_load_graph)

        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(16, 14, 16, 8)
        top_layout.setSpacing(8)
        top_layout.addWidget(heading)
        top_layout.addWidget(summary)
        top_layout.addWidget(self.banner)
        top_layout.addWidget(form_scroll, 1)
        top_layout.addLayout(buttons)
        bottom = QWidget()
        bottom_layout = QVBoxLayout(bottom)
        bottom_layout.setContentsMargins(16, 0, 16, 12)
        bottom_layout.addWidget(self.tabs)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.addWidget(top)
        self.splitter.addWidget(bottom)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 4)
        self.setCentralWidget(self.splitter)
        self._top, self._form_scroll = top, form_scroll
        self._splitter_fitted = False
        self.resize(760, 820)
        QShortcut(QKeySequence("Ctrl+Return"), self, activated=self.run)
        QShortcut(QKeySequence("Escape"), self, activated=self.cancel)
        self._update_title()
        self._update_buttons()

    # --- actions ------------------------------------------------------------------------------

    def invocation(self) -> ToolInvocation:
        return ToolInvocation(self.spec.name, self.form.values(), str(self.project) if self.project else None)

    def run(self) -> bool:
        """Start the job with the form's values (False when the form is invalid or a job runs)."""
        if self.state == RUNNING or not self.form.is_valid:
            return False
        self.banner.hide()
        self.error_message = ""
        self.report = None
        self.result_view.set_report(None)
        self._fraction, self._stage_index, self._stage_count = 0.0, -1, 0
        self.stage_text = "Starting"
        if self.log_view.blockCount() > 1 or self.log_view.toPlainText():
            self.append_log("")
        self.append_log(f"$ workbench model {self.spec.name} …  ({_now()})")
        self.progress.setRange(0, 0)  # busy until the first stage arrives
        self.progress.setFormat("Starting…")
        self._set_state(RUNNING)
        self.runner.start(self.invocation())
        return True

    def cancel(self) -> None:
        if self.state == RUNNING:
            self.progress.setFormat("Cancelling…")
            self.runner.cancel()

    def append_log(self, text: str) -> None:
        self.log_view.appendPlainText(text)

    def describe(self) -> dict:
        """What the window shows, for scripts and tests."""
        return {
            "tool": self.spec.name,
            "title": self.windowTitle(),
            "state": self.state,
            "stage": self.stage_text,
            "progress_text": self.progress.text() if self.progress.maximum() else self.progress.format(),
            "progress": self.progress.value() / PROGRESS_STEPS if self.progress.maximum() else None,
            "error": self.error_message,
            "values": self.form.values(),
            "valid": self.form.is_valid,
            "form_errors": self.form.errors(),
            "report": self.report.to_json() if self.report is not None else None,
            "job_pid": self.runner.pid,
            "log": self.log_view.toPlainText()[-4000:],
        }

    # --- the job ------------------------------------------------------------------------------

    def _on_stage(self, name: str, index: int, count: int) -> None:
        self.stage_text = name
        self._stage_index, self._stage_count, self._fraction = index, count, 0.0
        self._show_progress()

    def _on_progress(self, fraction: float) -> None:
        self._fraction = fraction
        self._show_progress()

    def _show_progress(self) -> None:
        if self.progress.maximum() == 0:
            self.progress.setRange(0, PROGRESS_STEPS)
        if self._stage_count > 0 and self._stage_index >= 0:
            overall = (self._stage_index + self._fraction) / self._stage_count
            label = f"{self.stage_text} ({self._stage_index + 1}/{self._stage_count})"
        else:
            overall = self._fraction
            label = self.stage_text
        self.progress.setValue(int(round(max(0.0, min(1.0, overall)) * PROGRESS_STEPS)))
        self.progress.setFormat(f"{label} — %p%" if label else "%p%")

    def _on_finished(self, outcome: str, message: str) -> None:
        self.progress.setRange(0, PROGRESS_STEPS)
        if outcome == SUCCEEDED:
            self.report = self.runner.report
            self.result_view.set_report(self.report)
            self.progress.setValue(PROGRESS_STEPS)
            self.progress.setFormat("Done")
            self.append_log(f"Done ({_now()}).")
            self.tabs.setCurrentWidget(self.result_view)
            self._make_room_for_the_report()
            self._announce_outputs()
        else:
            self.error_message = message
            self.progress.setValue(0)
            self.progress.setFormat("Cancelled" if outcome == CANCELLED else "Failed")
            self.append_log(f"{'Cancelled' if outcome == CANCELLED else 'Failed'}: {message}")
            if outcome == FAILED:
                self.banner.show_message(message)
        self._set_state(outcome)

    def _announce_outputs(self) -> None:
        outputs = self.report.outputs if self.report is not None else []
        if not outputs or not is_model_file(outputs[0]):
            return
        path = str(Path(outputs[0]).resolve())
        project = str(self.project) if self.project else None
        if project is None:
            from workbench.modeltools.project_code import find_project_root

            root = find_project_root(Path(path).parent)
            project = str(root) if root is not None else None
        self.sig_model_produced.emit({"path": path, "project": project, "tool": self.spec.name})

    # --- looks --------------------------------------------------------------------------------

    def _set_state(self, state: str) -> None:
        self.state = state
        self.form.set_enabled(state != RUNNING)
        self._update_buttons()
        self.sig_state_changed.emit(state)

    def _update_buttons(self) -> None:
        running = self.state == RUNNING
        self.run_button.setEnabled(not running and self.form.is_valid)
        self.run_button.setText("Run" if self.state in (IDLE, RUNNING) else "Run Again")
        self.cancel_button.setEnabled(running)
        if not self.form.is_valid and not running:
            problems = self.form.errors()
            self.run_button.setToolTip(next(iter(problems.values()), ""))
        else:
            self.run_button.setToolTip("Run the tool (Ctrl+Enter)")

    def _update_title(self) -> None:
        self.setWindowTitle(window_title(self.spec, self.form.values()))

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._splitter_fitted:
            self._splitter_fitted = True
            self._fit_splitter()

    def _fit_splitter(self) -> None:
        """Give the form the height it needs (up to 60 %), the report the rest."""
        total = sum(self.splitter.sizes()) or self.splitter.height()
        needed = (self._top.sizeHint().height() - self._form_scroll.sizeHint().height()
                  + self._form_scroll.needed_height() + 12)
        top = max(120, min(needed, int(total * 0.6)))
        self.splitter.setSizes([top, max(total - top, 200)])

    def _make_room_for_the_report(self) -> None:
        """After a run the report matters more than the form: the form gets at most a third."""
        sizes = self.splitter.sizes()
        total = sum(sizes)
        if total and sizes[0] > total // 3:
            self.splitter.setSizes([max(total // 3, 120), total - max(total // 3, 120)])

    def _maybe_load_graph(self, index: int) -> None:
        if self.graph_panel is not None and self.tabs.widget(index) is self.graph_panel:
            model = model_of(self.spec, self.form.values())
            if model:
                self.graph_panel.load(model)

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.runner.is_running:
            # Closing is a cancel: the job gets its grace time to clean up, then goes.
            self.runner.cancel()
            if not self.runner.wait(3000):
                self.runner.kill()
                self.runner.wait(1000)
        event.accept()
        self.sig_closed.emit()


def _now() -> str:
    import time

    return time.strftime("%H:%M:%S")

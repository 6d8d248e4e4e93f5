"""The window of one model tool: its generated form, Run and Cancel, a progress bar that names
the stage, the log, and the report. Each tool window is its own process (see
workbench.app.tool_window_process); the tool itself runs in a job process under it, so Cancel
is a terminate and a crashing tool takes nothing with it.

Form and report share the height in a splitter whose place is remembered per tool. After a run
that succeeded the form folds to one line (its files and the values set) with Edit, and the
report takes the height, as Chrome's Lighthouse panel gives its report the panel once it has
run: the report is what is read then, and the form is one click away. A failed run unfolds it,
since the form is then what needs work.
"""

from __future__ import annotations

import dataclasses

from pathlib import Path

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QFont, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.modeltools.model_index import is_model_file, name_in_project
from workbench.modeltools.params import MODEL_CLASSES, ToolInvocation, ToolSpec, in_window_words
from workbench.modeltools.report import ToolReport
from workbench.modeltools.widgets.invocation_text import command_line, summary
from workbench.modeltools.widgets.job_runner import CANCELLED, FAILED, SUCCEEDED, JobRunner
from workbench.modeltools.widgets.param_form import ParamForm
from workbench.modeltools.widgets.result_view import ResultView
from workbench.modeltools.widgets.scrolling import WrappingScrollArea
from workbench.tasks import Progress
from workbench.qt import theme

IDLE, RUNNING = "idle", "running"
LOG_LINES = 20_000
PROGRESS_STEPS = 1000
GRAPH_SUFFIXES = (".onnx",)
DEFAULT_SIZE = (760, 820)
# The report keeps at least this height when the form unfolds.
REPORT_MIN_HEIGHT = 200
SETTINGS_FILE = "tool-windows.ini"

RUNS_ON_OPEN = frozenset({"inspect"})
"""Tools whose window starts the run as soon as it opens. A tool belongs here when there is
nothing to choose first: every parameter but the model has a default that suits, it writes no
file, and it is quick (``asks_nothing`` checks the first two). Kept here rather than declared
by the tools because whether waiting for Run helps is the window's question; a plugin's tool
with the same shape may still take minutes, so the shape alone does not put a tool here."""


def asks_nothing(spec: ToolSpec) -> bool:
    """Whether a run needs no choice but the model: every other parameter has a default and
    none is a file to write."""
    return all(p.positional or (p.default is not None and not p.is_output) for p in spec.params)


def runs_on_open(spec: ToolSpec) -> bool:
    """Whether ``spec``'s window runs it on opening (see RUNS_ON_OPEN)."""
    return spec.name in RUNS_ON_OPEN and asks_nothing(spec)


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


def window_title(spec: ToolSpec, values: dict, project: Path | str | None = None, produced: str | None = None) -> str:
    """"<Tool> — <model>" with the model named relative to the project ("<Tool> — N models" for a
    tool that takes a list, "<Tool> — Workbench" without a model), and "→ <file>" once a run has
    written a model."""
    for param in spec.params:
        if param.positional and param.type == "paths":
            files = values.get(param.name) or []
            if not files:
                return f"{spec.title} — Workbench"
            kind = "model" if all(is_model_file(f) for f in files) else "file"
            return f"{spec.title} — {len(files)} {kind}{'s' if len(files) != 1 else ''}"
    model = model_of(spec, values)
    if not model:
        return f"{spec.title} — Workbench"
    title = f"{spec.title} — {name_in_project(project, model)}"
    if produced:
        same_folder = Path(produced).parent == Path(model).parent
        title += f" → {Path(produced).name if same_folder else name_in_project(project, produced)}"
    return title


class ErrorBanner(QFrame):
    """A job's failure where the eye goes first, every line of it (the text wraps and can be
    selected and copied); × hides it."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("tool-error-banner")
        theme.set_themed_style_sheet(self, "#tool-error-banner { background: @ERROR_BACKGROUND;"
                                           " border: 1px solid @ERROR_BORDER; border-radius: 4px; } QLabel { color: @ERROR_TEXT; }")
        self.label = QLabel("")
        self.label.setObjectName("tool-error-message")
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                           | Qt.TextInteractionFlag.TextSelectableByKeyboard)
        self.label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Minimum)
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

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._grow()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._grow()

    def _grow(self) -> None:
        # A wrapped label is as tall as its width needs; the layout above cannot know that
        # until the width is set, so the banner asks for it here.
        margins = self.layout().contentsMargins()
        needed = self.label.heightForWidth(self.label.width()) + margins.top() + margins.bottom()
        if needed > 0 and self.minimumHeight() != needed:
            self.setMinimumHeight(needed)


class ToolWindow(QMainWindow):
    """One tool invocation: fill in, run, watch, read the report, run again."""

    sig_state_changed = Signal(str)
    """``idle``, ``running``, ``succeeded``, ``failed`` or ``cancelled``."""

    sig_model_produced = Signal(dict)
    """A run wrote a model: {path, project, tool} (the ``model.produced`` event's data)."""

    sig_closed = Signal()
    """The window has closed (its job, if any, was cancelled)."""

    def __init__(self, spec: ToolSpec, invocation: ToolInvocation | None = None,
                 job_command: list[str] | None = None, tasks=None, parent: QWidget | None = None,
                 settings: QSettings | None = None, run_on_open: bool | None = None):
        super().__init__(parent)
        self.spec = spec
        invocation = invocation or ToolInvocation(spec.name)
        self.project = Path(invocation.project) if invocation.project else None
        self.state = IDLE
        self.stage_text = ""
        self.error_message = ""
        self.report: ToolReport | None = None
        self.settings = settings if settings is not None else _default_settings()
        """Where the splitter's place is kept, per tool (replaceable in tests)."""
        self.run_on_open = runs_on_open(spec) if run_on_open is None else run_on_open
        self.form_folded = False
        self._tasks = tasks
        self._report_time = ""
        self._produced: tuple[str, str] | None = None  # (the model run on, the model it wrote)
        self._failed_values: dict | None = None
        self._shown_problem = ""
        self.setObjectName("tool-window")

        self.runner = JobRunner(job_command, self)
        self.runner.sig_progress.connect(self._on_progress)
        self.runner.sig_log.connect(self.append_log)
        self.runner.sig_finished.connect(self._on_finished)

        heading = QLabel(spec.title)
        heading.setObjectName("tool-title")
        font = QFont(heading.font())
        font.setPointSizeF(font.pointSizeF() + 4)
        font.setWeight(QFont.Weight.DemiBold)
        heading.setFont(font)
        tool_summary = QLabel(in_window_words(spec.summary, spec))
        tool_summary.setObjectName("tool-summary")
        tool_summary.setWordWrap(True)
        theme.set_themed_style_sheet(tool_summary, "color: @MUTED_TEXT;")
        self.banner = ErrorBanner()

        self.form = ParamForm(spec, self.project)
        self.form.set_values(invocation.values)
        self.form.sig_validity_changed.connect(lambda _valid: self._update_buttons())
        self.form.sig_changed.connect(self._on_form_changed)
        self.form_scroll = form_scroll = WrappingScrollArea()
        form_scroll.setObjectName("tool-form-scroll")
        form_holder = QWidget()
        holder_layout = QVBoxLayout(form_holder)
        holder_layout.setContentsMargins(0, 0, 8, 0)
        holder_layout.addWidget(self.form)
        form_scroll.setWidget(form_holder)

        self.folded_bar = QFrame()
        self.folded_bar.setObjectName("tool-form-folded")
        theme.set_themed_style_sheet(self.folded_bar, "#tool-form-folded { background: @PANEL_BACKGROUND;"
                                                      " border: 1px solid @PANEL_BORDER; border-radius: 4px; }")
        self.folded_text = QLabel("")
        self.folded_text.setObjectName("tool-form-summary")
        self.folded_text.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.edit_button = QPushButton("Edit")
        self.edit_button.setObjectName("tool-form-edit")
        self.edit_button.setToolTip("Show the parameters again")
        self.edit_button.clicked.connect(lambda: self.fold_form(False))
        folded_layout = QHBoxLayout(self.folded_bar)
        folded_layout.setContentsMargins(8, 3, 3, 3)
        folded_layout.addWidget(self.folded_text, 1)
        folded_layout.addWidget(self.edit_button)
        self.folded_bar.hide()

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
        self.run_reason = QLabel("")
        self.run_reason.setObjectName("tool-run-reason")
        self.run_reason.setWordWrap(True)
        self.run_reason.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.run_reason.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.run_reason.setToolTip("Show the field")
        self.run_reason.linkActivated.connect(lambda _link: self.show_problem())
        self.run_reason.hide()
        buttons = QHBoxLayout()
        buttons.setContentsMargins(0, 0, 0, 0)
        buttons.setSpacing(8)
        buttons.addWidget(self.progress, 1)
        buttons.addWidget(self.run_reason, 1)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.run_button)

        self.result_view = ResultView()
        self.result_view.export_folder = self.project
        self.result_view.base_dir = self.project
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
        top.setObjectName("tool-form-pane")
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(16, 0, 16, 8)
        top_layout.setSpacing(8)
        top_layout.addWidget(form_scroll, 1)
        top_layout.addWidget(self.folded_bar)
        top_layout.addLayout(buttons)
        bottom = QWidget()
        bottom_layout = QVBoxLayout(bottom)
        bottom_layout.setContentsMargins(16, 0, 16, 12)
        bottom_layout.addWidget(self.tabs)
        bottom.setMinimumHeight(REPORT_MIN_HEIGHT)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setObjectName("tool-splitter")
        self.splitter.setChildrenCollapsible(False)
        self.splitter.addWidget(top)
        self.splitter.addWidget(bottom)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 4)
        self.splitter.splitterMoved.connect(self._remember_splitter)
        # Title, summary and a failure stay above the splitter: the banner gets the height its
        # text needs however the splitter is set.
        central = QWidget()
        central_layout = QVBoxLayout(central)
        central_layout.setContentsMargins(0, 14, 0, 0)
        central_layout.setSpacing(8)
        intro = QVBoxLayout()
        intro.setContentsMargins(16, 0, 16, 0)
        intro.setSpacing(8)
        intro.addWidget(heading)
        intro.addWidget(tool_summary)
        intro.addWidget(self.banner)
        central_layout.addLayout(intro)
        central_layout.addWidget(self.splitter, 1)
        self.setCentralWidget(central)
        self._top = top
        self._splitter_fitted = False
        self._opened = False
        self.resize(*DEFAULT_SIZE)
        QShortcut(QKeySequence("Ctrl+Return"), self, activated=self.run)
        QShortcut(QKeySequence("Escape"), self, activated=self.cancel)
        self._suggested_for: str | None = None
        self._update_title()
        self._update_buttons()
        self._find_suggestions()

    # --- actions ------------------------------------------------------------------------------

    def invocation(self) -> ToolInvocation:
        return ToolInvocation(self.spec.name, self.form.values(), str(self.project) if self.project else None)

    def command_line(self) -> str:
        """The ``workbench model …`` command that does what Run does with the form's values."""
        return command_line(self.spec, self.form.values(), self.project)

    def run(self) -> bool:
        """Start the job with the form's values (False when the form is invalid or a job runs)."""
        if self.state == RUNNING or not self.form.is_valid:
            return False
        self.banner.hide()
        self.error_message = ""
        self._failed_values = None
        self.report = None
        self._produced = None
        if self.result_view.report is not None:
            self.result_view.mark_previous(f"From the previous run ({self._report_time}); "
                                           "the new one replaces it when it is done.")
        self.stage_text = "Starting"
        if self.log_view.blockCount() > 1 or self.log_view.toPlainText():
            self.append_log("")
        self.append_log(f"$ {self.command_line()}")
        self.append_log(f"Started {_now()}")
        self.progress.setRange(0, 0)  # busy until the first stage arrives
        self.progress.setFormat("Starting…")
        self._set_state(RUNNING)
        self._update_title()
        self.runner.start(self.invocation())
        return True

    def cancel(self) -> None:
        if self.state == RUNNING:
            self.progress.setFormat("Cancelling…")
            self.runner.cancel()

    def append_log(self, text: str) -> None:
        self.log_view.appendPlainText(text)

    def fold_form(self, folded: bool) -> None:
        """Fold the form to its one-line summary (True) or show it whole (False)."""
        if folded == self.form_folded:
            return
        self.form_folded = folded
        total = sum(self.splitter.sizes())
        self.form_scroll.setVisible(not folded)
        self.folded_bar.setVisible(folded)
        if folded:
            self._update_folded_text()
            self._top.layout().activate()
            height = self._top.minimumSizeHint().height()
            self._top.setMaximumHeight(height)
            self.splitter.setSizes([height, max(total - height, REPORT_MIN_HEIGHT)])
        else:
            self._top.setMaximumHeight(16_777_215)
            self._place_splitter(total)

    def show_problem(self) -> None:
        """Bring the first field in the way of a run into view, its error under it."""
        field, reason = self.form.first_problem()
        if not reason:
            return
        if self.form_folded:
            self.fold_form(False)
        if field is not None:
            if field.param.advanced:
                self.form.show_advanced(True)
            self.form.layout().activate()
            self.form_scroll.ensureWidgetVisible(field.container, 0, 24)
        else:
            self.form_scroll.ensureWidgetVisible(self.form.form_error, 0, 24)

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
            "run_reason": self.form.first_problem()[1] if not self.run_reason.isHidden() else "",
            "form_folded": self.form_folded,
            "command_line": self.command_line(),
            "report": self.report.to_json() if self.report is not None else None,
            "previous_report_shown": self.report is None and self.result_view.report is not None,
            "job_pid": self.runner.pid,
            "log": self.log_view.toPlainText()[-4000:],
        }

    # --- the job ------------------------------------------------------------------------------

    def _on_progress(self, progress: Progress) -> None:
        self.stage_text = progress.message
        if self.progress.maximum() == 0:
            self.progress.setRange(0, PROGRESS_STEPS)
        label = progress.message
        if progress.steps and progress.step is not None and progress.step >= 0:
            label = f"{label} ({progress.step + 1}/{progress.steps})"
        overall = progress.overall or 0.0
        self.progress.setValue(int(round(max(0.0, min(1.0, overall)) * PROGRESS_STEPS)))
        self.progress.setFormat(f"{label} — %p%" if label else "%p%")

    def _on_finished(self, outcome: str, message: str) -> None:
        self.progress.setRange(0, PROGRESS_STEPS)
        if outcome == SUCCEEDED:
            self.report = self.runner.report
            self._report_time = _now()
            # Its advice names the form's fields, as the tool's help does here, not the flags.
            self.result_view.set_report(dataclasses.replace(
                self.report, warnings=[in_window_words(w, self.spec) for w in self.report.warnings]))
            self.progress.setValue(PROGRESS_STEPS)
            self.progress.setFormat("Done")
            self.append_log(f"Done ({self._report_time}).")
            self.tabs.setCurrentWidget(self.result_view)
            self._set_state(outcome)
            self.fold_form(True)
            # Once the folded form has given its room to the report, the window grows to show
            # the report's longest table (the per-layer table showed 4 rows).
            QTimer.singleShot(0, self.fit_to_result)
            self._announce_outputs()
            self._update_title()
            return
        # The window names its fields where the message names the command line's flags.
        message = in_window_words(message, self.spec)
        self.error_message = message
        self.progress.setValue(0)
        ending = "cancelled" if outcome == CANCELLED else "failed"
        self.progress.setFormat(ending.capitalize())
        self.append_log(f"{ending.capitalize()}: {message}")
        if self.result_view.report is not None:
            self.result_view.mark_previous(f"From the previous run ({self._report_time}); the last run {ending}.")
        if outcome == FAILED:
            self.banner.show_message(message)
            self._failed_values = self.form.values()
            self.fold_form(False)
        self._set_state(outcome)

    def fit_to_result(self) -> None:
        """Grow the window (never shrink it, never past the screen) so that the report's longest
        table shows its rows and its widest table its columns, up to a screenful."""
        screen = self.screen()
        taller, wider = self.result_view.height_wanted(), self.result_view.width_wanted()
        if screen is None or (taller <= 0 and wider <= 0):
            return
        room = screen.availableGeometry()
        frame = self.frameGeometry()
        height = min(self.height() + taller, room.height() - (frame.height() - self.height()))
        width = min(self.width() + wider, room.width() - (frame.width() - self.width()))
        if height > self.height() or width > self.width():
            self.resize(max(width, self.width()), max(height, self.height()))
            frame = self.frameGeometry()
            # Moved back onto the screen when it grew past its right or bottom edge.
            x = max(room.left(), frame.left() - max(0, frame.right() - room.right()))
            y = max(room.top(), frame.top() - max(0, frame.bottom() - room.bottom()))
            if (x, y) != (frame.left(), frame.top()):
                self.move(x, y)

    def _announce_outputs(self) -> None:
        outputs = self.report.outputs if self.report is not None else []
        if not outputs or not is_model_file(outputs[0]):
            return
        path = str(Path(outputs[0]).resolve())
        model = model_of(self.spec, self.form.values())
        self._produced = (model, path) if model else None
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
        blocked = not self.form.is_valid and not running
        if blocked:
            field, reason = self.form.first_problem()
            self.run_button.setToolTip(reason)
            self.run_reason.setText(f'<a href="problem" style="color: {theme.ERROR_TEXT}; text-decoration: none;">'
                                    f'{_escape(reason)}</a>')
            if self.form_folded:
                self.fold_form(False)
            if reason != self._shown_problem:
                self._shown_problem = reason
                if field is None or not _has_focus_inside(field.container):
                    QTimer.singleShot(0, self, self.show_problem)
        else:
            self._shown_problem = ""
            self.run_button.setToolTip("Run the tool (Ctrl+Enter)")
        self.run_reason.setVisible(blocked)
        self.progress.setVisible(not blocked)

    def _on_form_changed(self) -> None:
        if self._failed_values is not None and self.form.values() != self._failed_values:
            # The failure was about values that are no longer the form's.
            self.banner.hide()
            self._failed_values = None
        self._update_title()
        self._update_buttons()
        if self.form_folded:
            self._update_folded_text()
        self._find_suggestions()

    def _find_suggestions(self) -> None:
        """What the model factory field offers for the model now in the form (the classes of
        the project's code when its weights need one), read off the GUI thread."""
        wanted = [p.name for p in self.spec.params if p.suggests == MODEL_CLASSES]
        model = model_of(self.spec, self.form.values())
        if self._tasks is None or not wanted or model == self._suggested_for:
            return
        self._suggested_for = model
        from workbench.modeltools.project_classes import factory_suggestions

        def offer(suggestions: list[str]) -> None:
            for name in wanted:
                self.form.offer_suggestions(name, suggestions)

        self._tasks.run("modeltools.suggestions", factory_suggestions, self.project,
                        Path(model) if model else None, on_done=offer,
                        on_error=lambda _error: offer([]))

    def _update_title(self) -> None:
        values = self.form.values()
        produced = None
        if self._produced is not None and self._produced[0] == model_of(self.spec, values):
            produced = self._produced[1]
        self.setWindowTitle(window_title(self.spec, values, self.project, produced))

    def _update_folded_text(self) -> None:
        text = summary(self.spec, self.form.values(), self.project)
        self.folded_text.setToolTip(self.command_line())
        metrics = self.folded_text.fontMetrics()
        width = max(self.folded_text.width(), 100)
        self.folded_text.setText(metrics.elidedText(text, Qt.TextElideMode.ElideRight, width))
        self.folded_text.full_text = text  # type: ignore[attr-defined]

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self.form_folded:
            QTimer.singleShot(0, self, self._update_folded_text)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._splitter_fitted:
            self._splitter_fitted = True
            self._place_splitter(sum(self.splitter.sizes()) or self.splitter.height())
        if not self._opened:
            self._opened = True
            if self.run_on_open and self.form.is_valid:
                QTimer.singleShot(0, self, self.run)

    def _place_splitter(self, total: int) -> None:
        """The form's height: where the user last put it for this tool, else what the form
        needs (up to 60 %); the report keeps at least REPORT_MIN_HEIGHT."""
        remembered = self.settings.value(f"{self.spec.name}/form_height")
        try:
            top = int(remembered) if remembered is not None else None
        except (TypeError, ValueError):
            top = None
        if top is None:
            needed = (self._top.sizeHint().height() - self.form_scroll.sizeHint().height()
                      + self.form_scroll.needed_height() + 12)
            top = min(needed, int(total * 0.6))
        top = max(120, min(top, total - REPORT_MIN_HEIGHT))
        self.splitter.setSizes([top, max(total - top, REPORT_MIN_HEIGHT)])

    def _remember_splitter(self, _position: int, _index: int) -> None:
        if not self.form_folded:
            self.settings.setValue(f"{self.spec.name}/form_height", self.splitter.sizes()[0])

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
        self.settings.sync()
        event.accept()
        self.sig_closed.emit()


def _default_settings() -> QSettings:
    from workbench.project import user_config_dir

    return QSettings(str(user_config_dir() / SETTINGS_FILE), QSettings.Format.IniFormat)


def _has_focus_inside(widget: QWidget) -> bool:
    from PySide6.QtWidgets import QApplication

    focused = QApplication.focusWidget()
    return focused is not None and (focused is widget or widget.isAncestorOf(focused))


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _now() -> str:
    import time

    return time.strftime("%H:%M:%S")

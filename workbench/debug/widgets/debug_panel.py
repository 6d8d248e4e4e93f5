"""The Debug dock: the controls, where the program is, the call stack, the variables, the watch
expressions and the debug console, with one message line for what went wrong."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QSplitter,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.debug.model import ENDED, RUNNING, STARTING, STOPPED
from workbench.debug.widgets.controller import IDLE, DebugController
from workbench.debug.widgets.debug_console import DebugConsole
from workbench.debug.widgets.variable_trees import StackTree, VariablesTree, WatchTree
from workbench.qt.elided_label import ElidedLabel
from workbench.qt.notice import NoticeBar
from workbench.qt import theme

# (key, text, tooltip, enabled in these states)
CONTROLS = (
    ("continue", "▶ Continue", "Continue (F5)", (STOPPED,)),
    ("pause", "‖ Pause", "Pause", (RUNNING,)),
    ("stepOver", "↷ Over", "Step Over (F10)", (STOPPED,)),
    ("stepInto", "↓ Into", "Step Into (F11)", (STOPPED,)),
    ("stepOut", "↑ Out", "Step Out (Shift+F11)", (STOPPED,)),
    ("restart", "⟲ Restart", "Restart (Ctrl+Shift+F5)", (STARTING, RUNNING, STOPPED, ENDED)),
    ("stop", "■ Stop", "Stop (Shift+F5)", (STARTING, RUNNING, STOPPED)),
)
STATE_TEXT = {IDLE: "Not debugging. Debug a file with F5, or the training run from the Run menu.",
              STARTING: "Starting…", RUNNING: "Running", ENDED: "Ended"}


class DebugPanel(QWidget):
    """What the Debug dock holds."""

    def __init__(self, controller: DebugController, parent: QWidget | None = None):
        super().__init__(parent)
        self.controller = controller
        self.buttons: dict[str, QToolButton] = {}
        actions = {"continue": controller.resume, "pause": controller.pause, "stepOver": controller.step_over,
                   "stepInto": controller.step_into, "stepOut": controller.step_out,
                   "restart": controller.restart, "stop": controller.stop}
        bar = QHBoxLayout()
        bar.setContentsMargins(4, 2, 4, 2)
        bar.setSpacing(2)
        for key, text, tip, _states in CONTROLS:
            button = QToolButton()
            button.setText(text)
            button.setToolTip(tip)
            button.setAutoRaise(True)
            button.setObjectName(f"debug-{key}")
            button.clicked.connect(actions[key])
            bar.addWidget(button)
            self.buttons[key] = button
        self.status = ElidedLabel(STATE_TEXT[IDLE])
        self.status.setObjectName("debug-status")
        self.status.setContentsMargins(8, 0, 0, 0)
        bar.addWidget(self.status, 1)

        self.notice = NoticeBar("debug-notice", self)
        theme.set_themed_style_sheet(self.notice, "#debug-notice { background: @ERROR_BACKGROUND;"
                                                  " border-bottom: 1px solid @ERROR_BORDER; }")

        self.stack = StackTree(controller)
        self.variables = VariablesTree(controller)
        self.watches = WatchTree(controller)
        self.console = DebugConsole(controller)
        self.variables.sig_show_values.connect(self.show_values)
        self.watches.sig_show_values.connect(self.show_values)

        right = QTabWidget()
        right.setDocumentMode(True)
        right.addTab(self.variables, "Variables")
        right.addTab(self.watches, "Watch")
        self.side_tabs = right
        top = QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(self.stack)
        top.addWidget(right)
        top.setStretchFactor(0, 2)
        top.setStretchFactor(1, 5)
        top.setSizes([260, 650])
        body = QSplitter(Qt.Orientation.Horizontal)
        body.addWidget(top)
        body.addWidget(self.console)
        body.setStretchFactor(0, 3)
        body.setStretchFactor(1, 2)
        body.setSizes([900, 500])

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addLayout(bar)
        layout.addWidget(self.notice)
        layout.addWidget(body, 1)

        controller.sig_state_changed.connect(self._on_state)
        controller.sig_stopped.connect(self._on_stopped)
        controller.sig_message.connect(self.show_message)
        controller.sig_ended.connect(self._on_ended)
        self._on_state(controller.session_state)

    def _on_state(self, state: str) -> None:
        for key, _text, _tip, states in CONTROLS:
            self.buttons[key].setEnabled(state in states)
        if state == STARTING:
            self.notice.hide()
        if state in STATE_TEXT and state != ENDED:
            name = self.controller.session.name if self.controller.session is not None else ""
            self.status.setText(f"{STATE_TEXT[state]} {name}".strip() if state != IDLE else STATE_TEXT[IDLE])

    def _on_stopped(self, event) -> None:
        # Where the program runs is said too when its name says more than the file (a device's
        # script, a console cell, the training run).
        session = self.controller.session
        name = session.name if session is not None else ""
        top = event.top
        plain = not name or (top is not None and top.path and name == top.path.rsplit("/", 1)[-1])
        self.status.setText(event.headline() if plain else f"{event.headline()} · {name}")

    def _on_ended(self, end) -> None:
        self.status.setText(end.message)
        if end.error:
            self.show_message(end.message)

    def show_message(self, message: str) -> None:
        """Show ``message`` in the dock's message line (one at a time)."""
        self.notice.label.setText(message)
        self.notice.show()

    def show_values(self, title: str, text: str) -> None:
        """All the values of an array, in a window of their own."""
        dialog = QDialog(self)
        dialog.setWindowTitle(f"Values of {title}")
        view = QPlainTextEdit(text)
        view.setReadOnly(True)
        view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        from workbench.qt import theme

        view.setFont(theme.editor_font())
        layout = QVBoxLayout(dialog)
        layout.addWidget(view)
        dialog.resize(760, 420)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        self.values_dialog = dialog

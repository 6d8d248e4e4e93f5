"""One console of the Console dock: its kernel, the IPython widget bound to it, and the variables
of its namespace.

The kernel process is launched when the console is first needed, on a worker thread, while
qtconsole loads on another; the widget is bound to the kernel on the GUI thread once both are
there (the kernel may still be booting: its first prompt says it is ready), so the window never
waits. A kernel that never comes up or dies later is said once, in a bar above the console, with
a Restart button: never a dialog.
"""

from __future__ import annotations

import itertools
import logging
import threading
from typing import Callable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QLabel, QStackedWidget, QVBoxLayout, QWidget

from workbench.console.errors import ConsoleError
from workbench.console.kernel import READY_TIMEOUT_S, Kernel, launch_project_kernel
from workbench.console.namespace import SUMMARY_EXPRESSION, Variable, parse_summary_reply, probe_setup_code
from workbench.qt.notice import NoticeBar
from workbench.tasks import Cancelled, CancelToken
from workbench.qt import theme

log = logging.getLogger(__name__)


def _shut_down(kernels: list[Kernel]) -> None:
    for kernel in kernels:
        kernel.shutdown()


IDLE, STARTING, READY, DEAD = "idle", "starting", "ready", "dead"
POLL_MS = 500
_task_numbers = itertools.count(1)


class ConsoleTab(QWidget):
    """A console: ``start``, ``execute``, ``interrupt``, ``restart``, ``clear``; ``state`` is
    one of idle, starting, ready, dead."""

    sig_state_changed = Signal(str)
    """The console became idle, starting, ready or dead."""

    sig_variables_changed = Signal()
    """``variables`` holds a new summary of the namespace."""

    sig_executed = Signal()
    """An execution of the user's (or a Run command's) code has finished."""

    def __init__(self, title: str, host, parent: QWidget | None = None):
        super().__init__(parent)
        self.title = title
        self.host = host
        """The panel: ``project``, ``tasks`` and ``ensure_frontend(callback)``."""
        self.state = IDLE
        self.kernel: Kernel | None = None
        self.client = None
        self.widget = None
        """qtconsole's widget (``frontend.console_widget_class``), made when the kernel first starts."""
        self.variables: list[Variable] = []
        self.variables_truncated = False
        self.message = ""
        """What the bar says while the console is dead."""
        self.ready_timeout = READY_TIMEOUT_S
        self._task_key = f"console.kernel.{next(_task_numbers)}"
        self._frontend_loaded = False
        self._pending: list[tuple[str, Callable[[str], None] | None]] = []
        self._after_execution: list[Callable[[str], None]] = []
        self._evaluations: list[tuple] = []
        self._evaluating: dict[str, tuple] = {}
        self._awaiting_prompt = False
        self._summary_request: str | None = None
        self._launched: list[Kernel] = []
        self._launched_lock = threading.Lock()

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        self.notice = NoticeBar("console-notice", self)
        theme.set_themed_style_sheet(self.notice, "#console-notice { background: @ERROR_BACKGROUND;"
                                                  " border-bottom: 1px solid @ERROR_BORDER; }")
        self.restart_button = self.notice.add_button("Restart")
        self.restart_button.clicked.connect(self.restart)
        layout.addWidget(self.notice)
        self._stack = QStackedWidget()
        self.status_label = QLabel("The console starts when it is first shown.")
        self.status_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.status_label.setWordWrap(True)
        theme.set_themed_style_sheet(self.status_label, "color: @MUTED_TEXT; padding: 12px;")
        self._stack.addWidget(self.status_label)
        layout.addWidget(self._stack, 1)

        self._poll = QTimer(self)
        self._poll.setInterval(POLL_MS)
        self._poll.timeout.connect(self._check_alive)
        self._ready_timer = QTimer(self)
        self._ready_timer.setSingleShot(True)
        self._ready_timer.timeout.connect(self._on_ready_timeout)

    # --- life ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the kernel unless it runs or is starting (returns at once)."""
        if self.state in (STARTING, READY):
            return
        self._set_state(STARTING)
        self.notice.hide()
        self.status_label.setText("Starting the Python kernel…")
        self.host.ensure_frontend(self._on_frontend_loaded)
        self._ready_timer.start(int(self.ready_timeout * 1000))
        self.host.tasks.run(self._task_key, self._launch, self.host.project.root,
                            on_done=self._on_kernel_launched, on_error=self._on_kernel_failed,
                            title=f"Starting {self.title}…")

    def restart(self) -> None:
        """End the kernel (its variables go) and start a new one in its place; a start still
        under way is given up for the new one."""
        if self.widget is not None and self.state == READY:
            self.widget.append_notice("Restarting the kernel…")
        stale = self.release()
        if self.widget is not None:
            self.widget.keep_output_on_start = True
        self._pending.clear()
        if stale:
            # The old processes end on a worker; the new one does not wait for them.
            self.host.tasks.run(f"{self._task_key}.end.{id(stale)}", _shut_down, stale)
        self.state = IDLE
        self.start()

    def interrupt(self) -> None:
        """Stop what the kernel runs (a KeyboardInterrupt in the user's code); Run commands
        waiting for it are dropped."""
        self._pending.clear()
        if self.kernel is not None and self.state == READY:
            self.kernel.interrupt()

    def clear(self) -> None:
        """Empty the console's screen (the namespace stays)."""
        if self.widget is not None:
            self.widget.clear()

    def execute(self, code: str, on_done: Callable[[str], None] | None = None) -> None:
        """Run ``code`` as if typed at the prompt: now when the console waits for input, else when
        the running execution ends (starting the kernel first when needed). ``on_done`` gets how
        it ended ("ok", "error" or "aborted") once it has run."""
        if self.state == DEAD:
            self.notice.show()
            return
        self._pending.append((code, on_done))
        if self.state == IDLE:
            self.start()
        self._drain()

    def evaluate(self, code: str, expression: str, on_done: Callable[[str], None],
                 on_error: Callable[[str], None]) -> None:
        """Run ``code`` silently (nothing shows, no history) once the kernel is ready, then give
        ``on_done`` the repr of ``expression``; ``on_error`` gets a message when the console
        cannot (its kernel died, the code failed)."""
        if self.state == DEAD:
            self.notice.show()
            on_error(self.message or "The console has no kernel: press Restart in the Console dock.")
            return
        self._evaluations.append((code, expression, on_done, on_error))
        if self.state == IDLE:
            self.start()
        self._send_evaluations()

    def _send_evaluations(self) -> None:
        if self.state != READY or self.client is None or self._awaiting_prompt:
            return
        while self._evaluations:
            code, expression, on_done, on_error = self._evaluations.pop(0)
            msg_id = self.client.execute(code, silent=True, store_history=False,
                                         user_expressions={"value": expression})
            self._evaluating[msg_id] = (on_done, on_error)

    def close_down(self) -> None:
        """End every kernel this console started (the window is closing)."""
        for kernel in self.release():
            kernel.shutdown()

    def release(self) -> list[Kernel]:
        """Unbind from the kernel and give up a start under way; returns every kernel this
        console started, still to be ended (``Kernel.shutdown``, from any thread)."""
        self._poll.stop()
        self.host.tasks.cancel(self._task_key)
        current = self._detach()
        with self._launched_lock:
            launched, self._launched = self._launched, []
        return launched + ([current] if current is not None and current not in launched else [])

    def is_busy(self) -> bool:
        """Code runs in the kernel, or Run commands wait for it."""
        return bool(self._pending) or (self.widget is not None and self.widget.is_busy())

    # --- kernel start -------------------------------------------------------------------------

    def _launch(self, root, cancel: CancelToken) -> Kernel:
        # On the worker thread. The kernel is remembered as soon as its process exists, so that
        # whatever becomes of this call, ``release`` ends it; unless this call was given up
        # already (``release`` cancels before it takes the list), then it ends it here.
        kernel = launch_project_kernel(root)
        with self._launched_lock:
            if not cancel.cancelled:
                self._launched.append(kernel)
                return kernel
        kernel.shutdown()
        raise Cancelled()

    def _forget(self, kernel: Kernel) -> None:
        with self._launched_lock:
            if kernel in self._launched:
                self._launched.remove(kernel)

    def _on_frontend_loaded(self) -> None:
        self._frontend_loaded = True
        self._attach_if_ready()

    def _on_kernel_launched(self, kernel: Kernel) -> None:
        if self.state != STARTING:  # closed or restarted meanwhile
            self._forget(kernel)
            self.host.tasks.run(f"{self._task_key}.end.{id(kernel)}", kernel.shutdown)
            return
        self.kernel = kernel
        self._poll.start()
        self._attach_if_ready()

    def _on_ready_timeout(self) -> None:
        if self.state != STARTING:
            return
        kernel = self._detach()
        if kernel is not None:
            self.host.tasks.run(f"{self._task_key}.end.{id(kernel)}", kernel.shutdown)
            self._die(kernel.timeout_message(self.ready_timeout), kernel.stderr_tail())
        else:
            self.host.tasks.cancel(self._task_key)
            self._die(f"The console's kernel did not start within {self.ready_timeout:.0f} s. Press Restart "
                      "to try again.")

    def _on_kernel_failed(self, error: Exception) -> None:
        self._ready_timer.stop()
        if isinstance(error, ConsoleError):
            self._die(str(error), getattr(error, "details", ""))
        else:
            log.error("The console's kernel could not start", exc_info=error)
            self._die(f"The console's kernel could not start: {error}. Press Restart to try again.")

    def _attach_if_ready(self) -> None:
        if self.state != STARTING or self.kernel is None or not self._frontend_loaded:
            return
        from workbench.console.widgets.frontend import console_widget_class, make_client

        if self.widget is None:
            self.widget = console_widget_class()(self)
            self.widget.setObjectName("console-widget")
            self.widget.custom_interrupt_requested.connect(self.interrupt)
            self.widget.custom_restart_requested.connect(self.restart)
            self.widget.custom_restart_kernel_died.connect(lambda _since: self._check_alive())
            self.widget.executed.connect(self._on_executed)
            self.widget.sig_prompt_shown.connect(self._on_prompt_shown)
            self._stack.addWidget(self.widget)
        self.widget.setEnabled(True)
        self.client = make_client(self.kernel.connection_info)
        # Channels exist once started (their thread made); nothing was asked of the kernel yet,
        # so no answer can come before the handlers are connected.
        self.client.start_channels()
        self.client.shell_channel.message_received.connect(self._on_shell_message)
        self.widget.kernel_client = self.client
        self.client.execute(probe_setup_code(), silent=True, store_history=False)
        self._stack.setCurrentWidget(self.widget)
        # The kernel is ready at its first prompt. Until then the prompt on screen (after a
        # restart) is the old kernel's: code sent now would be dropped when the widget resets.
        self._awaiting_prompt = True

    def _detach(self) -> Kernel | None:
        """Unbind the widget from the kernel; returns the kernel (still running)."""
        self._poll.stop()
        self._ready_timer.stop()
        kernel, self.kernel = self.kernel, None
        if self.client is not None:
            client, self.client = self.client, None
            if self.widget is not None:
                self.widget.kernel_client = None
            client.shell_channel.message_received.disconnect(self._on_shell_message)
            client.stop_channels()
        self._summary_request = None
        self._after_execution.clear()
        waiting = list(self._evaluating.values()) + [entry[2:] for entry in self._evaluations]
        self._evaluating.clear()
        self._evaluations.clear()
        for _on_done, on_error in waiting:
            on_error("The console's kernel stopped before it answered.")
        if kernel is not None:
            self._forget(kernel)
        return kernel

    def _check_alive(self) -> None:
        if self.state in (STARTING, READY) and self.kernel is not None and not self.kernel.is_alive():
            kernel = self.kernel
            message = kernel.start_failure_message() if self.state == STARTING else kernel.death_message()
            details = kernel.stderr_tail()
            self._detach()
            self.host.tasks.run(f"{self._task_key}.end.{id(kernel)}", kernel.shutdown)
            self._die(message, details)

    def fail(self, message: str, details: str = "") -> None:
        """Show that the console cannot run (``message`` says why and what to do)."""
        self._die(message, details)

    def _die(self, message: str, details: str = "") -> None:
        """Say once, above the console, that it has no kernel, and offer Restart."""
        self._pending.clear()
        waiting = [entry[2:] for entry in self._evaluations]
        self._evaluations.clear()
        for _on_done, on_error in waiting:
            on_error(message)
        self.message = message
        self.notice.label.setText(message)
        self.notice.label.setToolTip(details.strip()[-2000:] if details.strip() else "")
        self.notice.show()
        if self.widget is None:
            self.status_label.setText("No kernel.")
        else:
            # Greyed: what it shows is history, and input would have nowhere to go.
            self.widget.setEnabled(False)
        self.variables, self.variables_truncated = [], False
        self.sig_variables_changed.emit()
        self._set_state(DEAD)

    def _set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self.sig_state_changed.emit(state)

    # --- executions and variables --------------------------------------------------------------

    def accepts_input(self) -> bool:
        """The kernel is up and its prompt waits for input."""
        return self.state == READY and not self._awaiting_prompt and self.widget.has_prompt()

    def _on_prompt_shown(self) -> None:
        if self.client is None:
            return
        self._awaiting_prompt = False
        if self.state == STARTING:
            self._ready_timer.stop()
            self._set_state(READY)
            self.request_variables()
        self._send_evaluations()
        self._drain()

    def _drain(self) -> None:
        """Run the next waiting piece of code if the console is at its prompt."""
        if self._pending and self.accepts_input():
            code, on_done = self._pending.pop(0)
            if on_done is not None:
                self._after_execution.append(on_done)
            self.widget.execute(code)

    def _on_executed(self, _reply) -> None:
        # The console runs one input at a time: this reply is that of the oldest one waiting.
        if self._after_execution:
            content = _reply.get("content", {}) if isinstance(_reply, dict) else {}
            self._after_execution.pop(0)(content.get("status", "ok"))
        self.sig_executed.emit()
        self.request_variables()

    @staticmethod
    def _answer_evaluation(callbacks: tuple, content: dict) -> None:
        on_done, on_error = callbacks
        value = content.get("user_expressions", {}).get("value", {})
        if content.get("status") != "ok":
            on_error(f"{content.get('ename', 'Error')}: {content.get('evalue', '')}")
        elif value.get("status") != "ok":
            on_error(f"{value.get('ename', 'Error')}: {value.get('evalue', '')}")
        else:
            on_done(value.get("data", {}).get("text/plain", ""))

    def request_variables(self) -> None:
        """Ask the kernel for a new summary of its namespace (answered in ``sig_variables_changed``)."""
        if self.state == READY and self.client is not None:
            self._summary_request = self.client.execute(
                "", silent=True, store_history=False, user_expressions={"namespace": SUMMARY_EXPRESSION})

    def _on_shell_message(self, message: dict) -> None:
        parent = message.get("parent_header", {}).get("msg_id")
        if parent in self._evaluating:
            self._answer_evaluation(self._evaluating.pop(parent), message.get("content", {}))
            return
        if parent != self._summary_request or self._summary_request is None:
            return
        self._summary_request = None
        reply = message.get("content", {}).get("user_expressions", {}).get("namespace")
        if not reply:
            return
        try:
            self.variables, self.variables_truncated = parse_summary_reply(reply)
        except (ValueError, SyntaxError) as exc:
            # The probe went (a user deleted it from sys.modules): put it back for next time.
            log.debug("The namespace summary failed: %s", exc)
            if self.client is not None:
                self.client.execute(probe_setup_code(), silent=True, store_history=False)
            return
        self.sig_variables_changed.emit()


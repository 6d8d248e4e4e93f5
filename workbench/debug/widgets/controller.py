"""The window's debugger: its breakpoints and watches, the session running now, and the signals
the Debug dock and the editors follow.

Sessions tell what happens on their own threads; a bridge re-emits it as queued Qt signals, so
every slot here runs on the GUI thread. The calls that wait for the adapter (starting, the
stack, variables, evaluate) run on the window's task runner and answer through callbacks.
"""

from __future__ import annotations

import itertools
import threading
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QObject, Signal

from workbench.debug.adapter import SpareAdapters
from workbench.debug.breakpoints import Breakpoint, BreakpointResult, DebugState, DebugStateStore
from workbench.debug.errors import DebugError
from workbench.debug.launches import AttachConfig, LaunchConfig
from workbench.debug.model import ENDED, RUNNING, STARTING, STOPPED, SessionEnd, StackFrame, StoppedEvent
from workbench.debug.session import DebugSession, SessionListener

IDLE = "idle"
LET_GO_TIMEOUT_S = 5.0  # the last session's disconnect waits at most 3 s for the adapter


class _Bridge(QObject, SessionListener):
    """A session's listener whose calls become one queued signal (name, session, payload)."""

    sig_event = Signal(str, object, object)

    def __init__(self, session_holder: list):
        QObject.__init__(self)
        self._holder = session_holder

    def _emit(self, name: str, payload: object) -> None:
        self.sig_event.emit(name, self._holder[0] if self._holder else None, payload)

    def on_state(self, state):
        self._emit("state", state)

    def on_stopped(self, event):
        self._emit("stopped", event)

    def on_output(self, category, text):
        self._emit("output", (category, text))

    def on_breakpoints(self, path, results):
        self._emit("breakpoints", (path, results))

    def on_ended(self, end):
        self._emit("ended", end)

    def on_error(self, message):
        self._emit("error", message)


class DebugController(QObject):
    """Breakpoints, watches and the current session of one project window."""

    sig_state_changed = Signal(str)
    """The session is ``idle`` (none yet), ``starting``, ``running``, ``stopped`` or ``ended``."""

    sig_stopped = Signal(object)
    """The program stopped (a ``StoppedEvent``)."""

    sig_frame_selected = Signal(object)
    """The frame whose line the editor shows and whose variables the dock lists (a
    ``StackFrame``), or None while the program runs or after it ended."""

    sig_output = Signal(str, str)
    """The program, a log point or the adapter wrote (category, text)."""

    sig_breakpoints_changed = Signal(str)
    """The breakpoints of this file, or what the adapter made of them, changed."""

    sig_watches_changed = Signal()
    """A watch expression was added or removed."""

    sig_ended = Signal(object)
    """The session ended (a ``SessionEnd``)."""

    sig_message = Signal(str)
    """Something the user should read in the Debug dock (a refusal, a failed start)."""

    def __init__(self, project_root: Path, tasks, writable: bool = True, parent: QObject | None = None):
        super().__init__(parent)
        self.project_root = Path(project_root).resolve()
        self.tasks = tasks
        self.store = DebugStateStore(self.project_root, writable)
        self.state: DebugState = self.store.load()
        self.session: DebugSession | None = None
        self.session_state = IDLE
        self.current_stop: StoppedEvent | None = None
        self.current_frame: StackFrame | None = None
        self.results: dict[str, list[BreakpointResult]] = {}
        self.last_end: SessionEnd | None = None
        self._holder: list = []
        self._bridge = _Bridge(self._holder)
        self._bridge.sig_event.connect(self._on_session_event)
        self._keys = itertools.count(1)
        self._restart_pending = False
        self._save_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._to_save: DebugState | None = None
        # Scripts being debugged on devices, by their session: each run's link is closed when
        # its session ends, which stops the script on the device.
        self._device_runs: dict[DebugSession, object] = {}
        self._device_pending = False
        # How a session that cannot simply be started again is begun anew (a device's script,
        # a console cell), and what a console cell's session does once running and once ended.
        self._relaunches: dict[DebugSession, Callable[[], None]] = {}
        self._when_running: dict[DebugSession, Callable[[], None]] = {}
        self._after_stop: dict[DebugSession, Callable[[], None]] = {}
        self._stopped_by_user: set[DebugSession] = set()
        self.spares = SpareAdapters()

    # --- sessions -----------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        """A session is starting, running or stopped."""
        return self.session_state in (STARTING, RUNNING, STOPPED)

    @property
    def stopped(self) -> bool:
        return self.session_state == STOPPED

    def debug_file(self, path: Path | str, python: str | None = None) -> None:
        """Debug the script ``path`` in its folder."""
        from workbench.debug.launches import script_launch

        if self._refuse_a_second():
            return
        try:
            config = script_launch(path, python=python)
        except DebugError as exc:
            self.sig_message.emit(str(exc))
            return
        self._start(config)

    def debug_training(self, overrides=(), hparams_file: str | None = None) -> None:
        """Debug the project's training run (one process). Preparing it reads the project and
        its hyper-parameters, so it is done off the GUI thread."""
        from workbench.debug.launches import training_launch

        if self._refuse_a_second():
            return
        self._set_state(STARTING)

        def failed(exc: Exception) -> None:
            self._set_state(ENDED if self.session is not None else IDLE)
            self.sig_message.emit(str(exc))

        self.tasks.run("debug.prepare", training_launch, self.project_root, hparams_file, tuple(overrides),
                       on_done=self._start, on_error=failed, title="Preparing the training run to debug")

    def debug_on_device(self, target: str, script: Path | str, text: str | None = None,
                        devices=None, device_name: str = "") -> None:
        """Debug ``script`` (``text``: its unsaved text) on the device at ``target``: the
        device starts it under debugpy and the session attaches through the paired link, with
        the device's copy of the project mapped to this one. Sending the script and starting it
        wait on the network, so they run off the GUI thread."""
        from workbench.device.device_debug import start_device_debug

        if self._refuse_a_second():
            return
        script = Path(script)
        again = (target, script, text, devices, device_name)
        self._device_pending = True
        self._set_state(STARTING)

        def started(run) -> None:
            if not self._device_pending:  # stopped while it was starting
                self.tasks.run("debug.device.close", run.close)
                return
            self._device_pending = False
            config = AttachConfig(connect=run.open_tunnel, name=run.name,
                                  path_mappings=run.path_mappings)
            session = DebugSession(config, list(self.state.breakpoints), self._bridge)
            self._device_runs[session] = run
            self._relaunches[session] = lambda: self.debug_on_device(*again)
            self._begin(session)

        def failed(exc: Exception) -> None:
            if self._device_pending:
                self._device_pending = False
                self._set_state(ENDED if self.session is not None else IDLE)
                self.sig_message.emit(str(exc))

        where = device_name or target
        self.tasks.run(f"debug.device.{next(self._keys)}", start_device_debug, target, script,
                       self.project_root, None, text, True, None, devices,
                       on_done=started, on_error=failed, title=f"Starting {script.name} on {where}")

    def debug_console_cell(self, endpoint: str, name: str, run_cell: Callable[[Callable[[str], None]], None],
                           interrupt: Callable[[], None], relaunch: Callable[[], None]) -> None:
        """Debug a cell in the console's kernel, whose debugpy listens at ``endpoint`` (the
        repr the kernel gave). Once attached, ``run_cell(on_done)`` runs the cell in the
        console; when it is done (``on_done(status)``) the session lets go of the kernel. Stop lets go too and then
        ``interrupt``s the cell; Restart calls ``relaunch``."""
        from workbench.debug.console_cell import parse_endpoint
        from workbench.debug.launches import attach_to_port

        if self._refuse_a_second():
            return
        try:
            host, port = parse_endpoint(endpoint)
        except DebugError as exc:
            self.sig_message.emit(str(exc))
            return
        session = DebugSession(attach_to_port(host, port, name=name, keeps_program=True),
                               list(self.state.breakpoints), self._bridge)
        self._relaunches[session] = relaunch
        self._after_stop[session] = interrupt
        def ended(status: str) -> None:
            if status == "ok":
                session.detach(f"{name} ran to its end; its variables are in the console.")
            else:
                session.detach(f"{name} stopped with an error (the console shows it); what it made "
                               "so far is in the console.")

        self._when_running[session] = lambda: run_cell(ended)
        self._begin(session)

    def attach(self, config: AttachConfig) -> None:
        """Debug a program already running under debugpy (a device's script, through a tunnel)."""
        if not self._refuse_a_second():
            self._start(config)

    def _refuse_a_second(self) -> bool:
        if self.active:
            self.sig_message.emit("A debug session is running: stop it (Shift+F5) before starting another.")
            return True
        return False

    def _start(self, config: LaunchConfig | AttachConfig) -> None:
        session = DebugSession(config, list(self.state.breakpoints), self._bridge, spares=self.spares)
        self._begin(session)

    def _begin(self, session: DebugSession) -> None:
        for kept in (self._relaunches, self._when_running, self._after_stop, self._device_runs):
            for old in [s for s in kept if s is not session and s is not self.session]:
                del kept[old]
        previous = self.session
        self.session = session
        self._holder[:] = [session]
        self.results = {}
        self.current_stop = None
        self.last_end = None
        self._select(None)
        self._set_state(STARTING)

        def start() -> None:
            # The last session says it ended before it has let go of its connection: a console's
            # kernel, attached again at once, answered "already being debugged".
            if previous is not None and previous.end is not None:
                previous.wait_let_go(LET_GO_TIMEOUT_S)
            session.start()

        self.tasks.run(f"debug.start.{next(self._keys)}", start,
                       on_error=lambda exc, s=session: self._start_failed(s, exc), title=f"Starting {session.name}")

    def _start_failed(self, session: DebugSession, exc: Exception) -> None:
        if session is self.session and session.end is None:
            self.sig_message.emit(str(exc))  # the end's own message says it otherwise

    def restart(self) -> None:
        """Stop the session and start its program again with the breakpoints as they are now."""
        if self.session is None:
            return
        if self.active:
            self._restart_pending = True
            self._stopped_by_user.add(self.session)
            self.session.terminate()
        else:
            self._again(self.session)

    def _again(self, session: DebugSession) -> None:
        relaunch = self._relaunches.pop(session, None)
        if relaunch is not None:
            relaunch()
        else:
            self._begin(self._fresh(session))

    def _fresh(self, session: DebugSession) -> DebugSession:
        return DebugSession(session.config, list(self.state.breakpoints), self._bridge, spares=self.spares)

    def stop(self) -> None:
        """End the program being debugged."""
        if self._device_pending:
            # Still sending the script to the device: the run is closed as soon as it starts.
            self._device_pending = False
            self._set_state(ENDED if self.session is not None else IDLE)
        elif self.session is not None and self.active:
            self._stopped_by_user.add(self.session)
            self.session.terminate()

    def close_down(self) -> None:
        """The window is closing: end the session without waiting for it."""
        self._device_pending = False
        if self.session is not None and self.active:
            self.session.terminate()
        for run in self._device_runs.values():
            run.close()  # the device stops the script when its link closes
        self._device_runs.clear()
        self.spares.close()

    # --- controls -----------------------------------------------------------------------------

    def resume(self) -> None:
        self._control("resume")

    def pause(self) -> None:
        self._control("pause")

    def step_over(self) -> None:
        self._control("step_over")

    def step_into(self) -> None:
        self._control("step_into")

    def step_out(self) -> None:
        self._control("step_out")

    def _control(self, name: str) -> None:
        if self.session is None:
            return
        thread = self.current_stop.thread_id if self.current_stop is not None else None
        future = getattr(self.session, name)(thread)
        if future.done() and future.exception() is not None:
            self.sig_message.emit(str(future.exception()))

    # --- events from the session --------------------------------------------------------------

    def _on_session_event(self, name: str, session, payload) -> None:
        if session is not self.session:
            return  # a session that was replaced (restart) still saying goodbye
        if name == "state":
            if payload in (RUNNING, STARTING):
                self.current_stop = None
                self._select(None)
            if payload != ENDED:
                self._set_state(payload)
            when_running = self._when_running.pop(session, None) if payload == RUNNING else None
            if when_running is not None:
                when_running()
        elif name == "stopped":
            self.current_stop = payload
            self._set_state(STOPPED)
            self.sig_stopped.emit(payload)
            self._select(next((f for f in payload.frames if f.path), payload.top))
        elif name == "output":
            self.sig_output.emit(*payload)
        elif name == "breakpoints":
            path, results = payload
            self.results[path] = list(results)
            self.sig_breakpoints_changed.emit(path)
            for result in results:
                if result.message:
                    self.sig_output.emit("important", result.message + "\n")
        elif name == "ended":
            self._on_ended(payload)
        elif name == "error":
            self.sig_message.emit(payload)

    def _on_ended(self, end: SessionEnd) -> None:
        session = self.session
        self._when_running.pop(session, None)
        after_stop = self._after_stop.pop(session, None)
        if after_stop is not None and session in self._stopped_by_user:
            after_stop()  # the debugger has let go: now the cell can be interrupted
        self._stopped_by_user.discard(session)
        run = self._device_runs.pop(self.session, None)
        if run is not None:
            # Closing the link stops the script on the device (unless it ended) and forgets
            # its folder there; it may wait on the network.
            self.tasks.run(f"debug.device.close.{next(self._keys)}", run.close)
        self.last_end = end
        self.current_stop = None
        self._select(None)
        paths = list(self.results)
        self.results = {}
        for path in paths:
            self.sig_breakpoints_changed.emit(path)
        self._set_state(ENDED)
        self.sig_ended.emit(end)
        if not self._restart_pending:
            self.prepare_adapter()  # for the next run, or a Restart
        if self._restart_pending and self.session is not None:
            self._restart_pending = False
            self._again(self.session)

    def _set_state(self, state: str) -> None:
        if state != self.session_state:
            self.session_state = state
            self.sig_state_changed.emit(state)

    # --- frames, variables, evaluate ----------------------------------------------------------

    def select_frame(self, frame: StackFrame | None) -> None:
        """Show ``frame``: the editor goes to its line, the variables are its own."""
        self._select(frame)

    def _select(self, frame: StackFrame | None) -> None:
        self.current_frame = frame
        self.sig_frame_selected.emit(frame)

    def call(self, function: Callable, *args, on_done: Callable | None = None,
             on_error: Callable[[Exception], None] | None = None) -> None:
        """Run ``function(*args)`` (a blocking session call) off the GUI thread; its answer goes
        to ``on_done`` and its failure to ``on_error`` (else to the dock's message), dropped
        when the session has changed meanwhile."""
        session = self.session

        def done(result) -> None:
            if session is self.session and on_done is not None:
                on_done(result)

        def failed(exc: Exception) -> None:
            if session is not self.session:
                return
            if on_error is not None:
                on_error(exc)
            elif self.active and not _connection_gone(session):
                # A call cut short by a lost connection says nothing: the session's end says it,
                # once.
                self.sig_message.emit(str(exc))

        self.tasks.run(f"debug.call.{next(self._keys)}", function, *args, on_done=done, on_error=failed)

    # --- breakpoints --------------------------------------------------------------------------

    def breakpoints_in(self, path: Path | str) -> list[Breakpoint]:
        return self.state.in_file(path)

    def result_for(self, path: Path | str, line: int) -> BreakpointResult | None:
        """What the adapter made of the breakpoint set on ``line`` (None with no session)."""
        return next((r for r in self.results.get(str(Path(path)), []) if r.requested_line == line), None)

    def toggle_breakpoint(self, path: Path | str, line: int) -> Breakpoint | None:
        """Remove the breakpoint on ``line``, or add one there; returns the one added."""
        added = self.state.toggle(path, line)
        self._breakpoints_edited(str(Path(path)))
        return added

    def put_breakpoint(self, breakpoint: Breakpoint) -> None:
        """Add ``breakpoint``, or replace the one on its line (a condition edited)."""
        self.state.put(breakpoint)
        self._breakpoints_edited(breakpoint.path)

    def remove_breakpoint(self, path: Path | str, line: int) -> None:
        self.state.remove(path, line)
        self._breakpoints_edited(str(Path(path)))

    def move_breakpoints(self, path: Path | str, breakpoints: list[Breakpoint]) -> None:
        """``path``'s breakpoints after an edit moved their lines."""
        self.state.replace_file(path, breakpoints)
        self._breakpoints_edited(str(Path(path)))

    def prepare_adapter(self) -> None:
        """Have debugpy's adapter waiting for the next Debug (started off the GUI thread)."""
        if not self.active:
            self.tasks.run("debug.spareAdapter", self.spares.prepare)

    def _breakpoints_edited(self, path: str) -> None:
        self.sig_breakpoints_changed.emit(path)
        self._save()
        self.prepare_adapter()  # a breakpoint set: a Debug is likely to follow
        session = self.session
        if session is not None and self.active:
            self.call(session.set_breakpoints, path, self.state.in_file(path))

    # --- watches ------------------------------------------------------------------------------

    def add_watch(self, expression: str) -> None:
        expression = expression.strip()
        if expression and expression not in self.state.watches:
            self.state.watches.append(expression)
            self._save()
            self.sig_watches_changed.emit()

    def remove_watch(self, expression: str) -> None:
        if expression in self.state.watches:
            self.state.watches.remove(expression)
            self._save()
            self.sig_watches_changed.emit()

    def _save(self) -> None:
        with self._save_lock:
            self._to_save = DebugState(list(self.state.breakpoints), list(self.state.watches))
        self.tasks.run("debug.save", self._write_latest,
                       on_error=lambda exc: self.sig_message.emit(f"The breakpoints could not be saved: {exc}"))

    def _write_latest(self) -> None:
        # Saves run on pool threads: one at a time, each writing the newest state, so an older
        # state never lands after a newer one.
        with self._write_lock:
            with self._save_lock:
                snapshot, self._to_save = self._to_save, None
            if snapshot is not None:
                self.store.save(snapshot)


def _connection_gone(session: DebugSession | None) -> bool:
    """The session ended, or its connection to the debugger closed (its end is on its way)."""
    if session is None:
        return True
    client = session.client
    return session.end is not None or (client is not None and client.closed)

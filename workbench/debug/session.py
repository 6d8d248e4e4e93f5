"""One debug session: a program under debugpy, driven through the Debug Adapter Protocol.

Qt-free. ``start()`` and the inspection calls (``stack``, ``variables``, ``evaluate``, …) block
and must run off a GUI thread; the controls (``resume``, ``step_over``, ``pause``,
``terminate``, …) only send their request and return. What happens in the program is told to a
``SessionListener`` on the session's own threads, never the caller's:

    session = DebugSession(script_launch("train.py"), breakpoints, listener)
    session.start()                      # DebugError when it cannot start
    stop = session.next_stop(timeout=30) # the next StoppedEvent (DebugError once it has ended)
    session.variables(session.scopes(stop.top.id)[0].reference, stop.top.id)
    session.resume()

A session runs once; ``restarted()`` gives a new one with the same program and breakpoints.
"""

from __future__ import annotations

import collections
import os
import queue
import signal
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Iterable

from workbench.debug import values
from workbench.debug.breakpoints import Breakpoint, BreakpointResult, result_from_dap
from workbench.debug.dap_client import DapClient
from workbench.debug.errors import DebugError
from workbench.debug.launches import AttachConfig, LaunchConfig
from workbench.debug.model import (
    ENDED,
    RUNNING,
    STARTING,
    STOPPED,
    EvaluateResult,
    Scope,
    SessionEnd,
    StackFrame,
    StoppedEvent,
    ThreadInfo,
    Variable,
)

START_TIMEOUT_S = 60.0
HELD_BY_ANOTHER = "already being debugged"  # debugpy's words when another client holds the program
ATTACH_RETRY_S = 15.0  # how long an attach refused that way is tried again
ATTACH_RETRY_PAUSE_S = 0.2
REQUEST_TIMEOUT_S = 30.0
STACK_LEVELS = 200
OUTPUT_TAIL_LINES = 20
EXCEPTION_FILTERS = ("uncaught",)

INITIALIZE_ARGUMENTS = {
    "clientID": "workbench", "clientName": "Workbench", "adapterID": "debugpy", "locale": "en-us",
    "pathFormat": "path", "linesStartAt1": True, "columnsStartAt1": True, "supportsVariableType": True,
    "supportsVariablePaging": False, "supportsRunInTerminalRequest": False, "supportsProgressReporting": False,
}


class SessionListener:
    """What a session tells; every method is called on one of the session's threads."""

    def on_state(self, state: str) -> None:
        """The session is now ``starting``, ``running``, ``stopped`` or ``ended``."""

    def on_stopped(self, event: StoppedEvent) -> None:
        """The program stopped (with the stopped thread's stack)."""

    def on_output(self, category: str, text: str) -> None:
        """The program (``stdout``, ``stderr``), a log point or the adapter (``console``) wrote."""

    def on_breakpoints(self, path: str, results: list[BreakpointResult]) -> None:
        """The adapter's view of ``path``'s breakpoints (verified, moved, refused)."""

    def on_ended(self, end: SessionEnd) -> None:
        """The session is over (once)."""

    def on_error(self, message: str) -> None:
        """A control (step, continue, pause) was refused."""


class DebugSession:
    """A program run (``LaunchConfig``) or attached to (``AttachConfig``) under the debugger."""

    def __init__(self, config: LaunchConfig | AttachConfig, breakpoints: Iterable[Breakpoint] = (),
                 listener: SessionListener | None = None, adapter_python: str | None = None,
                 exception_filters: Iterable[str] = EXCEPTION_FILTERS, spares=None):
        self.config = config
        self.spares = spares
        """``SpareAdapters`` to take a waiting adapter from (None: start one)."""
        self.listener = listener or SessionListener()
        self.adapter_python = adapter_python or sys.executable
        self.exception_filters = list(exception_filters)
        self.name = config.name
        self.state = STARTING
        self.capabilities: dict = {}
        self.client: DapClient | None = None
        self.adapter = None
        self.last_stop: StoppedEvent | None = None
        self.end: SessionEnd | None = None
        self.breakpoint_results: dict[str, list[BreakpointResult]] = {}
        self.program_pid: int | None = None
        self._breakpoints: dict[str, list[Breakpoint]] = {}
        for breakpoint in breakpoints:
            self._breakpoints.setdefault(breakpoint.path, []).append(breakpoint)
        self._lock = threading.RLock()
        self._configured = False
        self._initialized = threading.Event()
        self._ended = threading.Event()
        self._let_go = threading.Event()  # set once its connection and adapter are closed
        self._stops: queue.Queue = queue.Queue()
        self._generation = 0
        self._stopped_once = False
        self._terminate_requested = False
        self._exit_code: int | None = None
        self._output_tail: collections.deque[str] = collections.deque(maxlen=OUTPUT_TAIL_LINES)
        self._helpers_installed = False
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="debug-session")

    # --- starting ----------------------------------------------------------------------------

    @property
    def is_launch(self) -> bool:
        return isinstance(self.config, LaunchConfig)

    def start(self, timeout: float = START_TIMEOUT_S) -> None:
        """Start the adapter (or connect), hand it the program and the breakpoints, and return
        once the program runs. DebugError (the session has then ended) when it cannot."""
        self._set_state(STARTING)
        deadline = time.monotonic() + timeout
        try:
            started = self._connect(deadline)
            with self._lock:
                self._configured = True
                files = {path: list(entries) for path, entries in self._breakpoints.items()}
            for path, entries in files.items():
                self._send_breakpoints(path, entries)
            self.client.request("setExceptionBreakpoints", {"filters": self.exception_filters}, self._left(deadline))
            self.client.request("configurationDone", None, self._left(deadline))
            started.result(self._left(deadline))
        except DebugError as exc:
            message = self._start_failure(exc)
            self._finish(SessionEnd(message, error=True, output_tail=list(self._output_tail)))
            self._submit(self._shut_down)
            raise DebugError(message) from None
        with self._lock:
            if self.state == STARTING:
                self._set_state(RUNNING)

    def _connect(self, deadline: float) -> Future:
        """Connect, initialize and send launch or attach; the latter's answer to come. An
        attach that finds the program still held by the last session is tried again: a
        console's kernel lets go of a debugger only once its adapter has heard the program
        answer the last disconnect, which a busy machine can make longer than that session
        waited for."""
        refused_until = min(deadline, time.monotonic() + ATTACH_RETRY_S)
        while True:
            if self.is_launch:
                self.adapter = (self.spares.take(self.adapter_python) if self.spares is not None
                                else _new_adapter(self.adapter_python))
                stream = self.adapter.stream
            else:
                stream = self.config.connect()
            self.client = DapClient(stream, name="debugger")
            self._register_handlers(self.client)
            self.client.start()
            self.capabilities = self.client.request("initialize", INITIALIZE_ARGUMENTS, self._left(deadline))
            started = self.client.send_request("launch" if self.is_launch else "attach", self.config.dap_arguments())
            try:
                self._wait_initialized(started, deadline)
                return started
            except DebugError as exc:
                if self.is_launch or HELD_BY_ANOTHER not in str(exc) or time.monotonic() > refused_until:
                    raise
            self.client.close()
            self._initialized.clear()  # the next connection's own "initialized" is the one to wait for
            time.sleep(ATTACH_RETRY_PAUSE_S)

    def _wait_initialized(self, started: Future, deadline: float) -> None:
        while not self._initialized.wait(0.02):
            if started.done() and started.exception() is not None:
                raise started.exception()
            if self.client.closed:
                raise DebugError("the connection closed")
            if time.monotonic() > deadline:
                raise DebugError("the debugger did not get ready in time")

    def _start_failure(self, exc: DebugError) -> str:
        if self.end is not None:
            return self.end.message
        what = str(exc).rstrip(".")
        if self.adapter is not None and self.client is not None and self.client.closed:
            self.adapter.process.poll() is None and _wait(self.adapter.process, 1.0)
            what = f"the debugger (debugpy's adapter) {self.adapter.describe_exit()}"
        if HELD_BY_ANOTHER in what:
            return (f"Could not start debugging {self.name}: another debugger still holds it ({what}). "
                    "Stop or disconnect that one, then start again.")
        return f"Could not start debugging {self.name}: {what}."

    @staticmethod
    def _left(deadline: float) -> float:
        return max(0.5, deadline - time.monotonic())

    # --- events ------------------------------------------------------------------------------

    def _register_handlers(self, client: DapClient) -> None:
        client.on_event("initialized", lambda _body: self._initialized.set())
        client.on_event("stopped", self._on_stopped)
        client.on_event("continued", self._on_continued)
        client.on_event("output", self._on_output)
        client.on_event("breakpoint", self._on_breakpoint_changed)
        client.on_event("process", self._on_process)
        client.on_event("exited", self._on_exited)
        client.on_event("terminated", self._on_terminated)
        client.on_closed(self._on_closed)

    def _on_stopped(self, body: dict) -> None:
        with self._lock:
            self._generation += 1
            generation = self._generation
            self._stopped_once = True
            self._set_state(STOPPED)
        self._submit(self._report_stop, body, generation)

    def _report_stop(self, body: dict, generation: int) -> None:
        thread_id = int(body.get("threadId") or 0)
        try:
            threads = self.threads()
            if not thread_id and threads:
                thread_id = threads[0].id
            frames = self.stack(thread_id) if thread_id else []
            text = ""
            if body.get("reason") == "exception":
                text = self._exception_text(thread_id, str(body.get("text") or ""))
        except DebugError as exc:
            if self.end is None:
                self.listener.on_error(f"Stopped, but the stack could not be read: {exc}")
            return
        event = StoppedEvent(reason=str(body.get("reason", "")), thread_id=thread_id,
                             description=str(body.get("description") or ""), text=text, threads=tuple(threads),
                             frames=tuple(frames), hit_breakpoint_ids=tuple(body.get("hitBreakpointIds") or ()))
        with self._lock:
            if generation != self._generation or self.end is not None:
                return  # it ran on (or ended) while the stack was read
            self.last_stop = event
        self._stops.put(event)
        self.listener.on_stopped(event)

    def _exception_text(self, thread_id: int, fallback: str) -> str:
        try:
            info = self.client.request("exceptionInfo", {"threadId": thread_id}, REQUEST_TIMEOUT_S)
        except DebugError:
            return fallback
        kind, description = str(info.get("exceptionId") or ""), str(info.get("description") or "")
        return f"{kind}: {description}" if kind and description else (kind or description or fallback)

    def _on_continued(self, _body: dict) -> None:
        with self._lock:
            if self.state == STOPPED:
                self._generation += 1
                self._set_state(RUNNING)

    def _on_output(self, body: dict) -> None:
        category = str(body.get("category") or "console")
        if category == "telemetry":
            return
        text = str(body.get("output") or "")
        if category in ("stdout", "stderr"):
            self._output_tail.extend(line for line in text.splitlines() if line.strip())
        self.listener.on_output(category, text)

    def _on_breakpoint_changed(self, body: dict) -> None:
        changed = body.get("breakpoint") or {}
        ident = changed.get("id")
        with self._lock:
            for path, results in self.breakpoint_results.items():
                for index, result in enumerate(results):
                    if ident is not None and result.id == ident:
                        results[index] = result_from_dap(path, result.requested_line, {**changed, "id": ident})
                        updated = list(results)
                        break
                else:
                    continue
                break
            else:
                return
        self.listener.on_breakpoints(path, updated)

    def _on_process(self, body: dict) -> None:
        pid = body.get("systemProcessId")
        if isinstance(pid, int) and body.get("isLocalProcess", True):
            self.program_pid = pid

    def _on_exited(self, body: dict) -> None:
        code = body.get("exitCode")
        self._exit_code = code if isinstance(code, int) else None

    def _on_terminated(self, _body: dict) -> None:
        if self.end is not None:
            return  # debugpy may say it twice
        self._finish(self._normal_end())
        self._submit(self._shut_down)

    def _normal_end(self) -> SessionEnd:
        code, tail = self._exit_code, list(self._output_tail)
        if self._terminate_requested:
            return SessionEnd(f"{self.name} was stopped.", code, output_tail=tail)
        if code is None:
            return SessionEnd(f"{self.name} ended.", code, output_tail=tail)
        if code == 0:
            return SessionEnd(f"{self.name} finished (exit code 0).", code, output_tail=tail)
        when = "" if self._stopped_once else " before stopping at a breakpoint"
        last = f" The last it wrote: {tail[-1]}" if tail else ""
        return SessionEnd(f"{self.name} exited with code {code}{when}.{last}", code, error=True, output_tail=tail)

    def _on_closed(self, reason: str) -> None:
        if self.end is not None or not self._configured:
            return  # a start that fails says why itself
        if self.adapter is not None:
            _wait(self.adapter.process, 1.0)
            message = (f"The debugger (debugpy's adapter) {self.adapter.describe_exit()} while debugging "
                       f"{self.name}; the program was stopped with it. Start debugging again.")
        else:
            why = f" ({reason})" if reason else ""
            message = f"The connection to {self.name} was lost{why}. Start debugging again once it runs."
        self._finish(SessionEnd(message, self._exit_code, error=True, output_tail=list(self._output_tail)))
        self._submit(self._shut_down)

    def _finish(self, end: SessionEnd) -> None:
        with self._lock:
            if self.end is not None:
                return
            self.end = end
            self._generation += 1
            self._set_state(ENDED)
        self._ended.set()
        self._stops.put(end)
        self.listener.on_ended(end)

    def _set_state(self, state: str) -> None:
        if state != self.state or state == STARTING:
            self.state = state
            self.listener.on_state(state)

    # --- waiting -----------------------------------------------------------------------------

    def next_stop(self, timeout: float = START_TIMEOUT_S) -> StoppedEvent:
        """The next stop not yet taken; DebugError when the session has ended (its message) or
        nothing stops within ``timeout`` seconds."""
        try:
            item = self._stops.get(timeout=timeout)
        except queue.Empty:
            raise DebugError(f"{self.name} did not stop within {timeout:g} s.") from None
        if isinstance(item, SessionEnd):
            self._stops.put(item)  # every later wait sees the end too
            raise DebugError(item.message)
        return item

    def wait_ended(self, timeout: float = REQUEST_TIMEOUT_S) -> SessionEnd | None:
        """How the session ended, once it has (None if it has not within ``timeout``)."""
        self._ended.wait(timeout)
        return self.end

    # --- breakpoints -------------------------------------------------------------------------

    def breakpoints(self, path: str) -> list[Breakpoint]:
        with self._lock:
            return list(self._breakpoints.get(str(path), []))

    def set_breakpoints(self, path: str | Path, breakpoints: Iterable[Breakpoint]) -> list[BreakpointResult]:
        """Make ``breakpoints`` the whole set of ``path`` (blocks while the adapter answers);
        before the start they are only kept, and sent at the start."""
        path = str(path)
        entries = list(breakpoints)
        with self._lock:
            self._breakpoints[path] = entries
            send = self._configured and self.end is None
        return self._send_breakpoints(path, entries) if send else []

    def _send_breakpoints(self, path: str, entries: list[Breakpoint]) -> list[BreakpointResult]:
        active = sorted((b for b in entries if b.enabled), key=lambda b: b.line)
        body = self.client.request("setBreakpoints", {"source": {"path": path, "name": Path(path).name},
                                                      "breakpoints": [b.to_dap() for b in active]}, REQUEST_TIMEOUT_S)
        answers = body.get("breakpoints") or []
        results = [result_from_dap(path, b.line, answers[i] if i < len(answers) else {})
                   for i, b in enumerate(active)]
        with self._lock:
            self.breakpoint_results[path] = list(results)
        self.listener.on_breakpoints(path, results)
        return results

    # --- controls (they send and return) -----------------------------------------------------

    def resume(self, thread_id: int | None = None) -> Future:
        return self._control("continue", thread_id)

    def step_over(self, thread_id: int | None = None) -> Future:
        return self._control("next", thread_id)

    def step_into(self, thread_id: int | None = None) -> Future:
        return self._control("stepIn", thread_id)

    def step_out(self, thread_id: int | None = None) -> Future:
        return self._control("stepOut", thread_id)

    def pause(self, thread_id: int | None = None) -> Future:
        return self._control("pause", thread_id, when=RUNNING)

    def _control(self, command: str, thread_id: int | None, when: str = STOPPED) -> Future:
        with self._lock:
            state = self.state
            if thread_id is None:
                thread_id = self.last_stop.thread_id if self.last_stop is not None else 0
            if state == when and command != "pause":
                self._generation += 1
                self._set_state(RUNNING)
        if state != when or self.client is None:
            future: Future = Future()
            verb = {"continue": "continue", "next": "step over", "stepIn": "step into", "stepOut": "step out",
                    "pause": "pause"}[command]
            needed = "stopped" if when == STOPPED else "running"
            future.set_exception(DebugError(f"Cannot {verb}: {self.name} is {state}, not {needed}.", command))
            return future
        future = self.client.send_request(command, {"threadId": thread_id})
        future.add_done_callback(lambda done: self._report_refusal(done, command))
        return future

    def _report_refusal(self, future: Future, command: str) -> None:
        error = future.exception()
        if error is not None and self.end is None:
            self.listener.on_error(f"{command} was refused: {error}")

    def terminate(self) -> None:
        """End the program (and the session); returns at once, ``wait_ended`` waits."""
        with self._lock:
            if self.end is not None or self._terminate_requested:
                return
            self._terminate_requested = True
        self._submit(self._terminate)

    @property
    def keeps_program(self) -> bool:
        """The program goes on when the session ends (a console's kernel)."""
        return getattr(self.config, "keeps_program", False)

    def detach(self, message: str) -> None:
        """End the session with ``message`` and let the program run on without the debugger
        (a console cell that ran to its end); returns at once."""
        with self._lock:
            if self.end is not None or self._terminate_requested:
                return
            self._terminate_requested = True
        self._submit(self._detach, message)

    def _detach(self, message: str) -> None:
        self._finish(SessionEnd(message, output_tail=list(self._output_tail)))
        self._shut_down()

    def _terminate(self) -> None:
        client = self.client
        if self.keeps_program:
            self._detach(f"Stopped debugging {self.name}.")
            return
        if client is not None and not client.closed:
            command = "terminate" if self.is_launch else "disconnect"
            arguments = None if self.is_launch else {"terminateDebuggee": True}
            try:
                client.request(command, arguments, timeout=5.0)
            except DebugError:
                pass
            if self._ended.wait(5.0):
                return
        self._finish(SessionEnd(f"{self.name} was stopped.", self._exit_code, output_tail=list(self._output_tail)))
        self._shut_down()

    def restarted(self) -> "DebugSession":
        """A new session, not started, of the same program with the same breakpoints (this one
        should be terminated first)."""
        with self._lock:
            breakpoints = [b for entries in self._breakpoints.values() for b in entries]
        return DebugSession(self.config, breakpoints, self.listener, self.adapter_python, self.exception_filters,
                            self.spares)

    def close(self, timeout: float = 10.0) -> None:
        """Terminate if needed, wait for the end and let go of the session's threads."""
        self.terminate()
        self.wait_ended(timeout)
        self._submit(self._shut_down)
        self._worker.shutdown(wait=True)

    def _submit(self, function, *args) -> None:
        try:
            self._worker.submit(function, *args)
        except RuntimeError:
            pass  # closed: nothing more is done for this session

    def _shut_down(self) -> None:
        try:
            client = self.client
            if client is not None and not client.closed:
                try:
                    client.request("disconnect", {"terminateDebuggee": not self.keeps_program}, timeout=3.0)
                except DebugError:
                    pass
                client.close()
            if self.adapter is not None:
                self.adapter.stop()
            if not self.keeps_program:
                self._kill_program()
        finally:
            self._let_go.set()

    def wait_let_go(self, timeout: float) -> bool:
        """Wait until the session has closed its connection (a program it kept running, such as
        a console's kernel, takes another debugger only then); whether it has."""
        return self._let_go.wait(timeout)

    def _kill_program(self) -> None:
        """debugpy starts the program in a process group of its own; when the adapter died
        without ending it, it is ended here."""
        pid = self.program_pid
        if pid is None:
            return
        try:
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    # --- inspection (they block) -------------------------------------------------------------

    def _request(self, command: str, arguments: dict | None = None, timeout: float = REQUEST_TIMEOUT_S) -> dict:
        if self.client is None or self.end is not None:
            reason = self.end.message if self.end is not None else "it has not started"
            raise DebugError(f"{self.name} is not being debugged any more: {reason}", command)
        return self.client.request(command, arguments, timeout)

    def threads(self) -> list[ThreadInfo]:
        body = self._request("threads")
        return [ThreadInfo(int(t.get("id", 0)), str(t.get("name", ""))) for t in body.get("threads") or []]

    def stack(self, thread_id: int) -> list[StackFrame]:
        """The thread's frames, innermost first."""
        body = self._request("stackTrace", {"threadId": thread_id, "startFrame": 0, "levels": STACK_LEVELS})
        return [StackFrame.from_dap(frame) for frame in body.get("stackFrames") or []]

    def scopes(self, frame_id: int) -> list[Scope]:
        body = self._request("scopes", {"frameId": frame_id})
        return [Scope(str(s.get("name", "")), int(s.get("variablesReference") or 0), bool(s.get("expensive")))
                for s in body.get("scopes") or []]

    def variables(self, reference: int, frame_id: int | None = None) -> list[Variable]:
        """The children of ``reference`` (a scope or a variable); with ``frame_id``, arrays and
        tensors among them get their summaries."""
        body = self._request("variables", {"variablesReference": reference})
        found = [Variable.from_dap(entry) for entry in body.get("variables") or []]
        arrays = [v for v in found if v.is_array and v.evaluate_name]
        if arrays and frame_id is not None:
            try:
                summaries = self.summarise([v.evaluate_name for v in arrays], frame_id)
            except DebugError as exc:
                summaries = [str(exc)] * len(arrays)
            for variable, summary in zip(arrays, summaries):
                variable.summary = summary
        return found

    def evaluate(self, expression: str, frame_id: int | None, context: str = "repl") -> EvaluateResult:
        """``expression``'s value in the frame (``context``: ``repl`` for the debug console,
        ``watch``, ``hover``); DebugError with the program's error when it fails."""
        arguments: dict = {"expression": expression, "context": context}
        if frame_id is not None:
            arguments["frameId"] = frame_id
        body = self._request("evaluate", arguments)
        variable = Variable(name=expression, value=str(body.get("result", "")), type=str(body.get("type") or ""),
                            evaluate_name=expression, reference=int(body.get("variablesReference") or 0))
        if variable.is_array and frame_id is not None:
            try:
                variable.summary = self.summarise([expression], frame_id)[0]
            except DebugError as exc:
                variable.summary = str(exc)
        return EvaluateResult(expression, variable)

    def summarise(self, expressions: list[str], frame_id: int) -> list:
        """An ``ArraySummary`` (or an error's text, or None for a value that is no array) of each
        expression, worked out in the program in one ``evaluate``."""
        self._install_helpers(frame_id)
        body = self._request("evaluate", {"expression": values.summaries_expression(expressions),
                                          "frameId": frame_id, "context": "clipboard"})
        try:
            return values.parse_summaries(str(body.get("result", "")), len(expressions))
        except ValueError as exc:
            raise DebugError(f"The summaries could not be read: {exc}") from None

    def _install_helpers(self, frame_id: int) -> None:
        with self._lock:
            if self._helpers_installed:
                return
        self._request("evaluate", {"expression": values.install_expression(), "frameId": frame_id, "context": "repl"})
        with self._lock:
            self._helpers_installed = True

    def values_text(self, expression: str, frame_id: int) -> str:
        """All of an array's or tensor's values as text (elided past a few thousand)."""
        self._install_helpers(frame_id)
        body = self._request("evaluate", {"expression": values.values_expression(expression), "frameId": frame_id,
                                          "context": "clipboard"})
        return values.parse_values(str(body.get("result", "")))


def _new_adapter(python: str):
    from workbench.debug.adapter import AdapterProcess

    return AdapterProcess(python)


def _wait(process, timeout: float) -> None:
    try:
        process.wait(timeout=timeout)
    except Exception:
        pass

"""The parent side of a tool job (``python -m workbench.modeltools.job``, protocol described
there): start it, read its events, cancel it, turn its end into a report or an error.

Qt-free. ``ToolJob`` runs a job with threads (the CLI and the tests use it); a tool window
drives the same process with QProcess and reuses the pure parts: ``job_command``,
``invocation_bytes``, ``parse_event_line`` and ``JobEvents`` (which also removes what a killed
job left of its outputs).
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from workbench.modeltools.errors import ModelToolError, ToolCancelled
from workbench.modeltools.params import ToolInvocation
from workbench.modeltools.report import ToolReport

# Seconds a cancelled job gets to stop by itself before its process group is killed.
KILL_GRACE_S = 2.0
# How often wait() looks whether a job that has said its outcome lingers.
WAIT_STEP_S = 0.1
STDERR_TAIL_LINES = 200

log = logging.getLogger(__name__)


def job_command() -> list[str]:
    """The command line that starts a job process."""
    return [sys.executable, "-m", "workbench.modeltools.job"]


def invocation_bytes(invocation: ToolInvocation) -> bytes:
    """What to write to a job's stdin (then close it)."""
    return json.dumps(invocation.to_json()).encode("utf-8")


def parse_event_line(line: bytes) -> dict | None:
    """One line of a job's stdout as an event; None for an empty line. A line that is not an
    event (it should never happen, but a library may find a way) becomes a log event."""
    text = line.decode("utf-8", errors="replace").strip()
    if not text:
        return None
    try:
        event = json.loads(text)
    except ValueError:
        return {"event": "log", "text": text}
    if not isinstance(event, dict) or not isinstance(event.get("event"), str):
        return {"event": "log", "text": text}
    return event


def signal_job(pid: int, number: int) -> None:
    """Send signal ``number`` to a job and every process it started: its process group (the job
    makes one of its own as it starts; until then, the job alone). Only while the job has not
    been reaped, so that ``pid`` cannot be another process's by now."""
    try:
        os.killpg(pid, number)
    except ProcessLookupError:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, number)


def remove_leftovers(invocation: ToolInvocation, partials=(), cwd: Path | None = None) -> list[Path]:
    """Delete what a job that was killed left of its outputs: the temporary files it announced
    (``partial`` events, exact paths) and any temporary file of the invocation's explicit output
    paths. Returns what was removed."""
    from workbench.modeltools.outputs import remove_partials

    base = Path(cwd) if cwd is not None else Path.cwd()
    removed = []
    for path in partials:
        path = base / Path(path)
        with contextlib.suppress(OSError):
            if path.is_file():
                path.unlink()
                removed.append(path)
    for target in _explicit_outputs(invocation):
        with contextlib.suppress(OSError):
            removed += remove_partials(base / target.expanduser())
    return removed


def _explicit_outputs(invocation: ToolInvocation) -> list[Path]:
    from workbench.modeltools.registry import get_tool

    try:
        spec = get_tool(invocation.tool)
    except ModelToolError:
        return []
    targets = []
    for param in spec.params:
        value = invocation.values.get(param.name)
        if param.is_output and value:
            targets += [Path(str(v)) for v in (value if isinstance(value, (list, tuple)) else [value])]
    return targets


class JobEvents:
    """What one job has said so far, and what its end means.

    Feed every event to ``add``; when the process has ended, ``outcome`` gives the report or
    raises the job's error."""

    def __init__(self, invocation: ToolInvocation, cwd: Path | None = None):
        self.invocation = invocation
        self.cwd = cwd
        self.partials: list[str] = []
        self.result: dict | None = None
        self.error: dict | None = None

    def add(self, event: dict) -> None:
        kind = event.get("event")
        if kind == "partial" and event.get("path"):
            self.partials.append(str(event["path"]))
        elif kind == "result":
            self.result = event
        elif kind == "error":
            self.error = event

    @property
    def said_its_outcome(self) -> bool:
        """The job has sent its result or its error, its last event."""
        return self.result is not None or self.error is not None

    def outcome(self, returncode: int, cancel_requested: bool = False) -> ToolReport:
        """The report of a job that ended with ``returncode`` (negative: killed by that signal).
        Otherwise removes what it left of its outputs and raises ToolCancelled (when it was
        cancelled) or ModelToolError with the job's message."""
        if self.result is not None:
            # Its outputs were complete before it said so, even if a cancel came after.
            return ToolReport.from_json(self.result["report"])
        remove_leftovers(self.invocation, self.partials, self.cwd)
        error = self.error or {}
        message = error.get("message")
        tool = self.invocation.tool
        if error.get("cancelled") and message:
            raise ToolCancelled(message)
        if cancel_requested or error.get("cancelled"):
            raise ToolCancelled()
        if message:
            raise ModelToolError(message)
        if returncode < 0:
            name = _signal_name(-returncode)
            raise ModelToolError(f"the {tool} job was killed by {name} (perhaps it ran out of memory); "
                                 "the log has the details")
        raise ModelToolError(f"the {tool} job ended (exit status {returncode}) without a result; "
                             "the log has the details")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class ToolJob:
    """One tool invocation running in a job process of its own process group.

    ``on_event(event)`` and ``on_stderr(line)`` are called from reader threads, in the order the
    job wrote them. ``cancel()`` asks the job to stop (SIGTERM to its group) and kills the group
    when it has not ended ``grace`` seconds later; ``kill()`` kills it at once. ``wait()`` gives
    the report, or raises ToolCancelled / ModelToolError after removing the partial outputs.
    ``command`` defaults to ``job_command()``.
    """

    def __init__(self, on_event: Callable[[dict], None] | None = None,
                 on_stderr: Callable[[str], None] | None = None, *, command: list[str] | None = None,
                 cwd: Path | None = None, env: dict | None = None, grace: float = KILL_GRACE_S):
        self._on_event = on_event or (lambda event: None)
        self._on_stderr = on_stderr or (lambda line: None)
        self._command = list(command) if command is not None else job_command()
        self._cwd = Path(cwd) if cwd is not None else None
        self._env = env
        self.grace = grace
        self._process: subprocess.Popen | None = None
        self._events: JobEvents | None = None
        self._readers: list[threading.Thread] = []
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._lock = threading.Lock()
        self._kill_timer: threading.Timer | None = None
        self._outcome_at: float | None = None
        self.cancel_requested = False

    def start(self, invocation: ToolInvocation) -> None:
        if self._process is not None:
            raise RuntimeError("a ToolJob runs one invocation")
        self._events = JobEvents(invocation, self._cwd)
        # A session of its own: cancel signals the job and whatever it started, and a Ctrl+C
        # in the terminal reaches the CLI only, which decides what it means.
        self._process = subprocess.Popen(self._command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, cwd=self._cwd, env=self._env,
                                         start_new_session=True)
        self._readers = [threading.Thread(target=self._read_events, name="tool-job-events", daemon=True),
                         threading.Thread(target=self._read_stderr, name="tool-job-stderr", daemon=True)]
        for reader in self._readers:
            reader.start()
        with contextlib.suppress(BrokenPipeError):  # it died at once: wait() tells why
            self._process.stdin.write(invocation_bytes(invocation))
        with contextlib.suppress(BrokenPipeError):
            self._process.stdin.close()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def returncode(self) -> int | None:
        return self._process.returncode if self._process else None

    @property
    def stderr_tail(self) -> str:
        """The last lines the job wrote to its log."""
        return "\n".join(self._stderr_tail)

    def poll(self) -> int | None:
        return self._process.poll() if self._process else None

    def finished(self) -> bool:
        """Whether the job has ended. A job that sent its outcome but lingers (a thread of the
        tool that will not end) is killed after ``grace`` seconds: its work is done."""
        if self._process is None or self._process.poll() is not None:
            return self._process is not None
        if self._events.said_its_outcome:
            if self._outcome_at is None:
                self._outcome_at = time.monotonic()
            elif time.monotonic() - self._outcome_at > self.grace:
                self._signal(signal.SIGKILL)
        return False

    def cancel(self) -> None:
        """Ask the job to stop; it is killed if it has not ended after ``grace`` seconds."""
        with self._lock:
            first = not self.cancel_requested
            self.cancel_requested = True
        if not first:
            return
        self._signal(signal.SIGTERM)
        self._kill_timer = threading.Timer(self.grace, self._signal, (signal.SIGKILL,))
        self._kill_timer.daemon = True
        self._kill_timer.start()

    def kill(self) -> None:
        """End the job and everything it started, now."""
        self.cancel_requested = True
        self._signal(signal.SIGKILL)

    def _signal(self, number: int) -> None:
        with self._lock:
            if self._process is not None and self._process.poll() is None:
                signal_job(self._process.pid, number)

    def wait(self, timeout: float | None = None) -> ToolReport:
        """The job's report once it has ended; ToolCancelled or ModelToolError (with the job's
        message) when it did not succeed, TimeoutError when it still runs after ``timeout``."""
        if self._process is None:
            raise RuntimeError("the job was not started")
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.finished():
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"the {self._events.invocation.tool} job still runs after {timeout} s")
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(WAIT_STEP_S)
        # The pipes end with the job; a process it forked could hold them open longer.
        for reader in self._readers:
            reader.join(self.grace)
        if self._kill_timer is not None:
            self._kill_timer.cancel()
        return self._events.outcome(self._process.returncode, self.cancel_requested)

    def _read_events(self) -> None:
        for line in self._process.stdout:
            event = parse_event_line(line)
            if event is None:
                continue
            self._events.add(event)
            try:
                self._on_event(event)
            except Exception:  # a broken callback must not stop the reading: the job would block
                log.exception("A tool job's event handler failed on %s", event.get("event"))
        self._process.stdout.close()

    def _read_stderr(self) -> None:
        for line in self._process.stderr:
            text = line.decode("utf-8", errors="replace").rstrip("\r\n")
            self._stderr_tail.append(text)
            try:
                self._on_stderr(text)
            except Exception:
                log.exception("A tool job's log handler failed")
        self._process.stderr.close()

"""Runs one tool job as a child process (QProcess, so no thread waits on it) and turns its
JSON-lines events into signals.

The job (``python -m workbench.modeltools.job``, its protocol described there) reads the
ToolInvocation on stdin and writes one JSON event a line on stdout; its stderr is the log. It is
the leader of its own session, so Cancel terminates the whole process group (then kills it after
``KILL_AFTER_MS``). The pure parts (the command, event parsing, what an ending means and the
removal of a killed job's half-written outputs) are job_client's, shared with the CLI.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, QTimer, Signal

from workbench.modeltools.context import ProgressOfEvents
from workbench.modeltools.errors import ModelToolError, ToolCancelled
from workbench.modeltools.job_client import KILL_GRACE_S, JobEvents, invocation_bytes, job_command, parse_event_line
from workbench.modeltools.params import ToolInvocation
from workbench.modeltools.report import ToolReport

KILL_AFTER_MS = int(KILL_GRACE_S * 1000)

SUCCEEDED, FAILED, CANCELLED = "succeeded", "failed", "cancelled"


class JobRunner(QObject):
    """One job at a time; ``start`` again once it has finished."""

    sig_stage = Signal(str, int, int)
    """The job entered a stage: name, index (0-based, -1 when unknown), count."""

    sig_progress = Signal(object)
    """The job's progress (a ``workbench.tasks.Progress``): the stage it is in, its number
    (``step``, from 0, -1 when unknown) of ``steps``, and how far into it (``fraction``)."""

    sig_log = Signal(str)
    """A line for the log: a ``log`` event, or a line the job wrote on stderr."""

    sig_result = Signal(object)
    """The job's ToolReport (before ``sig_finished``)."""

    sig_finished = Signal(str, str)
    """The job is over: outcome (``succeeded``, ``failed``, ``cancelled``) and, unless it
    succeeded, the one-line message for the user."""

    def __init__(self, job_command: list[str] | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.job_command = list(job_command) if job_command else default_job_command()
        """The job's argv (replaceable: tests run a job of their own)."""
        self.report: ToolReport | None = None
        self._process: QProcess | None = None
        self._pid = 0
        self._events: JobEvents | None = None
        self._progress = ProgressOfEvents()
        self._stdout = b""
        self._stderr = b""
        self._cancelled = False
        self._kill_timer = QTimer(self)
        self._kill_timer.setSingleShot(True)
        self._kill_timer.timeout.connect(self.kill)

    @property
    def is_running(self) -> bool:
        return self._process is not None

    @property
    def pid(self) -> int | None:
        """The job's process id (also its process group's) while it runs."""
        return self._pid or None if self._process is not None else None

    def start(self, invocation: ToolInvocation) -> None:
        """Start the job for ``invocation``."""
        if self._process is not None:
            raise RuntimeError("a job is already running")
        self.report = None
        self._events = JobEvents(invocation, Path.cwd())
        self._progress = ProgressOfEvents()
        self._stdout = self._stderr = b""
        self._cancelled = False
        process = QProcess(self)
        process.setProgram(self.job_command[0])
        process.setArguments(self.job_command[1:])
        environment = QProcessEnvironment.systemEnvironment()
        environment.insert("PYTHONUNBUFFERED", "1")
        process.setProcessEnvironment(environment)
        if hasattr(process, "setUnixProcessParameters"):
            # Its own session and process group, so Cancel reaches the job's children too.
            process.setUnixProcessParameters(QProcess.UnixProcessFlag.CreateNewSession)
        process.readyReadStandardOutput.connect(self._on_stdout)
        process.readyReadStandardError.connect(self._on_stderr)
        process.finished.connect(self._on_finished)
        process.errorOccurred.connect(self._on_error)
        self._process = process
        process.start()
        self._pid = int(process.processId())
        process.write(invocation_bytes(invocation))
        process.closeWriteChannel()

    def cancel(self) -> None:
        """Terminate the job's process group; kill it if it is still there after 2 s."""
        if self._process is None or self._cancelled:
            return
        self._cancelled = True
        self._signal_group(signal.SIGTERM)
        self._kill_timer.start(KILL_AFTER_MS)

    def wait(self, msecs: int = 30_000) -> bool:
        """Block until the job has ended (for closing the window and for tests)."""
        if self._process is None:
            return True
        return self._process.waitForFinished(msecs)

    # --- the child process --------------------------------------------------------------------

    def _signal_group(self, number: int) -> None:
        # Only while the job is not reaped (QProcess reaps it just before ``finished``): its
        # process group id cannot have been reused.
        if not self._pid or self._process is None:
            return
        try:
            os.killpg(self._pid, number)
        except (ProcessLookupError, PermissionError):
            pass
        except AttributeError:  # no process groups on this system
            (self._process.terminate if number == signal.SIGTERM else self._process.kill)()

    def kill(self) -> None:
        """End the job and whatever it started, now."""
        self._cancelled = self._cancelled or self._process is not None
        self._signal_group(signal.SIGKILL)

    def _on_stdout(self) -> None:
        if self._process is None:
            return
        self._stdout += bytes(self._process.readAllStandardOutput().data())
        *lines, self._stdout = self._stdout.split(b"\n")
        for line in lines:
            self._event_line(line)

    def _event_line(self, line: bytes) -> None:
        event = parse_event_line(line)
        if event is None:
            return
        self._events.add(event)
        progress = self._progress.add(event)
        if progress is not None:
            if event.get("event") == "stage":
                self.sig_stage.emit(progress.message, progress.step, progress.steps)
            self.sig_progress.emit(progress)
        elif event.get("event") == "log":
            self.sig_log.emit(str(event.get("text", "")))

    def _on_stderr(self) -> None:
        if self._process is None:
            return
        self._stderr += bytes(self._process.readAllStandardError().data())
        *lines, self._stderr = self._stderr.split(b"\n")
        for line in lines:
            self.sig_log.emit(line.decode("utf-8", "replace").rstrip("\r"))

    def _on_error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart and self._process is not None:
            self._end(FAILED, f"Cannot start the job ({self.job_command[0]}): {self._process.errorString()}")

    def _on_finished(self, exit_code: int, exit_status: QProcess.ExitStatus) -> None:
        if self._process is None:
            return
        self._on_stdout()
        if self._stdout.strip():
            self._event_line(self._stdout)
        self._on_stderr()
        if self._stderr.strip():
            self.sig_log.emit(self._stderr.decode("utf-8", "replace").rstrip())
        self._stdout = self._stderr = b""
        if self._cancelled and self._pid:
            # Whatever the job started goes too (its group outlives it otherwise).
            try:
                os.killpg(self._pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError, AttributeError):
                pass
        returncode = exit_code if exit_status == QProcess.ExitStatus.NormalExit else -signal.SIGKILL
        try:
            # Removes what a killed job left of its outputs before raising.
            self.report = self._events.outcome(returncode, self._cancelled)
        except ToolCancelled as exc:
            self._end(CANCELLED, str(exc))
        except ModelToolError as exc:
            self._end(FAILED, _sentence(str(exc)))
        except (KeyError, TypeError, ValueError) as exc:
            self._end(FAILED, f"The job's report could not be read ({exc}).")
        else:
            self.sig_result.emit(self.report)
            self._end(SUCCEEDED, "")

    def _end(self, outcome: str, message: str) -> None:
        process, self._process = self._process, None
        self._kill_timer.stop()
        self._pid = 0
        if process is not None:
            process.deleteLater()
        self.sig_finished.emit(outcome, message)


def default_job_command() -> list[str]:
    return job_command()


def _sentence(message: str) -> str:
    """A tool's message as the window shows it: starting with a capital."""
    message = message.strip()
    return message[:1].upper() + message[1:]

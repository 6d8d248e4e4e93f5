"""debugpy's debug adapter as a child process, spoken to over its stdin and stdout.

Why this way: the adapter (``python -m debugpy.adapter``, what VS Code runs) is given the
program in a DAP ``launch`` request and starts it itself, through debugpy's launcher. That
needs no port to be found or raced for, the adapter reports the program's output, its exit code
and its end as DAP events, and the adapter's death is plain to see (its stdout closes). The
other way, ``python -m debugpy --listen HOST:PORT --wait-for-client script``, needs a free port
picked before the program starts and a connection retried until it listens; it is kept for
attaching (``launches.attach_to_port``), where the program is started by someone else.

The adapter runs on Workbench's own Python (which has debugpy); the program may run on another
(the project's), named in the ``launch`` request: debugpy's launcher brings debugpy along.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from workbench.debug.errors import DebugError
from workbench.debug.streams import PipeStream

# The adapter leaves once its client has disconnected; past this it is killed.
EXIT_GRACE_S = 3.0


class AdapterProcess:
    """A running ``python -m debugpy.adapter``; ``stream`` is its DAP byte stream."""

    def __init__(self, python: str | None = None):
        python = python or sys.executable
        try:
            self.process = subprocess.Popen(
                [python, "-m", "debugpy.adapter"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                # A group of its own: a Ctrl+C meant for Workbench's terminal does not reach it,
                # and the adapter with its launcher can be ended together.
                start_new_session=True,
            )
        except OSError as exc:
            raise DebugError(f"Could not start the debugger ({python} -m debugpy.adapter): {exc}. "
                             "Reinstall Workbench (it brings debugpy).") from None
        self.stream = PipeStream(self.process.stdin, self.process.stdout)

    @property
    def pid(self) -> int:
        return self.process.pid

    def exit_code(self) -> int | None:
        return self.process.poll()

    def describe_exit(self) -> str:
        """How the adapter ended, for a message ("was killed by SIGKILL", "exited with code 1")."""
        code = self.process.poll()
        if code is None:
            return "is still running"
        if code < 0:
            try:
                return f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"was killed by signal {-code}"
        return f"exited with code {code}"

    def stop(self, grace: float = EXIT_GRACE_S) -> None:
        """Close its stdin, give it ``grace`` seconds to leave, then kill its process group."""
        self.stream.close()
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass


class SpareAdapters:
    """One adapter started ahead of need per Python: debugpy's adapter takes about half a second
    to import and answer, which Debug then need not wait for. A window prepares one once the
    user shows they will debug (a breakpoint set, the Debug dock shown, a session ended) and
    never at start-up."""

    def __init__(self):
        import threading

        self._spares: dict[str, AdapterProcess] = {}
        self._lock = threading.Lock()
        self._closed = False

    def prepare(self, python: str | None = None) -> None:
        """Start a spare adapter for ``python`` unless one is waiting (call off the GUI thread:
        starting a process from a big one takes a few milliseconds)."""
        python = python or sys.executable
        with self._lock:
            spare = self._spares.get(python)
            if self._closed or (spare is not None and spare.exit_code() is None):
                return
            try:
                self._spares[python] = AdapterProcess(python)
            except DebugError:
                self._spares.pop(python, None)  # Debug itself then says what is wrong

    def take(self, python: str | None = None) -> AdapterProcess:
        """The waiting adapter for ``python`` if it is alive, else a new one."""
        python = python or sys.executable
        with self._lock:
            spare = self._spares.pop(python, None)
        if spare is not None and spare.exit_code() is None:
            return spare
        return AdapterProcess(python)

    def waiting(self, python: str | None = None) -> AdapterProcess | None:
        with self._lock:
            return self._spares.get(python or sys.executable)

    def close(self) -> None:
        """End every spare adapter (the window is closing)."""
        with self._lock:
            self._closed = True
            spares, self._spares = list(self._spares.values()), {}
        for spare in spares:
            spare.stop(grace=0)  # never used: nothing to wait for

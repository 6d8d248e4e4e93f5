"""Runs service calls off the GUI thread and brings their results back to it.

Each call has a key (say "git.status"); starting a call with a key that is already running
cancels the old one and drops its late result, as git-cola tags requests so that an answer for
an old selection is ignored.

The status bar's progress line belongs to the calls still running: when the call it speaks of
ends, the line of another running call takes its place, or the line goes. A long call (a log
stream) thus never keeps the stale line of a call that ended beside it.
"""

from __future__ import annotations

import inspect
import itertools
import logging
from typing import Any, Callable

import shiboken6
from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from workbench.tasks import CancelToken, Cancelled, Progress

log = logging.getLogger(__name__)


class _Relay(QObject):
    """Carries a worker's outcome to the GUI thread (signals across threads are queued)."""

    finished = Signal(str, int, object)
    failed = Signal(str, int, object)
    progressed = Signal(str, int, object)


class _Job(QRunnable):
    def __init__(self, relay: _Relay, key: str, generation: int, function: Callable, args: tuple,
                 kwargs: dict):
        super().__init__()
        self._relay, self._key, self._generation = relay, key, generation
        self._function, self._args, self._kwargs = function, args, kwargs

    def run(self) -> None:
        try:
            result = self._function(*self._args, **self._kwargs)
        except Cancelled:
            return
        except Exception as exc:  # reported to the widget, which shows its message
            _tell(self._relay, "failed", self._key, self._generation, exc)
            return
        _tell(self._relay, "finished", self._key, self._generation, result)


def _tell(relay: _Relay, signal_name: str, key: str, generation: int, outcome: object) -> None:
    """Emit one of ``relay``'s signals from a worker thread, unless the relay has gone."""
    try:
        getattr(relay, signal_name).emit(key, generation, outcome)
    except RuntimeError:
        if shiboken6.isValid(relay):
            raise
        # The runner went with its window (a process ending while a call still ran, like
        # `workbench screenshot` during a LAN browse): nobody is left to take the outcome.
        log.debug("%s ended after its window had gone", key)


class TaskRunner(QObject):
    """Service calls for one window."""

    sig_busy_changed = Signal(bool)
    """True while at least one call runs."""

    sig_progress = Signal(str)
    """A progress line for the status bar ("Pushing: Writing objects 45%"); empty when no
    running call has one."""

    def __init__(self, parent: QObject | None = None, max_threads: int = 4):
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(max_threads)
        self._relay = _Relay()
        self._relay.finished.connect(self._on_finished)
        self._relay.failed.connect(self._on_failed)
        self._relay.progressed.connect(self._on_progress)
        self._generations = itertools.count(1)
        self._running: dict[str, tuple[int, CancelToken, Callable | None, Callable | None, str]] = {}
        # The latest line of each running call that has one, the most recently said last.
        self._lines: dict[str, str] = {}
        self._shown = ""  # the key whose line the status bar shows

    def run(
        self,
        key: str,
        function: Callable[..., Any],
        *args: Any,
        on_done: Callable[[Any], None] | None = None,
        on_error: Callable[[Exception], None] | None = None,
        title: str = "",
        **kwargs: Any,
    ) -> CancelToken:
        """Call ``function(*args, **kwargs)`` in a worker thread. If it accepts ``progress`` or
        ``cancel`` parameters they are passed; ``on_done(result)`` / ``on_error(exc)`` run on the
        GUI thread, only for the newest call of ``key``."""
        previous = self._running.get(key)
        if previous is not None:
            previous[1].cancel()
        generation = next(self._generations)
        token = CancelToken()
        parameters = inspect.signature(function).parameters
        if "cancel" in parameters:
            kwargs["cancel"] = token
        if "progress" in parameters:
            kwargs["progress"] = lambda report, k=key, g=generation: _tell(self._relay, "progressed", k, g, report)
        was_busy = bool(self._running)
        self._running[key] = (generation, token, on_done, on_error, title)
        self._pool.start(_Job(self._relay, key, generation, function, args, kwargs))
        if not was_busy:
            self.sig_busy_changed.emit(True)
        if title:
            self._say(key, title)
        else:
            self._ended(key)  # the line of the call this one replaces is stale
        return token

    def is_running(self, key: str) -> bool:
        return key in self._running

    @property
    def busy(self) -> bool:
        """At least one call runs."""
        return bool(self._running)

    def cancel(self, key: str) -> None:
        entry = self._running.pop(key, None)
        if entry is not None:
            entry[1].cancel()
            self._ended(key)
            self._maybe_idle()

    def cancel_all(self) -> None:
        for key in list(self._running):
            self.cancel(key)

    def wait(self, msecs: int = -1) -> bool:
        """Block until every worker is done (for tests and for closing the window)."""
        return self._pool.waitForDone(msecs)

    def _take(self, key: str, generation: int):
        entry = self._running.get(key)
        if entry is None or entry[0] != generation:
            return None  # a stale answer: a newer call of this key was started
        del self._running[key]
        self._ended(key)
        self._maybe_idle()
        return entry

    def _maybe_idle(self) -> None:
        if not self._running:
            self.sig_busy_changed.emit(False)

    def progress_line(self) -> str:
        """The progress line the status bar shows now (empty for none)."""
        return self._lines.get(self._shown, "")

    def _say(self, key: str, line: str) -> None:
        self._lines.pop(key, None)
        self._lines[key] = line
        self._shown = key
        self.sig_progress.emit(line)

    def _ended(self, key: str) -> None:
        """``key`` has no line any more: when the status bar showed it, the newest line of a
        call still running replaces it, or the line goes."""
        if self._lines.pop(key, None) is None or key != self._shown:
            return
        self._shown = next(reversed(self._lines), "")
        self.sig_progress.emit(self._lines.get(self._shown, ""))

    def _on_finished(self, key: str, generation: int, result: object) -> None:
        entry = self._take(key, generation)
        if entry is not None and entry[2] is not None:
            entry[2](result)

    def _on_failed(self, key: str, generation: int, error: object) -> None:
        entry = self._take(key, generation)
        if entry is None:
            return
        if entry[3] is not None:
            entry[3](error)
        else:
            log.error("%s failed: %s", key, error)

    def _on_progress(self, key: str, generation: int, report: object) -> None:
        entry = self._running.get(key)
        if entry is not None and entry[0] == generation and isinstance(report, Progress):
            prefix = f"{entry[4]}: " if entry[4] else ""
            self._say(key, prefix + report.message)


class Operation:
    """The handle of one service call a command started (returned to scripts and tests):
    ``finished`` once it is over, then ``result`` or ``error``."""

    def __init__(self, name: str, kind: str = ""):
        self.name = name
        self.kind = kind  # whose operation, for its repr: "Git", "Training"
        self.finished = False
        self.result: Any = None
        self.error: Exception | None = None

    @property
    def succeeded(self) -> bool:
        return self.finished and self.error is None

    def __repr__(self) -> str:
        state = "running" if not self.finished else ("failed" if self.error else "done")
        return f"<{self.kind + ' ' if self.kind else ''}operation {self.name}: {state}>"

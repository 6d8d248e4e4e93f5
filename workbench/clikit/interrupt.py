"""Ctrl+C the same way in every command: the first press asks the work to stop gracefully, the
second stops it at once."""

from __future__ import annotations

import signal
import threading

from workbench.tasks import CancelToken


class CtrlC:
    """While in use, counts Ctrl+C presses (SIGINT) instead of raising KeyboardInterrupt.

    The first press cancels ``token``, which the work honours at its next safe point (a
    command that waits on a child process looks at ``count`` and stops it itself). With
    ``interrupt_at``, the press of that number raises KeyboardInterrupt where the main thread
    is: for work in this process that cannot check the token (a blocking call), the way to
    stop it at once. Outside the main thread (Python allows signal handlers only there) it
    changes nothing."""

    def __init__(self, interrupt_at: int | None = 2):
        self.count = 0
        self.token = CancelToken()
        self.interrupt_at = interrupt_at
        self._previous = None
        self._installed = False

    def __enter__(self) -> "CtrlC":
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._pressed)
            self._installed = True
        return self

    def __exit__(self, *exc_info) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False

    def reset(self) -> None:
        """Start counting again, with a new token: one step of the work is over (a run has
        started) and the next press is a first press for the next one (stop the run)."""
        self.count = 0
        self.token = CancelToken()

    def _pressed(self, signum, frame) -> None:
        self.count += 1
        self.token.cancel()
        if self.interrupt_at is not None and self.count >= self.interrupt_at:
            raise KeyboardInterrupt()

"""A stop request by signal: SIGTERM (and optionally Ctrl-C) sets a flag the training loop reads.

Workbench stops a run by sending SIGTERM to its process group. Rather than dying mid-step, the
loop sees ``stop.requested`` after the step it is in, checkpoints and exits. In a distributed
run every rank gets the signal, but not at the same instant, so the ranks agree on it with a
collective (``distributed.any_rank``) before acting; otherwise one rank would leave while the
others wait for it in the next all-reduce.
"""

from __future__ import annotations

import signal
import threading


class StopFlag:
    """Set when a stop was requested: by SIGTERM, by Ctrl-C if asked for, or by ``request()``."""

    def __init__(self):
        self.requested = False
        self.signal_name: str | None = None
        self._previous: dict[int, object] = {}

    def install(self, sigint: bool = False) -> "StopFlag":
        """Catch SIGTERM (and SIGINT when ``sigint``) from now on; returns self.

        A second Ctrl-C after the first still interrupts at once, for a loop that never checks
        the flag. Signal handlers can only be set from the main thread; elsewhere this does
        nothing and the flag is only set by ``request()``.
        """
        if threading.current_thread() is not threading.main_thread():
            return self
        wanted = [signal.SIGTERM] + ([signal.SIGINT] if sigint else [])
        for number in wanted:
            if number not in self._previous:
                self._previous[number] = signal.signal(number, self._on_signal)
        return self

    def uninstall(self) -> None:
        """Give the signals back to the handlers they had before ``install``."""
        for number, previous in self._previous.items():
            signal.signal(number, previous)
        self._previous.clear()

    def request(self, reason: str = "request") -> None:
        """Ask for a stop without a signal."""
        self.requested = True
        self.signal_name = self.signal_name or reason

    def _on_signal(self, number, frame) -> None:
        if number == signal.SIGINT and self.requested:
            raise KeyboardInterrupt
        self.request(signal.Signals(number).name)

    def __enter__(self) -> "StopFlag":
        return self.install()

    def __exit__(self, *exc_info) -> None:
        self.uninstall()

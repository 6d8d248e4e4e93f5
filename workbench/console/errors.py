"""The console capability's error type."""

from __future__ import annotations


class ConsoleError(Exception):
    """The console's kernel cannot start or stopped; the message says why and what to do.

    ``details`` keeps what the kernel printed (its stderr) for a details view.
    """

    def __init__(self, message: str, details: str = ""):
        super().__init__(message)
        self.details = details

"""The debug capability's error type."""

from __future__ import annotations


class DebugError(Exception):
    """A debug session cannot start, or a request to it failed; the message says why and what
    to do. ``command`` names the DAP request that failed, when one did."""

    def __init__(self, message: str, command: str = ""):
        super().__init__(message)
        self.command = command

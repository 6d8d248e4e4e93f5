"""The Git capability's error type."""

from __future__ import annotations


class GitError(Exception):
    """A Git operation failed; the message says what happened and what to do.

    ``details`` keeps git's own output (hook output, the raw stderr) for a "details" view.
    """

    def __init__(self, message: str, details: str = ""):
        super().__init__(message)
        self.details = details

"""The editor's error type: every failure the user sees carries a message they can act on."""

from __future__ import annotations


class EditorError(Exception):
    """Opening, saving or recovering a file failed; ``str(error)`` says what happened and what to do."""

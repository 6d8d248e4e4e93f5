"""The model tools' error: what went wrong with which file, and what to do about it."""

from __future__ import annotations

from workbench.tasks import Cancelled


class ModelToolError(Exception):
    """A model tool could not do its job. The message names the file and says what to do; the
    CLI prints it on one line and the tool window shows it, never a traceback."""


class ToolCancelled(ModelToolError, Cancelled):
    """The user cancelled the job; nothing was written. A ``workbench.tasks.Cancelled`` too, so
    whatever handles a cancelled service call handles a cancelled tool the same way."""

    def __init__(self, message: str = "Cancelled; no output was written."):
        super().__init__(message)

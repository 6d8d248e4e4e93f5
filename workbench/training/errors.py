"""The training capability's error type."""

from __future__ import annotations


class TrainingError(Exception):
    """A run cannot be started, found or controlled; the message says why and what to do.

    ``diagnostics`` holds the problems of a hyper-parameter file that refused a start
    (``workbench_trainkit.hparams.Diagnostic``), so an editor can underline them.
    """

    def __init__(self, message: str, diagnostics: list | None = None):
        super().__init__(message)
        self.diagnostics = list(diagnostics or [])

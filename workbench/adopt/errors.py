"""The error type of the adopt capability."""

from __future__ import annotations


class AdoptError(Exception):
    """A folder that cannot be set up for training as it is (no entry point, several equally
    likely ones, a project file already there, a script whose flags cannot be read).

    The message says what is wrong and what to do; widgets show it as it is and the CLI prints
    it on one line.
    """

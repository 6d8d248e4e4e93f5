"""The error type of the project capability."""

from __future__ import annotations


class ProjectError(Exception):
    """Something about a project folder, a template or a project file that the user can fix.

    The message says what is wrong and what to do about it; widgets show it as it is and the CLI
    prints it on one line.
    """

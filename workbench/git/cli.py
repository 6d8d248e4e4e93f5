"""``workbench git …``: the Git service for scripts and headless use."""

from __future__ import annotations

import click


@click.group("git")
def git_group() -> None:
    """Git: status, and the git-flow branching model."""

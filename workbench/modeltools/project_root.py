"""Which project a model file belongs to: the nearest folder holding a ``workbench.toml``."""

from __future__ import annotations

from pathlib import Path


def find_project_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` holding a ``workbench.toml``."""
    start = Path(start).resolve()
    for folder in (start, *start.parents) if start.is_dir() else start.parents:
        if (folder / "workbench.toml").is_file():
            return folder
    return None

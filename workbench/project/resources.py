"""Where Workbench's bundled resources (icons, style sheets, project templates) are."""

from __future__ import annotations

from pathlib import Path

from workbench.project.errors import ProjectError

_PACKAGE = Path(__file__).resolve().parents[1]


def resources_dir() -> Path:
    """The ``resources`` folder: ``workbench/resources`` in an installed wheel (pyproject
    force-includes it there), else ``resources/`` beside the package in a source checkout."""
    for candidate in (_PACKAGE / "resources", _PACKAGE.parent / "resources"):
        if candidate.is_dir():
            return candidate
    raise ProjectError(f"Workbench's resources folder is missing (looked in {_PACKAGE} and its "
                       "parent). Reinstall Workbench.")


def templates_dir() -> Path:
    """The folder holding one sub-folder per bundled project template."""
    return resources_dir() / "templates"

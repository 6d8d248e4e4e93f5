"""Widgets of the project capability."""

from workbench.project.widgets.file_tree import ProjectTree

__all__ = ["ProjectTree"]

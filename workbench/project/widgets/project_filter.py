"""The sort and filter between QFileSystemModel and the project tree."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QFileSystemModel

from workbench.project.project_file import STATE_DIR

# Folders a person never edits by hand; showing them only buries their files.
HIDDEN_NAMES = frozenset({".git", "__pycache__", STATE_DIR})


class ProjectFilter(QSortFilterProxyModel):
    """Hides :data:`HIDDEN_NAMES` inside the project and sorts folders first, then by name."""

    def __init__(self, root: Path, parent=None):
        super().__init__(parent)
        # Only names *inside* the project are hidden: a project kept under some ".workbench"
        # folder must still show.
        self._inside = str(root).rstrip("/") + "/"
        self.setDynamicSortFilter(True)
        self._icon_for: Callable[[str, bool], QIcon] | None = None

    def set_icons(self, icon_for: Callable[[str, bool], QIcon]) -> None:
        """Show ``icon_for(name, is_folder)`` beside each entry instead of the platform's icons."""
        self._icon_for = icon_for

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DecorationRole and self._icon_for is not None and index.column() == 0:
            model: QFileSystemModel = self.sourceModel()
            source = self.mapToSource(index)
            return self._icon_for(model.fileName(source), model.isDir(source))
        return super().data(index, role)

    def filterAcceptsRow(self, source_row: int, source_parent: QModelIndex | QPersistentModelIndex
                         ) -> bool:
        model: QFileSystemModel = self.sourceModel()
        index = model.index(source_row, 0, source_parent)
        if model.fileName(index) not in HIDDEN_NAMES:
            return True
        return not model.filePath(index).startswith(self._inside)

    def lessThan(self, left: QModelIndex | QPersistentModelIndex,
                 right: QModelIndex | QPersistentModelIndex) -> bool:
        model: QFileSystemModel = self.sourceModel()
        left_dir, right_dir = model.isDir(left), model.isDir(right)
        if left_dir != right_dir:
            return left_dir
        left_name, right_name = model.fileName(left), model.fileName(right)
        return (left_name.casefold(), left_name) < (right_name.casefold(), right_name)

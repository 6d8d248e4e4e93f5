"""The table of dataset versions: number, samples, size, part, parent, changes, when, by whom and
why, the newest first."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from workbench.qt.version_table import TableCell, VersionTable
from workbench.registry.datasets import DatasetVersion
from workbench.registry.widgets.dataset_rows import DATASET_COLUMNS, version_cells

RIGHT_ALIGNED = ("Samples", "Size", "Part")


class DatasetTable(VersionTable):
    """One row a dataset version, keyed by its number; ``show_versions`` fills it, keeping the
    selected one selected."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__("registry-datasets-table", sortable=True, parent=parent)
        self.show_versions([])

    def show_versions(self, versions: list[DatasetVersion]) -> None:
        rows = [(version.number, [TableCell(text, sort_key, tooltip) for text, sort_key, tooltip in version_cells(version)])
                for version in sorted(versions, key=lambda v: v.number, reverse=True)]
        self.show_rows(list(DATASET_COLUMNS), rows, stretch="Reason", right_aligned=RIGHT_ALIGNED)

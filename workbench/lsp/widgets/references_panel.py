"""The References dock: where a name is used, grouped by file, each with its line; a click goes
there."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from workbench.lsp.results import Location
from workbench.lsp.widgets.problems_panel import file_label

PLACE_ROLE = Qt.ItemDataRole.UserRole


class ReferencesPanel(QWidget):
    def __init__(self, window):
        super().__init__()
        self.setObjectName("lsp-references-panel")
        self.window = window
        self.locations: list[Location] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        self.title = QLabel(self)
        self.title.setContentsMargins(8, 4, 8, 4)
        layout.addWidget(self.title)
        self.tree = QTreeWidget(self)
        self.tree.setObjectName("lsp-references-tree")
        self.tree.setHeaderHidden(True)
        self.tree.setUniformRowHeights(True)
        self.tree.itemActivated.connect(self._go_to)
        self.tree.itemClicked.connect(self._go_to)
        layout.addWidget(self.tree, 1)

    def show_locations(self, name: str, locations: list[Location]) -> None:
        """List ``locations`` of ``name``."""
        self.locations = list(locations)
        self.tree.clear()
        by_file: dict[Path, list[Location]] = {}
        for location in self.locations:
            by_file.setdefault(location.path, []).append(location)
        count = len(self.locations)
        self.title.setText(f"{count} reference{'s' if count != 1 else ''} to {name} in {len(by_file)} "
                           f"file{'s' if len(by_file) != 1 else ''}" if count else f"No references to {name} found.")
        for path, found in by_file.items():
            file_item = QTreeWidgetItem([f"{file_label(path, self.window.project.root)}  ({len(found)})"])
            file_item.setToolTip(0, str(path))
            font = file_item.font(0)
            font.setBold(True)
            file_item.setFont(0, font)
            for location in sorted(found, key=lambda place: (place.span.line, place.span.column)):
                item = QTreeWidgetItem([f"{location.span.line}:  {location.text.strip()}"])
                item.setData(0, PLACE_ROLE, (str(path), location.span.line, location.span.column + 1))
                item.setToolTip(0, f"{path}:{location.span.line}")
                file_item.addChild(item)
            self.tree.addTopLevelItem(file_item)
            file_item.setExpanded(True)

    def _go_to(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        place = item.data(0, PLACE_ROLE)
        if place:
            self.window.open_file(Path(place[0]), place[1], place[2])

"""What will be synced: a data sync's plan as groups of files (to send, unchanged, skipped,
excluded, deleted locally, references), each with its size and reason."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTreeWidget, QTreeWidgetItem, QWidget
from workbench.platform.byte_sizes import format_size

GROUP_ROLE = Qt.ItemDataRole.UserRole
# Groups shown open: what is sent, and what is not sent although the settings name it.
OPEN_GROUPS = ("send", "skipped")


def plan_groups(plan) -> list[tuple[str, str, list[tuple[str, str, str]]]]:
    """``(key, title, rows)`` of a ``SyncPlan``; rows are ``(path, size, why)``. Empty groups
    are left out."""
    groups = [
        ("send", f"To send: {len(plan.send)} file(s), {format_size(plan.bytes_to_send)}",
         [(f.path, format_size(f.size), f.reason) for f in plan.send]),
        ("unchanged", f"Unchanged on the cluster: {len(plan.unchanged)} file(s)",
         [(path, "", "already there") for path in plan.unchanged]),
        ("skipped", f"Skipped: {len(plan.skipped)}", [(s.path, "", s.reason) for s in plan.skipped]),
        ("excluded", f"Excluded: {len(plan.excluded)}", [(s.path, "", s.reason) for s in plan.excluded]),
        ("deleted", f"Deleted here, kept on the cluster: {len(plan.deleted)}",
         [(path, "", "no longer in the project's data") for path in plan.deleted]),
        ("refs", f"Already on the cluster (references): {len(plan.refs)}",
         [(ref.name, "", f"→ {ref.remote_path}" + (" (missing there)" if ref.exists is False else "")
           + (f" ({ref.problem})" if ref.problem else "")) for ref in plan.refs]),
    ]
    return [group for group in groups if group[2]]


class SyncPreview(QTreeWidget):
    """The plan of a data sync, grouped; ``groups()`` tells what is shown."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setColumnCount(3)
        self.setHeaderLabels(["File", "Size", "Why"])
        self.setUniformRowHeights(True)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        header = self.header()
        header.setStretchLastSection(True)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        self.setColumnWidth(0, 300)
        self.setColumnWidth(1, 70)
        self.headerItem().setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def show_plan(self, plan) -> None:
        self.clear()
        for key, title, rows in plan_groups(plan):
            group = QTreeWidgetItem([title, "", ""])
            group.setData(0, GROUP_ROLE, key)
            font = group.font(0)
            font.setBold(True)
            group.setFont(0, font)
            group.setFirstColumnSpanned(False)
            if key == "skipped":
                group.setForeground(0, QBrush(QColor("#b06000")))
            self.addTopLevelItem(group)
            for path, size, why in rows:
                row = QTreeWidgetItem([path, size, why])
                row.setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                row.setToolTip(0, path)
                row.setToolTip(2, why)
                group.addChild(row)
            group.setExpanded(key in OPEN_GROUPS)
            group.setFirstColumnSpanned(True)

    def groups(self) -> dict[str, list[str]]:
        """``{group key: [paths]}`` as shown (for tests and scripts)."""
        shown = {}
        for index in range(self.topLevelItemCount()):
            group = self.topLevelItem(index)
            shown[group.data(0, GROUP_ROLE)] = [group.child(i).text(0) for i in range(group.childCount())]
        return shown

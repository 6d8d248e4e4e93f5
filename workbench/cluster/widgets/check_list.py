"""The checks of a profile test, one row each: waiting, ok or failed, what was found and what to do."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QAbstractItemView, QTreeWidget, QTreeWidgetItem, QWidget

# (mark, colour) of a check's outcome.
OUTCOMES = {
    "waiting": ("…", "#8a8a8a"),
    "ok": ("✓ ok", "#2e9d48"),
    "failed": ("✗ failed", "#d93025"),
    "skipped": ("– skipped", "#8a8a8a"),
}


def outcome_of(check) -> str:
    if check.ok:
        return "ok"
    return "skipped" if check.skipped else "failed"


class CheckList(QTreeWidget):
    """Rows for every check of a test, filled in as each ends."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setColumnCount(3)
        self.setHeaderLabels(["Check", "Result", "Found"])
        self.setRootIsDecorated(False)
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # paths keep both ends; the tooltip has it all
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setColumnWidth(0, 90)
        self.setColumnWidth(1, 80)
        self._rows: dict[str, QTreeWidgetItem] = {}

    def start(self, names: tuple[str, ...]) -> None:
        """A new test: every check waiting."""
        self.clear()
        self._rows = {}
        for name in names:
            item = QTreeWidgetItem([name, "", ""])
            self._set(item, "waiting", "")
            self.addTopLevelItem(item)
            self._rows[name] = item

    def add_check(self, check) -> None:
        """Show how one check (a ``ProfileCheck``) ended."""
        item = self._rows.get(check.name)
        if item is None:
            item = QTreeWidgetItem([check.name, "", ""])
            self.addTopLevelItem(item)
            self._rows[check.name] = item
        detail = check.detail + (f"\n{check.advice}" if check.advice else "")
        self._set(item, outcome_of(check), detail)

    def outcomes(self) -> dict[str, str]:
        """``{check name: "waiting" | "ok" | "failed" | "skipped"}``, for tests and scripts."""
        return {name: item.data(1, Qt.ItemDataRole.UserRole) for name, item in self._rows.items()}

    def finish(self) -> None:
        """The test is over: checks that never reported are shown as not run."""
        for item in self._rows.values():
            if item.data(1, Qt.ItemDataRole.UserRole) == "waiting":
                self._set(item, "skipped", "not checked")

    def _set(self, item: QTreeWidgetItem, outcome: str, detail: str) -> None:
        mark, colour = OUTCOMES[outcome]
        item.setText(1, mark)
        item.setData(1, Qt.ItemDataRole.UserRole, outcome)
        item.setForeground(1, QBrush(QColor(colour)))
        item.setText(2, detail)
        item.setToolTip(2, detail)

"""The editor of a list of files (a ``paths`` parameter, such as Compare's models): one file a row,
Add… (several at once, added at the end), Remove, Move up and Move down, and files dropped from
a file manager. The order matters (Compare measures the others against the first), so a row can
carry a mark such as "reference".
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from PySide6.QtCore import QItemSelectionModel, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QPainter
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

PATH_ROLE = Qt.ItemDataRole.UserRole + 1
MISSING_COLOUR = "#b3261e"
PLACEHOLDER_COLOUR = "#8a8f98"
EMPTY_TEXT = "Add files, or drop them here."
VISIBLE_ROWS = 4


class _FileList(QListWidget):
    """Takes files dropped from outside; rows move with the buttons."""

    sig_files_dropped = Signal(list)
    """Local files were dropped on the list (their paths)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setAcceptDrops(True)
        self.setDragDropMode(QAbstractItemView.DragDropMode.DropOnly)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setAlternatingRowColors(True)
        self.setUniformItemSizes(True)

    @staticmethod
    def _local_files(event) -> list[str]:
        mime = event.mimeData()
        if not mime.hasUrls():
            return []
        return [url.toLocalFile() for url in mime.urls() if url.isLocalFile() and url.toLocalFile()]

    def dragEnterEvent(self, event) -> None:
        if self._local_files(event):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event) -> None:
        if self._local_files(event):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event) -> None:
        files = self._local_files(event)
        if not files:
            event.ignore()
            return
        event.acceptProposedAction()
        self.sig_files_dropped.emit(files)

    def paintEvent(self, event) -> None:
        super().paintEvent(event)
        if self.count() == 0:
            painter = QPainter(self.viewport())
            painter.setPen(QColor(PLACEHOLDER_COLOUR))
            painter.drawText(self.viewport().rect().adjusted(8, 6, -8, -6),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop | Qt.TextFlag.TextWordWrap,
                             EMPTY_TEXT)

    def sizeHint(self):
        hint = super().sizeHint()
        row = self.sizeHintForRow(0) if self.count() else self.fontMetrics().height() + 6
        hint.setHeight(row * VISIBLE_ROWS + 2 * self.frameWidth() + 4)
        return hint


class PathListEditor(QWidget):
    """An ordered list of files with Add…, Remove, Move up and Move down."""

    sig_changed = Signal()
    """The files or their order changed."""

    def __init__(self, placeholder: str = "", parent: QWidget | None = None):
        super().__init__(parent)
        self.ask_files: Callable[[], list[str]] = lambda: []
        """Asks for files to add (a multi-file dialog); replaced by the form."""
        self.shown_name: Callable[[str], str] = lambda path: path
        """How a row names its file (relative to the project, say); the tooltip is the path."""
        self.exists: Callable[[str], bool] = lambda path: Path(path).exists()
        self._marks: dict[int, str] = {}
        self.list = _FileList()
        self.list.setObjectName("path-list")
        self.list.sig_files_dropped.connect(self.add_paths)
        self.list.itemSelectionChanged.connect(self._update_buttons)
        self.list.currentRowChanged.connect(lambda _row: self._update_buttons())
        self.list.setToolTip(placeholder)
        self.add_button = self._button("Add…", "path-list-add", "Add files at the end of the list", self._add)
        self.remove_button = self._button("Remove", "path-list-remove", "Remove the selected files",
                                          self.remove_selected)
        self.up_button = self._button("Move Up", "path-list-up", "Move the selected file up", lambda: self.move(-1))
        self.down_button = self._button("Move Down", "path-list-down", "Move the selected file down",
                                        lambda: self.move(1))
        buttons = QVBoxLayout()
        buttons.setContentsMargins(0, 0, 0, 0)
        buttons.setSpacing(4)
        for button in (self.add_button, self.remove_button, self.up_button, self.down_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(6)
        row.addWidget(self.list, 1)
        row.addLayout(buttons)
        self._update_buttons()

    def _button(self, text: str, name: str, tip: str, slot) -> QPushButton:
        button = QPushButton(text)
        button.setObjectName(name)
        button.setToolTip(tip)
        button.clicked.connect(lambda *_: slot())
        return button

    # --- the files ----------------------------------------------------------------------------

    def paths(self) -> list[str]:
        return [self.list.item(row).data(PATH_ROLE) for row in range(self.list.count())]

    def set_paths(self, paths: list[str]) -> None:
        self.list.clear()
        for path in paths:
            self.list.addItem(self._item(str(path)))
        self._refresh_rows()
        self._update_buttons()
        self.sig_changed.emit()

    def add_paths(self, paths: list[str]) -> None:
        """Add ``paths`` at the end (a file already listed is not added twice)."""
        present = set(self.paths())
        added = [str(p) for p in paths if str(p) and str(p) not in present]
        if not added:
            return
        for path in dict.fromkeys(added):
            self.list.addItem(self._item(path))
        self.select(self.list.count() - 1)
        self._refresh_rows()
        self.sig_changed.emit()

    def remove_selected(self) -> None:
        rows = sorted((self.list.row(item) for item in self.list.selectedItems()), reverse=True)
        if not rows:
            return
        for row in rows:
            self.list.takeItem(row)
        if self.list.count():
            self.select(min(rows[-1], self.list.count() - 1))
        self._refresh_rows()
        self.sig_changed.emit()

    def move(self, step: int) -> None:
        """Move the selected file ``step`` rows (-1 up, 1 down)."""
        row = self.list.currentRow()
        target = row + step
        if row < 0 or not 0 <= target < self.list.count():
            return
        item = self.list.takeItem(row)
        self.list.insertItem(target, item)
        self.select(target)
        self._refresh_rows()
        self.sig_changed.emit()

    def select(self, row: int) -> None:
        """Select the file at ``row`` alone, as a click does."""
        self.list.setCurrentRow(row, QItemSelectionModel.SelectionFlag.ClearAndSelect)

    def set_mark(self, row: int | None, text: str) -> None:
        """Tag the file at ``row`` ("reference"); None takes the tag off."""
        marks = {} if row is None else {row: text}
        if marks != self._marks:
            self._marks = marks
            self._refresh_rows()

    def refresh(self) -> None:
        """Show again which files exist (after the files changed on disk)."""
        self._refresh_rows()

    def setEnabled(self, enabled: bool) -> None:  # noqa: N802 (Qt's name)
        super().setEnabled(enabled)
        self._update_buttons()

    # --- inside -------------------------------------------------------------------------------

    def _item(self, path: str) -> QListWidgetItem:
        item = QListWidgetItem()
        item.setData(PATH_ROLE, path)
        item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
        return item

    def _refresh_rows(self) -> None:
        for row in range(self.list.count()):
            item = self.list.item(row)
            path = item.data(PATH_ROLE)
            text = self.shown_name(path)
            mark = self._marks.get(row)
            font = QFont(self.list.font())
            font.setWeight(QFont.Weight.DemiBold if mark else QFont.Weight.Normal)
            item.setFont(font)
            missing = not self.exists(path)
            item.setText(f"{text}   ({mark})" if mark else text)
            item.setToolTip(path + ("\nThe file does not exist." if missing else ""))
            item.setForeground(QBrush(QColor(MISSING_COLOUR)) if missing else QBrush())
        self._update_buttons()
        self.list.updateGeometry()

    def _update_buttons(self) -> None:
        enabled = self.isEnabled()
        selected = self.list.selectedItems()
        row = self.list.currentRow() if selected else -1
        self.add_button.setEnabled(enabled)
        self.remove_button.setEnabled(enabled and bool(selected))
        self.up_button.setEnabled(enabled and len(selected) == 1 and row > 0)
        self.down_button.setEnabled(enabled and len(selected) == 1 and 0 <= row < self.list.count() - 1)

    def _add(self) -> None:
        chosen = self.ask_files()
        if chosen:
            self.add_paths(list(chosen))

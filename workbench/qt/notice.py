"""A green notice bar with buttons and ×, as panels show when something arrived ("Model produced
…"), and showing a file in the system's file manager."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QToolButton, QWidget

from workbench.qt.theme import set_themed_style_sheet


def reveal_in_file_manager(path: Path | str) -> None:
    """Open the folder holding ``path`` (or ``path`` itself, for a folder) in the file manager."""
    from PySide6.QtCore import QUrl
    from PySide6.QtGui import QDesktopServices

    target = Path(path)
    QDesktopServices.openUrl(QUrl.fromLocalFile(str(target if target.is_dir() else target.parent)))


class NoticeBar(QFrame):
    """One message at a time, with the buttons ``add_button`` put before the ×; starts hidden.
    ``path`` is the file the notice is about."""

    def __init__(self, object_name: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName(object_name)
        set_themed_style_sheet(self, f"#{object_name} {{ background: @SUCCESS_BACKGROUND; "
                                     "border-bottom: 1px solid @SUCCESS_BORDER; }")
        self.path = ""
        self.label = QLabel("")
        self.label.setWordWrap(True)
        self._layout = QHBoxLayout(self)
        self._layout.setContentsMargins(8, 3, 4, 3)
        self._layout.addWidget(self.label, 1)
        close = QToolButton()
        close.setText("×")
        close.setAutoRaise(True)
        close.setToolTip("Hide this notice")
        close.clicked.connect(self.hide)
        self._layout.addWidget(close)
        self.hide()

    def add_button(self, text: str) -> QPushButton:
        button = QPushButton(text)
        self._layout.insertWidget(self._layout.count() - 1, button)
        return button

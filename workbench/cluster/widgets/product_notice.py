"""The notice above the runs when a cluster run's products arrive: "Model produced: runs/<id>/
outputs/model.pt", with Reveal."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QToolButton, QWidget

from workbench.modeltools.model_index import MODEL_SUFFIXES, model_among  # noqa: F401  (re-exported)


def reveal_in_file_manager(path: str) -> None:
    """Show the folder holding ``path`` in the system's file manager."""
    from PySide6.QtCore import QUrl
    from PySide6.QtGui import QDesktopServices

    target = Path(path)
    QDesktopServices.openUrl(QUrl.fromLocalFile(str(target.parent if target.is_file() else target)))


class ProductNotice(QFrame):
    """One notice at a time; Reveal shows the file in the file manager, × hides the notice."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("cluster-product-notice")
        self.setStyleSheet("#cluster-product-notice { background: #e6f4ea; border-bottom: 1px solid #a8d5b5; }")
        self.reveal: Callable[[str], None] = reveal_in_file_manager
        """Shows a file (replaceable in tests)."""
        self.path = ""
        self.label = QLabel("")
        self.label.setWordWrap(True)
        self.reveal_button = QPushButton("Reveal")
        self.reveal_button.clicked.connect(lambda: self.reveal(self.path))
        close = QToolButton()
        close.setText("×")
        close.setAutoRaise(True)
        close.setToolTip("Hide this notice")
        close.clicked.connect(self.hide)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 3, 4, 3)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.reveal_button)
        layout.addWidget(close)
        self.hide()

    @property
    def message(self) -> str:
        return self.label.text()

    def show_notice(self, message: str, path: str) -> None:
        """Show ``message``; Reveal shows ``path``."""
        self.path = path
        self.label.setText(message)
        self.label.setToolTip(path)
        self.show()

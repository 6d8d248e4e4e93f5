"""The notice above the runs when a cluster run's products arrive: "Model produced: runs/<id>/
outputs/model.pt", with Reveal."""

from __future__ import annotations

from typing import Callable

from PySide6.QtWidgets import QWidget

from workbench.modeltools.model_index import MODEL_SUFFIXES, model_among  # noqa: F401  (re-exported)
from workbench.qt.notice import NoticeBar, reveal_in_file_manager  # noqa: F401  (re-exported)


class ProductNotice(NoticeBar):
    """One notice at a time; Reveal shows the file in the file manager, × hides the notice."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__("cluster-product-notice", parent)
        self.reveal: Callable[[str], None] = reveal_in_file_manager
        """Shows a file (replaceable in tests)."""
        self.reveal_button = self.add_button("Reveal")
        self.reveal_button.clicked.connect(lambda: self.reveal(self.path))

    @property
    def message(self) -> str:
        return self.label.text()

    def show_notice(self, message: str, path: str) -> None:
        """Show ``message``; Reveal shows ``path``."""
        self.path = path
        self.label.setText(message)
        self.label.setToolTip(path)
        self.show()

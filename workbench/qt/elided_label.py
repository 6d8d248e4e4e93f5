"""A one-line label that shortens its text with "…" to the width it is given."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

# However long the text, the label asks for no more width than this: a long message must never
# make its dock, and so the window, wider.
PREFERRED_MAX_WIDTH = 300


class ElidedLabel(QLabel):
    """One line of text shortened with "…" (at the end, or in the middle so a long path keeps
    both ends) to the label's width; the whole text is its tooltip and ``full_text()``, the text
    shown is ``text()``. It never needs more than a few characters of width."""

    def __init__(self, text: str = "", parent: QWidget | None = None, *,
                 elide_mode: Qt.TextElideMode = Qt.TextElideMode.ElideRight) -> None:
        super().__init__(parent)
        self._full = ""
        self._elide_mode = elide_mode
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setMinimumWidth(0)
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt override)
        self._full = text
        self.setToolTip(text)
        self._elide()

    def full_text(self) -> str:
        """The whole text, as given to ``setText``."""
        return self._full

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt override)
        return QSize(0, super().minimumSizeHint().height())

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt override)
        width = min(self.fontMetrics().horizontalAdvance(self._full), PREFERRED_MAX_WIDTH)
        return QSize(width, super().sizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt override)
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        width = max(0, self.contentsRect().width())
        shown = self.fontMetrics().elidedText(self._full, self._elide_mode, width)
        if shown != super().text():
            super().setText(shown)

"""A scroll area for content with wrapping text (the tool form, the report)."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtWidgets import QFrame, QScrollArea, QWidget


class WrappingScrollArea(QScrollArea):
    """Scrolls its widget instead of squeezing it. Text that wraps (help lines, warnings) is
    only as tall as its width allows, and a plain scroll area never asks, so this one does."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._refit = QTimer(self)
        self._refit.setSingleShot(True)
        self._refit.timeout.connect(self._fit)

    def setWidget(self, widget: QWidget) -> None:
        super().setWidget(widget)
        widget.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:
        if watched is self.widget() and event.type() == QEvent.Type.LayoutRequest:
            self._refit.start(0)
        return super().eventFilter(watched, event)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        widget = self.widget()
        if widget is None or widget.layout() is None:
            return
        width = self.viewport().width()
        needed = widget.layout().totalHeightForWidth(width) if widget.layout().hasHeightForWidth() else -1
        widget.setMinimumHeight(max(needed, widget.layout().totalMinimumSize().height()))

    def needed_height(self) -> int:
        """The height the widget takes at the current width, without scrolling."""
        self._fit()
        return self.widget().minimumHeight()

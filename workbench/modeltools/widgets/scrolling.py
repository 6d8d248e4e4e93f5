"""A scroll area for content with wrapping text (the tool form, the report), and the guard that
keeps the wheel scrolling it instead of changing the values of the editors it passes over."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QAbstractScrollArea, QApplication, QFrame, QScrollArea, QWidget


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
        layout = widget.layout()
        # The height at this width, not the layout's minimum: a wrapping label's minimum is its
        # height at some narrow width, far taller than it is here.
        needed = layout.totalHeightForWidth(width) if layout.hasHeightForWidth() else -1
        widget.setMinimumHeight(needed if needed > 0 else layout.totalMinimumSize().height())

    def needed_height(self) -> int:
        """The height the widget takes at the current width, without scrolling."""
        self._fit()
        return self.widget().minimumHeight()


class WheelGuard(QObject):
    """Spin boxes and combo boxes take the wheel only once they have the keyboard focus (a click
    or Tab gives it, the wheel does not); until then the wheel scrolls the form under them, as
    in VS Code's settings and Qt Creator's options. ``guard(editor)`` sets an editor up."""

    def guard(self, editor: QWidget) -> None:
        editor.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        editor.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:
        if event.type() != QEvent.Type.Wheel or not isinstance(watched, QWidget) or watched.hasFocus():
            return super().eventFilter(watched, event)
        area = _scroll_area_of(watched)
        if area is not None:
            QApplication.sendEvent(area.viewport(), event)
            event.accept()
        else:
            event.ignore()  # Qt passes it on to the parents
        return True


def _scroll_area_of(widget: QWidget) -> QAbstractScrollArea | None:
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QAbstractScrollArea):
            return parent
        parent = parent.parentWidget()
    return None

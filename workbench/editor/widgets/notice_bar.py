"""Thin information bars above the editor: a message and a few buttons, one bar per topic."""

from __future__ import annotations

from typing import Callable

from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from workbench.qt import theme

_STYLES = {
    "info": "background: @INFO_BACKGROUND; border-bottom: 1px solid @INFO_BORDER;",
    "warning": "background: @WARNING_BACKGROUND; border-bottom: 1px solid @WARNING_BORDER;",
}


class NoticeBar(QFrame):
    """One notice: a message and buttons; a button runs its action, then closes the bar."""

    def __init__(
        self, message: str, buttons: list[tuple[str, Callable[[], None]]] = (),
        kind: str = "info", parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("NoticeBar")
        theme.set_themed_style_sheet(self, f"#NoticeBar {{ {_STYLES.get(kind, _STYLES['info'])} }}")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 3, 8, 3)
        self.label = QLabel(message)
        self.label.setWordWrap(True)
        layout.addWidget(self.label, 1)
        self.buttons: dict[str, QPushButton] = {}
        for title, action in buttons:
            button = QPushButton(title)
            button.setFlat(False)
            button.clicked.connect(lambda _=False, run=action: self._run(run))
            layout.addWidget(button)
            self.buttons[title] = button

    @property
    def message(self) -> str:
        """The text shown."""
        return self.label.text()

    def _run(self, action: Callable[[], None]) -> None:
        self.hide()
        action()


class NoticeArea(QWidget):
    """A stack of notice bars keyed by topic; showing a topic again replaces its bar."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(0)
        self._bars: dict[str, NoticeBar] = {}

    def show_notice(
        self, topic: str, message: str, buttons: list[tuple[str, Callable[[], None]]] = (),
        kind: str = "info",
    ) -> NoticeBar:
        """Show ``message`` for ``topic`` with ``buttons`` as (title, action) pairs."""
        self.hide_notice(topic)
        bar = NoticeBar(message, buttons, kind, self)
        self._bars[topic] = bar
        self._layout.addWidget(bar)
        return bar

    def hide_notice(self, topic: str) -> None:
        """Remove the bar of ``topic`` if it is shown."""
        bar = self._bars.pop(topic, None)
        if bar is not None:
            bar.hide()
            bar.deleteLater()

    def notice(self, topic: str) -> NoticeBar | None:
        """The visible bar of ``topic``, or None."""
        bar = self._bars.get(topic)
        return bar if bar is not None and not bar.isHidden() else None

    def topics(self) -> list[str]:
        """The topics with a visible bar, oldest first."""
        return [topic for topic, bar in self._bars.items() if not bar.isHidden()]

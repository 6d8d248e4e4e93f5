"""Lists the runs again when the user comes back to the window (a run may have been started or
ended from a terminal meanwhile)."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject


class _RefreshOnActivation(QObject):
    def __init__(self, window, session):
        super().__init__(window)
        self._session = session
        window.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt override)
        if event.type() == QEvent.Type.WindowActivate and self._session.listed:
            self._session.refresh()
        return False


def refresh_on_activation(window, session) -> QObject:
    return _RefreshOnActivation(window, session)

"""Ending a Qt process cleanly on SIGTERM (and SIGINT), as on a quit from its menu.

Python runs its signal handlers only between bytecodes, and a Qt program spends its time inside
the C++ event loop, so the handler would wait for the next Python callback. Instead the signal
wakes a socket that the event loop watches (``signal.set_wakeup_fd``).
"""

from __future__ import annotations

import signal
import socket
from typing import Callable

from PySide6.QtCore import QObject, QSocketNotifier

TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class TerminationWatch(QObject):
    """Calls ``on_terminate`` on the GUI thread when the process gets SIGTERM or SIGINT."""

    def __init__(self, on_terminate: Callable[[], None], parent: QObject | None = None):
        super().__init__(parent)
        self._on_terminate = on_terminate
        self._reader, self._writer = socket.socketpair()
        self._reader.setblocking(False)
        self._writer.setblocking(False)
        signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        for number in TERMINATING_SIGNALS:
            # The wakeup byte does the work; the Python handler only keeps the default action
            # (ending at once) from happening.
            signal.signal(number, lambda _number, _frame: None)
        self._notifier = QSocketNotifier(self._reader.fileno(), QSocketNotifier.Type.Read, self)
        self._notifier.activated.connect(self._woken)

    def _woken(self) -> None:
        try:
            received = self._reader.recv(64)
        except BlockingIOError:
            return
        if any(number in received for number in TERMINATING_SIGNALS):
            self._on_terminate()

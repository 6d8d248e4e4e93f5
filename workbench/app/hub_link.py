"""A window process's link to the hub: connect, register, and register again with the next hub
after losing one. Project windows (window_process) and tool windows (tool_window_process) both
keep one.

The hub's requests to the window are answered by ``handler`` (its ``on_window_*`` methods, see
workbench.ipc.messages); what the window registers as comes from ``registration()``, asked
afresh on every (re)connection.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from PySide6.QtCore import QObject, QTimer

from workbench.ipc import messages
from workbench.ipc.endpoint import socket_path
from workbench.ipc.errors import RpcError

log = logging.getLogger("workbench.window")

RECONNECT_DELAYS_MS = (100, 200, 400, 800, 1000)
# hub.quit_all is answered once every window has closed, which may wait for people to answer
# their windows' questions.
QUIT_ALL_TIMEOUT_MS = 3_600_000


class HubLink(QObject):
    """Keeps one window process registered with whichever hub is running."""

    def __init__(self, handler: object, registration: Callable[[], dict], start_hub: bool = False,
                 parent: QObject | None = None):
        super().__init__(parent)
        self._handler = handler
        self._registration = registration
        self._start_hub = start_hub
        self.connection = None  # the RpcConnection to the hub, while there is one
        self._attempt = 0
        self._retry = QTimer(self)
        self._retry.setSingleShot(True)
        self._retry.timeout.connect(self.connect)
        self._alone = QTimer(self)
        self._alone.setSingleShot(True)
        self._alone.timeout.connect(self._on_alone)
        self._on_give_up: Callable[[], None] | None = None
        self.closing = False

    @property
    def is_open(self) -> bool:
        return self.connection is not None and self.connection.is_open

    def connect(self) -> None:
        if self.closing:
            return
        # Loaded here, after the window has painted: the link is not needed to show a window.
        from PySide6.QtNetwork import QLocalSocket

        socket = QLocalSocket()
        socket.connected.connect(lambda: self._on_connected(socket))
        socket.errorOccurred.connect(lambda _error: self._on_connect_failed(socket))
        socket.connectToServer(str(socket_path()))

    def connect_if_needed(self) -> None:
        if self.connection is None and not self._retry.isActive():
            self.connect()

    def request(self, method: str, params: dict | None = None,
                on_result: Callable[[Any], None] | None = None,
                on_error: Callable[[RpcError], None] | None = None, timeout_ms: int = 10_000) -> None:
        """Ask the hub; without a hub ``on_error`` gets an RpcError at once, with ``no_hub``
        set on it (never raises)."""
        if not self.is_open:
            if on_error is not None:
                error = RpcError(RpcError.TIMEOUT, "No Workbench hub is running.")
                error.no_hub = True  # type: ignore[attr-defined]
                on_error(error)
            return
        self.connection.request(method, params, on_result=on_result, on_error=on_error, timeout_ms=timeout_ms)

    def notify(self, method: str, params: dict | None = None) -> None:
        if self.is_open:
            self.connection.notify(method, params)

    def broadcast(self, event: str, data: object) -> None:
        """Pass ``event`` to every other window (dropped when no hub runs)."""
        self.notify(messages.BROADCAST, {"event": event, "data": data})

    def flush(self) -> None:
        """Write out what is queued for the hub now (before the process ends, say)."""
        if self.is_open:
            self.connection.socket.flush()

    def give_up_after(self, ms: int | None, on_give_up: Callable[[], None] | None = None) -> None:
        """Call ``on_give_up`` once no hub has been linked for ``ms`` milliseconds in a row
        (``None``: never, which is the default)."""
        self._alone.stop()
        self._on_give_up = on_give_up if ms is not None else None
        if ms is not None:
            self._alone.setInterval(ms)
            if not self.is_open:
                self._alone.start()

    def _on_alone(self) -> None:
        if not self.is_open and not self.closing and self._on_give_up is not None:
            self._on_give_up()

    def _start_alone_clock(self) -> None:
        if self._on_give_up is not None and not self._alone.isActive():
            self._alone.start()

    def say_closing(self, window_id: str) -> None:
        """The window closes on purpose: tell the hub (so it is not taken for a crash), stop
        reconnecting."""
        self.closing = True
        self._retry.stop()
        if self.is_open:
            self.connection.notify(messages.WINDOW_CLOSING, {"window_id": window_id})
            self.connection.socket.flush()

    def _on_connect_failed(self, socket) -> None:
        if self.connection is not None and self.connection.socket is socket:
            return  # errors of a live link are handled by its disconnect
        socket.deleteLater()
        self._start_alone_clock()
        if self._start_hub:
            self._start_hub = False
            from workbench.app.launcher import spawn_hub

            # The hub lock settles a race with another window or `workbench` call doing the same.
            spawn_hub(show_welcome=False)
        delay = RECONNECT_DELAYS_MS[min(self._attempt, len(RECONNECT_DELAYS_MS) - 1)]
        self._attempt += 1
        self._retry.start(delay)

    def _on_connected(self, socket) -> None:
        from workbench.ipc.connection import RpcConnection

        self._attempt = 0
        self._alone.stop()
        link = RpcConnection(socket, self._handler, self)
        link.sig_disconnected.connect(lambda: self._on_link_lost(link))
        self.connection = link
        link.request(messages.WINDOW_REGISTER, self._registration(),
                     on_error=lambda error: log.warning("Hub refused registration: %s", error.message))

    def _on_link_lost(self, link) -> None:
        if self.connection is link:
            self.connection = None
        link.deleteLater()
        if not self.closing:
            log.info("Lost the hub; will register with the next one")
            self._start_alone_clock()
            self._retry.start(RECONNECT_DELAYS_MS[0])

"""The hub's listening socket."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtNetwork import QLocalServer

from .connection import RpcConnection
from .errors import IpcError


class RpcServer(QObject):
    """Accepts window connections on the hub socket; one RpcConnection each."""

    sig_connection_opened = Signal(object)
    """A peer connected (the RpcConnection)."""

    sig_connection_closed = Signal(object)
    """A peer's connection ended (the RpcConnection), for whatever reason."""

    def __init__(self, handler: object, parent: QObject | None = None):
        super().__init__(parent)
        self._handler = handler
        self._server = QLocalServer(self)
        self._server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self._server.newConnection.connect(self._on_new_connection)
        self.connections: list[RpcConnection] = []

    def listen(self, path: Path) -> None:
        """Listen on ``path``. The caller holds the hub lock, so a file already there is stale."""
        if path.exists() or path.is_symlink():
            os.unlink(path)
        if not self._server.listen(str(path)):
            raise IpcError(f"Cannot listen on {path}: {self._server.errorString()}.")

    def close(self) -> None:
        self._server.close()

    def _on_new_connection(self) -> None:
        while self._server.hasPendingConnections():
            socket = self._server.nextPendingConnection()
            connection = RpcConnection(socket, self._handler, self)
            self.connections.append(connection)
            connection.sig_disconnected.connect(lambda c=connection: self._on_closed(c))
            self.sig_connection_opened.emit(connection)

    def _on_closed(self, connection: RpcConnection) -> None:
        if connection in self.connections:
            self.connections.remove(connection)
        self.sig_connection_closed.emit(connection)
        connection.deleteLater()

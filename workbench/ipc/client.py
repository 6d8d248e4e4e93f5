"""A blocking hub client on a plain Unix socket, for the CLI, scripts and tests.

It needs no Qt and no event loop, so ``workbench open PATH`` can forward its request and exit in
a few milliseconds. QLocalServer on Unix listens on an ordinary Unix-domain socket at the path
it is given, which is why a stdlib socket can talk to it.
"""

from __future__ import annotations

import itertools
import socket
import time
from pathlib import Path
from typing import Any

from . import messages
from .endpoint import socket_path
from .errors import IpcError, RpcError
from .framing import FrameDecoder, FrameError, encode_frame


class HubClient:
    """One connection to the hub. Use ``HubClient.connect()`` or as a context manager."""

    def __init__(self, sock: socket.socket, path: Path):
        self._sock = sock
        self._path = path
        self._decoder = FrameDecoder()
        self._ids = itertools.count(1)
        self._pending: list[dict] = []
        self.notifications: list[dict] = []

    @classmethod
    def connect(cls, path: Path | None = None, timeout: float = 2.0, check: bool = True) -> "HubClient":
        """Connect and, with ``check``, make sure a Workbench hub is what answers.

        Raises IpcError when nothing listens (``no_hub`` is then True on the error) or when the
        socket belongs to something else.
        """
        path = path or socket_path()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            sock.close()
            error = IpcError(f"No Workbench hub is running ({path}: {exc.strerror}).")
            error.no_hub = True  # type: ignore[attr-defined]
            raise error from None
        except OSError as exc:
            sock.close()
            raise IpcError(f"Cannot connect to the hub socket {path}: {exc.strerror}.") from None
        client = cls(sock, path)
        if check:
            try:
                hello = client.call(messages.HUB_HELLO, {"protocol": messages.PROTOCOL_VERSION}, timeout)
            except (IpcError, RpcError) as exc:
                client.close()
                raise IpcError(
                    f"Something that is not a Workbench hub answers on {path} ({exc}). "
                    "Stop it, or set WORKBENCH_RUNTIME_DIR to another folder."
                ) from None
            if not isinstance(hello, dict) or hello.get("app") != messages.APP_NAME:
                client.close()
                raise IpcError(f"The program on {path} is not a Workbench hub.")
            client.hub_info = hello
        return client

    def call(self, method: str, params: dict | None = None, timeout: float = 10.0) -> Any:
        """Send a request and wait for its answer; RpcError when the hub answers with an error."""
        request_id = next(self._ids)
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}})
        deadline = time.monotonic() + timeout
        while True:
            for message in self._pending:
                if message.get("id") == request_id:
                    self._pending.remove(message)
                    if "error" in message:
                        error = message["error"] or {}
                        raise RpcError(error.get("code", RpcError.INTERNAL_ERROR),
                                       error.get("message", "unknown error"), error.get("data"))
                    return message.get("result")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise IpcError(f"The hub did not answer {method} within {timeout:g} s.")
            self._receive(remaining)

    def notify(self, method: str, params: dict | None = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params or {}})

    def send(self, message: dict) -> None:
        try:
            self._sock.sendall(encode_frame(message))
        except OSError as exc:
            raise IpcError(f"Lost the connection to the hub: {exc.strerror or exc}.") from None

    def send_raw(self, data: bytes) -> None:
        """Send bytes as they are (tests use it to play a misbehaving peer)."""
        self._sock.sendall(data)

    def _receive(self, timeout: float) -> None:
        self._sock.settimeout(timeout)
        try:
            data = self._sock.recv(65536)
        except socket.timeout:
            return
        except OSError as exc:
            raise IpcError(f"Lost the connection to the hub: {exc.strerror or exc}.") from None
        if not data:
            raise IpcError("The hub closed the connection.")
        try:
            for message in self._decoder.feed(data):
                if "id" in message and ("result" in message or "error" in message):
                    self._pending.append(message)
                else:
                    self.notifications.append(message)
        except FrameError as exc:
            raise IpcError(f"The hub sent a malformed frame: {exc}") from None

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> "HubClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

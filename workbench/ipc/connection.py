"""JSON-RPC 2.0 over a QLocalSocket, for the hub and the windows (both ends run a Qt loop).

Each incoming request is answered by ``handler.on_<name>(params, connection)`` (see
messages.handler_name); its return value is the result, an RpcError it raises is the error
answer. Outgoing requests take callbacks and a time-out, so nothing on the GUI thread waits.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass
from typing import Any, Callable

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtNetwork import QLocalSocket

from . import messages
from .errors import RpcError
from .framing import FrameDecoder, FrameError, encode_frame

log = logging.getLogger(__name__)

ResultCallback = Callable[[Any], None]
ErrorCallback = Callable[[RpcError], None]


class DeferredAnswer:
    """Returned by a handler that answers later (for example after asking another window)."""

    def __init__(self) -> None:
        self._deliver: Callable[[dict], None] | None = None
        self._early: dict | None = None

    def resolve(self, result: Any) -> None:
        self._finish({"result": result})

    def reject(self, error: RpcError) -> None:
        self._finish({"error": error.to_json()})

    def _finish(self, answer: dict) -> None:
        if self._deliver is None:
            self._early = answer
        else:
            self._deliver(answer)

    def _bind(self, deliver: Callable[[dict], None]) -> None:
        self._deliver = deliver
        if self._early is not None:
            deliver(self._early)


@dataclass
class _PendingRequest:
    method: str
    on_result: ResultCallback | None
    on_error: ErrorCallback | None
    timer: QTimer


class RpcConnection(QObject):
    """One end of a hub ⇄ window link."""

    sig_disconnected = Signal()
    """The peer went away (closed, crashed, or was dropped for sending garbage)."""

    def __init__(self, socket: QLocalSocket, handler: object, parent: QObject | None = None):
        super().__init__(parent)
        self.socket = socket
        self.handler = handler
        self.peer: dict = {}  # filled by whoever learns who the peer is (window.register)
        self._decoder = FrameDecoder()
        self._ids = itertools.count(1)
        self._pending: dict[int, _PendingRequest] = {}
        self._handlers: dict[str, Callable] = {}
        self._closed = False
        socket.setParent(self)
        socket.readyRead.connect(self._on_ready_read)
        socket.disconnected.connect(self._on_disconnected)
        socket.errorOccurred.connect(self._on_socket_error)

    @property
    def is_open(self) -> bool:
        return not self._closed and self.socket.state() == QLocalSocket.LocalSocketState.ConnectedState

    def request(
        self,
        method: str,
        params: dict | None = None,
        on_result: ResultCallback | None = None,
        on_error: ErrorCallback | None = None,
        timeout_ms: int = 10_000,
    ) -> None:
        request_id = next(self._ids)
        timer = QTimer(self)
        timer.setSingleShot(True)
        timer.timeout.connect(lambda: self._expire(request_id))
        self._pending[request_id] = _PendingRequest(method, on_result, on_error, timer)
        timer.start(timeout_ms)
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}})

    def notify(self, method: str, params: dict | None = None) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params or {}})

    def close(self) -> None:
        if not self._closed:
            self.socket.flush()
            self.socket.disconnectFromServer()

    def _send(self, message: dict) -> None:
        if not self._closed:
            # No flush(): Qt writes the buffer as soon as control is back in the event loop,
            # which is at once, and one call less per message is a fifth of the hub's cost.
            self.socket.write(encode_frame(message))

    def _on_ready_read(self) -> None:
        data = self.socket.readAll().data()
        try:
            incoming = self._decoder.feed(data)
        except FrameError as exc:
            log.warning("Dropping a peer that sent a malformed frame: %s", exc)
            self._send({"jsonrpc": "2.0", "id": None,
                        "error": {"code": RpcError.PARSE_ERROR, "message": str(exc)}})
            self.socket.flush()  # abort() drops whatever is still buffered
            self.socket.abort()
            self._on_disconnected()
            return
        for message in incoming:
            self._dispatch(message)

    def _dispatch(self, message: dict) -> None:
        if "method" in message:
            self._handle_call(message)
        elif "id" in message and ("result" in message or "error" in message):
            self._handle_answer(message)
        else:
            self._answer_error(message.get("id"), RpcError(RpcError.INVALID_REQUEST,
                                                           "Neither a request nor an answer."))

    def _handle_call(self, message: dict) -> None:
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params", {})
        is_request = "id" in message
        if not isinstance(method, str) or not isinstance(params, dict):
            if is_request:
                self._answer_error(request_id, RpcError(RpcError.INVALID_REQUEST,
                                                        "method must be a string, params an object."))
            return
        handler = self._handlers.get(method)
        if handler is None:
            handler = getattr(self.handler, messages.handler_name(method), None)
            if handler is not None:
                self._handlers[method] = handler
        if handler is None:
            if is_request:
                self._answer_error(request_id, RpcError(RpcError.METHOD_NOT_FOUND,
                                                        f"Unknown method {method!r}."))
            return
        try:
            result = handler(params, self)
        except RpcError as exc:
            if is_request:
                self._answer_error(request_id, exc)
            return
        except Exception as exc:  # a handler bug must not kill the process or the link
            log.exception("Handler for %s failed", method)
            if is_request:
                self._answer_error(request_id, RpcError(RpcError.INTERNAL_ERROR,
                                                        f"{type(exc).__name__}: {exc}"))
            return
        if not is_request:
            return
        if isinstance(result, DeferredAnswer):
            result._bind(lambda answer: self._send({"jsonrpc": "2.0", "id": request_id, **answer}))
        else:
            self._send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def _answer_error(self, request_id: Any, error: RpcError) -> None:
        self._send({"jsonrpc": "2.0", "id": request_id, "error": error.to_json()})

    def _handle_answer(self, message: dict) -> None:
        pending = self._pending.pop(message.get("id"), None)
        if pending is None:
            return  # answer to a request that already timed out
        pending.timer.stop()
        pending.timer.deleteLater()
        if "error" in message:
            error = message.get("error") or {}
            if pending.on_error:
                pending.on_error(RpcError(error.get("code", RpcError.INTERNAL_ERROR),
                                          error.get("message", "unknown error"), error.get("data")))
        elif pending.on_result:
            pending.on_result(message.get("result"))

    def _expire(self, request_id: int) -> None:
        pending = self._pending.pop(request_id, None)
        if pending and pending.on_error:
            pending.on_error(RpcError(RpcError.TIMEOUT, f"No answer to {pending.method} in time."))

    def _on_socket_error(self, error: QLocalSocket.LocalSocketError) -> None:
        if error == QLocalSocket.LocalSocketError.PeerClosedError:
            return  # disconnected() follows
        log.debug("Local socket error: %s", self.socket.errorString())

    def _on_disconnected(self) -> None:
        if self._closed:
            return
        self._closed = True
        for request_id in list(self._pending):
            pending = self._pending.pop(request_id)
            pending.timer.stop()
            if pending.on_error:
                pending.on_error(RpcError(RpcError.TIMEOUT, f"The peer went away before answering {pending.method}."))
        self.sig_disconnected.emit()

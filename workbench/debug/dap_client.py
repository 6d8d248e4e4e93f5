"""A Debug Adapter Protocol client over any connected byte stream.

The stream is socket-like and already connected: it has ``sendall(data: bytes)``,
``recv(size: int) -> bytes`` (``b""`` once the other end has closed) and ``close()``, and
may have ``shutdown(how)`` (called before ``close`` to wake the reader thread, as a socket
needs). A TCP
socket to an adapter is one; ``streams.PipeStream`` makes an adapter's stdin/stdout another; a
tunnel through the device link can be a third. The client knows nothing else of the transport.

    client = DapClient(stream, name="debugpy")
    client.on_event("stopped", lambda body: ...)      # called on the client's reader thread
    client.on_closed(lambda reason: ...)              # once, when the stream ends or breaks
    client.start()                                    # starts the reader thread
    body = client.request("initialize", {...}, timeout=10)   # blocks; DebugError on failure
    future = client.send_request("continue", {"threadId": 1}) # does not block
    client.close()

- ``request`` blocks until the response and returns its ``body`` (``{}`` when it has none); a
  response with ``success: false``, a time-out or a closed stream raise ``DebugError`` whose
  ``command`` names the request. It must not be called from the reader thread (that is, from
  an event handler): it would wait for itself; use ``send_request`` there.
- ``send_request`` returns a ``concurrent.futures.Future`` of the body (failing the same ways).
- ``on_event(name, handler)`` registers ``handler(body)`` for an event (``"*"``: every event,
  as ``handler(name, body)``). Handlers run on the reader thread, in the order the adapter
  sent the events; an exception in one is logged and the others still run.
- ``on_request(command, handler)`` answers the adapter's reverse requests (``runInTerminal``,
  ``startDebugging``): ``handler(arguments) -> body``, raising ``DebugError`` to refuse. One
  with no handler is refused.
- ``on_closed(handler)``: ``handler(reason)`` once the stream has ended (reason ``""``) or
  broken (the error's text); every request still waiting fails.
- Every message sent and received can be watched with ``trace`` (``trace(direction, message)``,
  direction ``"->"`` or ``"<-"``), for logs and tests.
"""

from __future__ import annotations

import itertools
import logging
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable, Protocol

from workbench.debug.errors import DebugError
from workbench.debug.framing import FramingError, MessageReader, encode

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 30.0
RECV_SIZE = 65536


class ByteStream(Protocol):
    """What the client needs of a connected transport."""

    def sendall(self, data: bytes) -> Any: ...

    def recv(self, size: int) -> bytes: ...

    def close(self) -> Any: ...


class DapClient:
    """Requests with sequence numbers, responses matched to them, events dispatched."""

    def __init__(self, stream: ByteStream, name: str = "debug adapter"):
        self.stream = stream
        self.name = name
        self.trace: Callable[[str, dict], None] | None = None
        self._seq = itertools.count(1)
        self._send_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._pending: dict[int, tuple[str, Future]] = {}
        self._event_handlers: dict[str, list[Callable]] = {}
        self._request_handlers: dict[str, Callable[[dict], dict]] = {}
        self._closed_handlers: list[Callable[[str], None]] = []
        self._closed_reason: str | None = None
        self._reader: threading.Thread | None = None

    # --- registration ---------------------------------------------------------------------------

    def on_event(self, event: str, handler: Callable) -> None:
        """Call ``handler(body)`` on each ``event`` (``"*"``: ``handler(event, body)`` on all)."""
        self._event_handlers.setdefault(event, []).append(handler)

    def on_request(self, command: str, handler: Callable[[dict], dict]) -> None:
        """Answer the adapter's reverse request ``command`` with ``handler(arguments)``."""
        self._request_handlers[command] = handler

    def on_closed(self, handler: Callable[[str], None]) -> None:
        """Call ``handler(reason)`` once the stream has ended (at once if it already has)."""
        with self._state_lock:
            reason = self._closed_reason
            if reason is None:
                self._closed_handlers.append(handler)
                return
        handler(reason)

    # --- life -----------------------------------------------------------------------------------

    def start(self) -> None:
        """Start reading the stream on a thread of the client's own."""
        if self._reader is None:
            self._reader = threading.Thread(target=self._read_loop, name=f"dap-reader-{self.name}", daemon=True)
            self._reader.start()

    @property
    def closed(self) -> bool:
        return self._closed_reason is not None

    @property
    def closed_reason(self) -> str | None:
        """None while open; ``""`` when the stream ended, else what broke it."""
        return self._closed_reason

    def close(self) -> None:
        """Close the stream; waiting requests fail and the closed handlers run."""
        shutdown = getattr(self.stream, "shutdown", None)
        if shutdown is not None:
            # A socket's close alone does not wake a recv blocked on it; a shutdown does.
            try:
                shutdown(2)  # socket.SHUT_RDWR
            except OSError:
                pass
        try:
            self.stream.close()
        except OSError:
            pass
        self._finish("")
        reader = self._reader
        if reader is not None and reader is not threading.current_thread():
            reader.join(timeout=5)

    # --- requests -------------------------------------------------------------------------------

    def send_request(self, command: str, arguments: dict | None = None) -> Future:
        """Send a request; the future gets the response's body, or a DebugError."""
        future: Future = Future()
        with self._state_lock:
            if self._closed_reason is not None:
                future.set_exception(self._closed_error(command))
                return future
            seq = next(self._seq)
            self._pending[seq] = (command, future)
        message = {"seq": seq, "type": "request", "command": command}
        if arguments is not None:
            message["arguments"] = arguments
        try:
            self._send(message)
        except OSError as exc:
            with self._state_lock:
                self._pending.pop(seq, None)
            future.set_exception(DebugError(f"Could not send {command!r} to the {self.name}: {exc}", command))
        return future

    def request(self, command: str, arguments: dict | None = None, timeout: float = DEFAULT_TIMEOUT_S) -> dict:
        """Send a request and wait for its response's body; DebugError when it fails."""
        if threading.current_thread() is self._reader:
            raise RuntimeError(f"request({command!r}) from the reader thread would wait for itself; "
                               "use send_request in event handlers")
        future = self.send_request(command, arguments)
        try:
            return future.result(timeout)
        except FutureTimeout:
            raise DebugError(f"The {self.name} did not answer {command!r} within {timeout:g} s.", command) from None

    def _send(self, message: dict) -> None:
        if self.trace is not None:
            self.trace("->", message)
        data = encode(message)
        with self._send_lock:
            self.stream.sendall(data)

    # --- reading --------------------------------------------------------------------------------

    def _read_loop(self) -> None:
        reader = MessageReader()
        reason = ""
        try:
            while True:
                data = self.stream.recv(RECV_SIZE)
                if not data:
                    break
                for message in reader.feed(data):
                    self._dispatch(message)
        except FramingError as exc:
            reason = f"the {self.name} sent something that is not DAP ({exc})"
        except OSError as exc:
            if self._closed_reason is None:
                reason = str(exc) or type(exc).__name__
        try:
            self.stream.close()
        except OSError:
            pass
        self._finish(reason)

    def _dispatch(self, message: dict) -> None:
        if self.trace is not None:
            self.trace("<-", message)
        kind = message.get("type")
        if kind == "response":
            self._on_response(message)
        elif kind == "event":
            self._on_event(str(message.get("event", "")), message.get("body") or {})
        elif kind == "request":
            self._on_reverse_request(message)

    def _on_response(self, message: dict) -> None:
        with self._state_lock:
            entry = self._pending.pop(message.get("request_seq"), None)
        if entry is None:
            return  # an answer to a request nobody waits for any more
        command, future = entry
        if message.get("success"):
            future.set_result(message.get("body") or {})
            return
        body = message.get("body") or {}
        error = body.get("error") if isinstance(body, dict) else None
        text = ""
        if isinstance(error, dict):
            text = _format_error(error)
        text = text or str(message.get("message") or "failed")
        future.set_exception(DebugError(text, command))

    def _on_event(self, event: str, body: dict) -> None:
        for handler in list(self._event_handlers.get(event, ())):
            self._call(handler, body)
        for handler in list(self._event_handlers.get("*", ())):
            self._call(handler, event, body)

    def _on_reverse_request(self, message: dict) -> None:
        command = str(message.get("command", ""))
        handler = self._request_handlers.get(command)
        response: dict = {"type": "response", "request_seq": message.get("seq"), "command": command}
        try:
            if handler is None:
                raise DebugError(f"Workbench does not support the reverse request {command!r}.")
            response.update(success=True, body=handler(message.get("arguments") or {}) or {})
        except Exception as exc:
            response.update(success=False, message=str(exc))
        response["seq"] = next(self._seq)
        try:
            self._send(response)
        except OSError:
            pass  # the stream is going; the read loop will say so

    @staticmethod
    def _call(handler: Callable, *args) -> None:
        try:
            handler(*args)
        except Exception:
            log.exception("A DAP event handler failed")

    def _finish(self, reason: str) -> None:
        with self._state_lock:
            if self._closed_reason is not None:
                return
            self._closed_reason = reason
            pending, self._pending = self._pending, {}
            handlers, self._closed_handlers = self._closed_handlers, []
        for command, future in pending.values():
            future.set_exception(self._closed_error(command))
        for handler in handlers:
            self._call(handler, reason)

    def _closed_error(self, command: str) -> DebugError:
        why = f": {self._closed_reason}" if self._closed_reason else ""
        return DebugError(f"The connection to the {self.name} is closed{why}.", command)


def _format_error(error: dict) -> str:
    """A DAP ``Message`` with its ``{name}`` variables filled in."""
    text = str(error.get("format", ""))
    variables = error.get("variables")
    if isinstance(variables, dict):
        for name, value in variables.items():
            text = text.replace("{" + str(name) + "}", str(value))
    return text

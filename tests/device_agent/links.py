"""Links the tests drive by hand: a pairing sent frame by frame (so its frames can be recorded
and replayed), a TLS connection over a plain socket the test holds (so it can also write bytes
that are no TLS under it), and a relay that terminates TLS with a certificate of its own."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from typing import Callable, Dict, List, Optional, Tuple

import pytest

from workbench_device.pake import PairingExchange
from workbench_device.protocol import (
    PREFIX_SIZE,
    ConnectionClosed,
    Msg,
    decode_frame,
    frame_bytes,
    parse_prefix,
)
from workbench_device.tls import Identity, client_context, fingerprint, server_context

from .conftest import HOST_ID, read_raw_frame

TIMEOUT_S = 10.0


def connect_from(port: int, source: Optional[str] = None) -> socket.socket:
    """A TCP connection to the agent on 127.0.0.1:``port`` from ``source`` (another loopback
    address: on Linux all of 127/8 is this machine); skips where the system cannot."""
    try:
        return socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S,
                                        source_address=(source, 0) if source else None)
    except OSError as exc:
        if source is None:
            raise
        pytest.skip(f"cannot connect from {source} here: {exc}")


def read_until_closed(sock: socket.socket, timeout: float = TIMEOUT_S) -> bytes:
    """Everything the agent still sends on the bare ``sock`` until it closes it (an alert,
    an error frame); AssertionError when it is still open after ``timeout`` seconds."""
    sock.settimeout(timeout)
    received = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return received
            received += chunk
    except ConnectionResetError:
        return received
    except socket.timeout:
        raise AssertionError(f"the agent kept the connection open ({len(received)} bytes "
                             "came)") from None


class HandPairing:
    """A connection without a client certificate that pairs the way ``DeviceClient.pair``
    does, one frame at a time; ``sent`` keeps every header it sent."""

    def __init__(self, port: int, identity: Identity, source: Optional[str] = None,
                 host_id: str = HOST_ID):
        self.sock = client_context(None).wrap_socket(connect_from(port, source))
        self.agent_fingerprint = fingerprint(self.sock.getpeercert(binary_form=True))
        self.identity = identity
        self.host_id = host_id
        self.sent: List[Dict] = []
        self.exchange: Optional[PairingExchange] = None
        self._next_id = 1

    def request(self, header: Dict) -> Dict:
        """Send ``header`` (given an id unless it has one) and return the reply's header."""
        header = dict(header)
        header.setdefault("id", self._next_id)
        self._next_id += 1
        self.sent.append(header)
        self.sock.sendall(frame_bytes(header))
        frame = read_raw_frame(self.sock)
        assert frame is not None, f"the agent closed the connection after {header['type']}"
        return frame[0]

    def begin(self, code: str) -> Dict:
        """Send pair.begin for ``code``; when the agent answers, the exchange is finished with
        its message and the fingerprint this connection got."""
        self.exchange = PairingExchange("host", code)
        reply = self.request({"type": Msg.PAIR_BEGIN, "host_id": self.host_id,
                              "host_name": "hand", "cert": self.identity.cert_der.hex(),
                              "pake": self.exchange.message.hex()})
        if reply["type"] == "pair.begin.ok":
            self.exchange.finish(bytes.fromhex(reply["pake"]), self.host_id,
                                 self.agent_fingerprint, self.identity.fingerprint)
        return reply

    def confirmation(self) -> str:
        assert self.exchange is not None, "begin first"
        return self.exchange.confirmation()

    def finish(self) -> Dict:
        return self.request({"type": Msg.PAIR_FINISH, "confirm": self.confirmation()})

    def pair(self, code: str) -> Dict:
        """begin then finish; the reply to the one that failed, else pair.finish.ok."""
        reply = self.begin(code)
        return reply if reply["type"] == "error" else self.finish()

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "HandPairing":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class HandTLS:
    """A TLS client (``ssl.SSLObject`` over memory buffers) on a plain socket the test holds:
    frames go through TLS, ``send_plain`` writes bytes under it."""

    def __init__(self, port: int, identity: Optional[Identity] = None):
        self.sock = connect_from(port)
        self._incoming, self._outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = client_context(identity).wrap_bio(self._incoming, self._outgoing)
        self._call(self.tls.do_handshake)
        self._buffer = b""

    def _flush(self) -> None:
        data = self._outgoing.read()
        if data:
            self.sock.sendall(data)

    def _fill(self) -> None:
        data = self.sock.recv(65536)
        if data:
            self._incoming.write(data)
        else:
            self._incoming.write_eof()

    def _call(self, operation: Callable, *args):
        while True:
            try:
                result = operation(*args)
            except ssl.SSLWantReadError:
                self._flush()
                self._fill()
                continue
            self._flush()
            return result

    def send_frame(self, header: Dict, payload: bytes = b"") -> None:
        self._call(self.tls.write, frame_bytes(header, payload))

    def read_frame(self) -> Tuple[Dict, bytes]:
        while True:
            if len(self._buffer) >= PREFIX_SIZE:
                header_len, payload_len = parse_prefix(self._buffer[:PREFIX_SIZE])
                if len(self._buffer) >= PREFIX_SIZE + header_len + payload_len:
                    frame, used = decode_frame(self._buffer)
                    self._buffer = self._buffer[used:]
                    return frame.header, bytes(frame.payload)
            data = self._call(self.tls.read, 65536)
            if not data:
                raise ConnectionClosed("the agent closed the connection")
            self._buffer += data

    def request(self, header: Dict) -> Dict:
        self.send_frame(header)
        return self.read_frame()[0]

    def decrypt(self, received: bytes) -> bytes:
        """The application data in ``received`` (the rest of the stream, up to its end), as far
        as it decrypts: an alert or a broken record ends it."""
        self._incoming.write(received)
        self._incoming.write_eof()
        data = self._buffer
        try:
            while True:
                chunk = self.tls.read(65536)
                if not chunk:
                    return data
                data += chunk
        except ssl.SSLError:
            return data

    def send_plain(self, data: bytes) -> None:
        """Write ``data`` on the TCP stream as it is, past TLS."""
        self.sock.sendall(data)

    def close(self) -> None:
        self.sock.close()


class TLSRelay:
    """A relay on 127.0.0.1 that terminates TLS toward the host with its own ``identity`` and
    opens its own TLS connection to the agent (offering no certificate). It passes each request
    on and the agent's reply back, through ``rewrite(reply_header)`` first."""

    def __init__(self, agent_port: int, identity: Identity,
                 rewrite: Callable[[Dict], Dict] = lambda header: header):
        self.agent_port = agent_port
        self.identity = identity
        self.rewrite = rewrite
        self.context = server_context(identity, [])
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.relayed: List[str] = []  # the type of every request passed on
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                host_sock, _ = self.listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._serve, args=(host_sock,), daemon=True).start()

    def _serve(self, host_sock: socket.socket) -> None:
        try:
            host_sock.settimeout(TIMEOUT_S)
            with self.context.wrap_socket(host_sock, server_side=True) as host_tls, \
                    client_context(None).wrap_socket(connect_from(self.agent_port)) as agent_tls:
                while True:
                    request = read_raw_frame(host_tls)
                    if request is None:
                        return
                    self.relayed.append(request[0].get("type"))
                    agent_tls.sendall(frame_bytes(*request))
                    reply = read_raw_frame(agent_tls)
                    if reply is None:
                        return
                    host_tls.sendall(frame_bytes(self.rewrite(reply[0]), reply[1]))
        except (OSError, EOFError):
            pass  # one end closed its connection

    def close(self) -> None:
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes accept() (Linux)
        except OSError:
            pass
        self.listener.close()
        self._thread.join(timeout=5)


def wait_until(condition: Callable[[], bool], timeout: float = TIMEOUT_S) -> bool:
    """Poll ``condition`` until it holds (True) or ``timeout`` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True

"""The local inference endpoint (protocol version 4): the device's own apps run deployed slots.

It listens on loopback only (127.0.0.1, and ::1 where the system has it), on a port of its own
(``--inference-port``, 7301 by default, 0 for none), and speaks the debug link's frames without
TLS and without pairing: only ``slot.run`` and ``slot.list``, nothing that changes the device.
Whoever can connect to a loopback port is already running on the device, so a pairing would
keep out nobody it should; and without TLS a request costs a frame, not a handshake and a record
per frame. Loopback binding is the rule, and every accepted connection's peer address is checked
again (a listener bound wider by mistake, a forwarded port): a peer that is not this device gets
one ``not_authenticated`` error and is closed.

One thread per connection; bytes that are no frame get one ``bad_frame`` error and close that
connection only.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
from typing import Any, List, Optional, Set, Tuple

from workbench_device.protocol import (
    VERSION,
    ConnectionClosed,
    Err,
    FrameError,
    Msg,
    ProtocolError,
    error_header,
    ok,
    pack_tensors,
    unpack_tensors,
)
from workbench_device.slots import SlotRegistry
from workbench_device.wire import FrameSocket, tune

log = logging.getLogger(__name__)

MAX_LOCAL_CONNECTIONS = 64
LOOPBACK_HOSTS = ("127.0.0.1", "::1")


class EndpointError(Exception):
    """The endpoint cannot listen; the message says why and what to do."""


def is_loopback_peer(host: str) -> bool:
    """Whether a connection from ``host`` (an accepted socket's peer address) comes from this
    device: 127.0.0.0/8, ::1, or an IPv4-mapped IPv6 loopback address."""
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    if mapped is not None:
        address = mapped
    return address.is_loopback


class InferenceEndpoint:
    """Serves ``slots`` to loopback connections on ``port`` (0: a free one) from ``start()``
    until ``stop()``."""

    def __init__(self, slots: SlotRegistry, port: int, max_payload: int,
                 frame_timeout_s: float, hosts: Tuple[str, ...] = LOOPBACK_HOSTS):
        self.slots = slots
        self.port = port
        self.max_payload = max_payload
        self.frame_timeout_s = frame_timeout_s
        self.hosts = hosts
        self.addresses: List[Tuple[str, int]] = []
        self._listeners: List[socket.socket] = []
        self._threads: List[threading.Thread] = []
        self._connections: Set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopped = threading.Event()

    def start(self) -> "InferenceEndpoint":
        port = self.port
        for host in self.hosts:
            try:
                listener = _listen(host, port)
            except OSError as exc:
                if host != self.hosts[0]:  # no IPv6 loopback here: IPv4 serves the apps
                    log.debug("the inference endpoint does not listen on %s (%s)", host, exc)
                    continue
                self.stop()
                raise EndpointError(f"the inference endpoint cannot listen on {host}:{port}: "
                                    f"{exc.strerror or exc}; choose another --inference-port "
                                    "(0 turns it off)") from None
            port = listener.getsockname()[1]
            self._listeners.append(listener)
            self.addresses.append((host, port))
        self.port = port
        for listener in self._listeners:
            thread = threading.Thread(target=self._accept_loop, args=(listener,),
                                      name="wb-inference-accept", daemon=True)
            thread.start()
            self._threads.append(thread)
        log.info("inference endpoint for this device's apps on %s",
                 ", ".join(f"{h}:{p}" for h, p in self.addresses))
        return self

    def stop(self) -> None:
        self._stopped.set()
        for listener in self._listeners:
            try:
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            listener.close()
        with self._lock:
            connections = list(self._connections)
        for sock in connections:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in self._threads:
            thread.join(timeout=2.0)

    def _accept_loop(self, listener: socket.socket) -> None:
        while not self._stopped.is_set():
            try:
                sock, address = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                if self._stopped.is_set():
                    return
                log.exception("accepting an inference connection failed")
                continue
            sock.settimeout(None)
            tune(sock)
            with self._lock:
                full = len(self._connections) >= MAX_LOCAL_CONNECTIONS
                if not full:
                    self._connections.add(sock)
            if full:
                _refuse(sock, Err.BUSY, f"the inference endpoint serves "
                                        f"{MAX_LOCAL_CONNECTIONS} connections already; close one")
                continue
            threading.Thread(target=self._serve, args=(sock, address[0], address[1]),
                             name=f"wb-inference-{address[1]}", daemon=True).start()

    def _serve(self, sock: socket.socket, host: str, port: int) -> None:
        try:
            if not is_loopback_peer(host):
                log.warning("refused an inference connection from %s: not this device", host)
                _refuse(sock, Err.NOT_AUTHENTICATED,
                        f"the inference endpoint serves apps on this device only (loopback); "
                        f"{host} is another machine: use the paired debug link (slot.run) "
                        "from there")
                return
            fs = FrameSocket(sock, max_payload=self.max_payload)
            fs.version = VERSION
            while not self._stopped.is_set() and self._serve_one(fs, sock, f"{host}:{port}"):
                pass
        except Exception:  # a bug here must end this connection only
            log.exception("inference connection from %s:%s failed", host, port)
        finally:
            with self._lock:
                self._connections.discard(sock)
            try:
                sock.close()
            except OSError:
                pass

    def _serve_one(self, fs: FrameSocket, sock: socket.socket, peer: str) -> bool:
        """Read and answer one frame; False when the connection is over."""
        try:
            sock.settimeout(None)  # an app may keep its connection open between requests
            head = fs.recv_head(on_first_byte=lambda: sock.settimeout(self.frame_timeout_s))
        except FrameError as exc:
            log.warning("inference connection %s sent a bad frame: %s; closing it", peer,
                        exc.message)
            _send_quietly(fs, error_header(exc.code, exc.message, None))
            return False
        except (ConnectionClosed, OSError):
            return False
        if head is None:
            return False
        header, payload_len = head
        request_id = header.get("id")
        payload_read = False
        try:
            if request_id is not None and (not isinstance(request_id, int)
                                           or isinstance(request_id, bool)):
                request_id = None
                raise ProtocolError(Err.BAD_REQUEST, "'id' must be an integer")
            kind = header.get("type")
            if kind not in Msg.LOCAL_INFERENCE:
                raise ProtocolError(Err.UNKNOWN_TYPE, f"the inference endpoint serves "
                                    f"{' and '.join(Msg.LOCAL_INFERENCE)} only, not {kind!r}; "
                                    "deploy models through the paired debug link")
            if kind == Msg.SLOT_LIST:
                reply, buffers = {"slots": self.slots.list()}, []
            else:
                data = fs.recv_payload(payload_len)
                payload_read = True
                feeds = unpack_tensors(header.get("tensors", []), data)
                outputs, sha256, run_ms = self.slots.run(header.get("slot"), feeds)
                packed = pack_tensors(outputs)
                if packed.nbytes > self.max_payload:
                    raise ProtocolError(Err.TOO_LARGE, f"the outputs are {packed.nbytes} bytes, "
                                        f"over the {self.max_payload}-byte payload limit")
                reply = {"slot": header.get("slot"), "model": sha256, "tensors": packed.descriptors,
                         "run_ms": round(run_ms, 4)}
                buffers = packed.buffers
        except ProtocolError as exc:
            try:
                if not payload_read:
                    fs.discard(payload_len)
            except (ConnectionClosed, OSError):
                return False
            return _send_quietly(fs, error_header(exc.code, exc.message, request_id, **exc.extra))
        except (ConnectionClosed, OSError):
            return False
        return _send_quietly(fs, {"type": ok(kind), "id": request_id, **reply}, buffers)


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        listener.bind((host, port))
        listener.listen(64)
        listener.settimeout(0.5)  # to notice stop() where closing does not wake accept
    except OSError:
        listener.close()
        raise
    return listener


def _send_quietly(fs: FrameSocket, header: dict, payload: Any = b"") -> bool:
    """Send a frame; False when the connection is gone."""
    try:
        fs.send(header, payload)
        return True
    except (OSError, ValueError, ProtocolError):
        return False


def _refuse(sock: socket.socket, code: str, message: str,
            timeout: Optional[float] = 2.0) -> None:
    """Send one error frame (id null) on a connection that is not served, and close it."""
    try:
        sock.settimeout(timeout)
        fs = FrameSocket(sock)
        fs.version = VERSION
        fs.send(error_header(code, message, None))
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    finally:
        sock.close()

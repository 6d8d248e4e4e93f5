"""A minimal host side of the device debug link, written from docs/device-protocol.md alone.

It deliberately shares no code with ``workbench_device``: when the document and an agent
disagree, these tests fail, whichever of the two is wrong. Frames travel inside TLS 1.3
(section 1); ``send_clear`` writes bytes past TLS, on the bare TCP stream.
"""

from __future__ import annotations

import hashlib
import json
import socket
import ssl
import struct
from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np

from .pairing import MESSAGE_BYTES, HostExchange, Identity, fingerprint

# Section 2: magic, version, flags, reserved, header_len (u32), payload_len (u64), big-endian.
PREFIX = struct.Struct(">4sBBHIQ")
MAGIC = b"WBDL"
# The version this suite's hosts speak unless a test says otherwise (a version-2 host, which a
# version-3 agent still serves), and every version the page has (section 13).
VERSION = 2
VERSION_3 = 3
SPOKEN = (2, 3)
# Section 13: the version of the clear-text frames of protocol 1.
CLEAR_TEXT_VERSION = 1
MAX_HEADER = 64 * 1024
# Section 8: every agent takes push.chunk payloads this large; hello.ok's max_chunk may say more.
BASE_CHUNK = 4 * 1024 * 1024
BEFORE_AUTH_PAYLOAD = 64 * 1024
ERROR_CODES = {"bad_frame", "too_large", "unknown_type", "not_authenticated", "pairing_locked",
               "bad_code", "not_found", "bad_request", "sandbox", "runtime", "busy", "internal",
               "unsupported_version", "script_exited"}
# Section 7: the dtypes a tensor may have, and their sizes.
ITEMSIZE = {"float16": 2, "float32": 4, "float64": 8, "int8": 1, "uint8": 1, "int16": 2,
            "uint16": 2, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "bool": 1}

Frame = Tuple[Dict[str, Any], bytes]


def prefix(header_len: int, payload_len: int, magic: bytes = MAGIC,
           version: int = VERSION) -> bytes:
    return PREFIX.pack(magic, version, 0, 0, header_len, payload_len)


def encode(header: Dict[str, Any], payload: bytes = b"", version: int = VERSION) -> bytes:
    """One whole frame."""
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    return prefix(len(head), len(payload), version=version) + head + bytes(payload)


def raw_frame(header_text: bytes, payload: bytes = b"") -> bytes:
    """A frame whose header is ``header_text`` exactly (JSON ``encode`` would not write)."""
    return prefix(len(header_text), len(payload)) + header_text + payload


def _no_constant(name: str) -> None:
    raise AssertionError(f"the agent sent {name}, which is not JSON (section 2)")


def _unique(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    keys = [key for key, _ in pairs]
    assert len(keys) == len(set(keys)), f"the agent sent a key twice in one object: {keys}"
    return dict(pairs)


def parse_header(data: bytes) -> Dict[str, Any]:
    """A header as section 2 allows it: UTF-8 JSON, an object, no NaN or Infinity, no key twice."""
    header = json.loads(data.decode("utf-8"), parse_constant=_no_constant,
                        object_pairs_hook=_unique)
    assert isinstance(header, dict), header
    return header


class AgentError(Exception):
    """The agent answered with an ``error`` frame."""

    def __init__(self, header: Dict[str, Any]):
        super().__init__(f"{header.get('code')}: {header.get('message')}")
        self.header = header
        self.code = header.get("code")


def tls_context(identity: Optional[Identity] = None,
                version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_3) -> ssl.SSLContext:
    """Section 1: a TLS client of ``version`` only, offering ``identity``'s certificate when
    given, and checking the agent's certificate by its pin rather than by any CA."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = context.maximum_version = version
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if identity is not None:
        context.load_cert_chain(str(identity.pem))
    return context


def tcp_connection(port: int, host: str = "127.0.0.1", timeout: float = 20.0,
                   source: Optional[str] = None) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=timeout,
                                    source_address=(source, 0) if source else None)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_clear_frame(sock: socket.socket) -> Optional[Frame]:
    """One clear-text frame of protocol 1 from ``sock`` (section 13), None when it closed first."""
    data = b""
    while len(data) < PREFIX.size or len(data) < PREFIX.size + PREFIX.unpack(
            data[:PREFIX.size])[4]:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
    magic, version, flags, reserved, header_len, payload_len = PREFIX.unpack(data[:PREFIX.size])
    assert (magic, version, flags, reserved, payload_len) == (MAGIC, CLEAR_TEXT_VERSION, 0, 0, 0), \
        data[:PREFIX.size]
    return parse_header(data[PREFIX.size:PREFIX.size + header_len]), b""


class Link:
    """One TLS connection to the agent (with ``identity``'s certificate, or none), frames in and
    out, nothing else. The handshake is done when it is made; ``pin`` (a fingerprint) is checked
    against the agent's certificate right after it, before any frame (section 1)."""

    def __init__(self, port: int, identity: Optional[Identity] = None, host: str = "127.0.0.1",
                 timeout: float = 20.0, source: Optional[str] = None,
                 pin: Optional[str] = None):
        raw = tcp_connection(port, host, timeout, source)
        try:
            self.sock = tls_context(identity).wrap_socket(raw)
        except BaseException:
            raw.close()
            raise
        self.identity = identity
        self.agent_certificate = self.sock.getpeercert(binary_form=True)
        self.agent_fingerprint = fingerprint(self.agent_certificate)
        assert self.sock.version() == "TLSv1.3", self.sock.version()
        if pin is not None:
            assert self.agent_fingerprint == pin, "the agent's certificate is not the pinned one"
        self.next_id = 1
        self.logs: List[Dict[str, Any]] = []
        # Events other than log lines (section 3), in the order they came.
        self.events: List[Dict[str, Any]] = []
        # The version byte this host sends (section 2: 2 until a hello.ok chose another), and
        # the one of the last frame read.
        self.version = VERSION
        self.read_version: Optional[int] = None

    # --- bytes ---

    def send_raw(self, data: bytes) -> None:
        """Bytes inside TLS."""
        self.sock.sendall(data)

    def send_clear(self, data: bytes) -> None:
        """Bytes on the bare TCP stream, past TLS."""
        socket.socket.sendall(self.sock, data)

    def _exact(self, n: int) -> Optional[bytes]:
        chunks, got = [], 0
        while got < n:
            chunk = self.sock.recv(min(n - got, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def read(self) -> Optional[Frame]:
        """The next frame, whatever it is; None when the agent closed the connection."""
        try:
            head = self._exact(PREFIX.size)
        except ConnectionResetError:
            return None
        if head is None:
            return None
        magic, version, flags, reserved, header_len, payload_len = PREFIX.unpack(head)
        assert magic == MAGIC and version in SPOKEN, head
        self.read_version = version
        assert flags == 0 and reserved == 0, head
        assert header_len <= MAX_HEADER
        header_bytes = self._exact(header_len)
        payload = self._exact(payload_len) if payload_len else b""
        assert header_bytes is not None and payload is not None, "the agent closed mid-frame"
        return parse_header(header_bytes), payload

    def closed_by_agent(self) -> bool:
        """True when the agent closed the connection (nothing but the end left to read)."""
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, ssl.SSLEOFError, ssl.SSLZeroReturnError):
            return True

    def refused_by_agent(self) -> ssl.SSLError:
        """The TLS alert the agent ends the connection with (the connection's first read), for
        a certificate it does not pin or bytes that break TLS."""
        try:
            data = self.sock.recv(1)
        except ssl.SSLError as alert:
            return alert
        raise AssertionError(f"the agent answered {data!r} instead of a TLS alert")

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    # --- requests ---

    def send(self, kind: str, payload: bytes = b"", **fields: Any) -> int:
        request_id = self.next_id
        self.next_id += 1
        header = {"type": kind, "id": request_id}
        header.update(fields)
        self.sock.sendall(encode(header, payload, self.version))
        return request_id

    def reply(self, request_id: Optional[int]) -> Frame:
        """The reply to ``request_id`` (log frames meanwhile are kept in ``logs``)."""
        while True:
            frame = self.read()
            assert frame is not None, f"the agent closed the connection, no reply to {request_id}"
            header, payload = frame
            if header.get("type") == "log":
                assert "id" not in header, header
                self.logs.append(header)
                continue
            if "id" not in header:  # an event (section 3)
                self.events.append(header)
                continue
            assert header.get("id") == request_id, (header, request_id)
            return header, payload

    def call(self, kind: str, payload: bytes = b"", **fields: Any) -> Frame:
        """Send a request; its reply, ``<kind>.ok`` (AgentError for an ``error``)."""
        header, reply_payload = self.reply(self.send(kind, payload, **fields))
        if header["type"] == "error":
            check_error(header)
            raise AgentError(header)
        assert header["type"] == kind + ".ok", header
        return header, reply_payload

    def ok(self, kind: str, payload: bytes = b"", **fields: Any) -> Dict[str, Any]:
        return self.call(kind, payload, **fields)[0]

    def send_and_reply(self, kind: str, payload: bytes = b"", **fields: Any) -> Dict[str, Any]:
        """Send a request; its reply's header, whatever it is."""
        header, _ = self.reply(self.send(kind, payload, **fields))
        if header["type"] == "error":
            check_error(header)
        return header

    def error(self, kind: str, payload: bytes = b"", **fields: Any) -> Dict[str, Any]:
        """Send a request that must fail; the error header."""
        header, _ = self.reply(self.send(kind, payload, **fields))
        assert header["type"] == "error", header
        check_error(header)
        return header

    # --- the handshake and pairing (sections 5 and 6) ---

    def hello(self, versions: Optional[List[int]] = None) -> Dict[str, Any]:
        """``hello`` offering ``versions`` (version 2 alone unless given); from its reply on,
        this host sends frames of the version chosen (section 2)."""
        versions = versions or [VERSION]
        reply = self.ok("hello", client="conformance-suite/3", versions=versions)
        assert reply["protocol"] == max(set(versions) & set(reply["versions"])), reply
        # Section 6: the agent names the certificate this connection got.
        assert reply["cert_fingerprint"] == self.agent_fingerprint, reply
        self.version = reply["protocol"]
        return reply

    def next_event(self) -> Dict[str, Any]:
        """The next event (not a log line), from those kept or from the connection."""
        while not self.events:
            frame = self.read()
            assert frame is not None, "the agent closed the connection before an event came"
            header, _ = frame
            assert "id" not in header, f"a reply no request waits for: {header}"
            (self.logs if header.get("type") == "log" else self.events).append(header)
        return self.events.pop(0)

    def begin_pairing(self, identity: Identity, host_id: str, code: str,
                      exchange: Optional[HostExchange] = None, cert: Optional[bytes] = None,
                      host_fingerprint: Optional[str] = None,
                      agent_fingerprint: Optional[str] = None) -> HostExchange:
        """``pair.begin`` for ``identity``'s certificate with ``code``; the exchange, finished
        with the agent's message and the fingerprints as this host sees them (or as given: what
        a host behind a relay, or one that claims another certificate, would compute).
        AgentError when the agent refuses."""
        exchange = exchange or HostExchange(code)
        cert = identity.cert_der if cert is None else cert
        reply = self.ok("pair.begin", host_id=host_id, host_name="conformance suite",
                        cert=cert.hex(), pake=exchange.message.hex())
        assert reply["cert_fingerprint"] == self.agent_fingerprint, \
            "pair.begin.ok names another certificate than this connection got (section 5)"
        agent_message = bytes.fromhex(reply["pake"])
        assert len(agent_message) == MESSAGE_BYTES and agent_message[:1] == b"B", reply["pake"]
        exchange.finish(agent_message, host_id,
                        agent_fingerprint or self.agent_fingerprint,
                        host_fingerprint or identity.fingerprint)
        return exchange

    def pair(self, identity: Identity, host_id: str, code: str) -> Dict[str, Any]:
        """Pair ``identity`` as section 5 says; ``pair.finish.ok``, whose confirmation is
        checked."""
        exchange = self.begin_pairing(identity, host_id, code)
        reply = self.ok("pair.finish", confirm=exchange.expected["host"])
        assert reply["confirm"] == exchange.expected["agent"], \
            "the agent's confirmation is not what section 5 gives"
        return reply

    def guess(self, identity: Identity, host_id: str, code: str) -> Dict[str, Any]:
        """Pair ``identity`` with ``code``; the reply to whichever request failed, or
        ``pair.finish.ok``."""
        try:
            exchange = self.begin_pairing(identity, host_id, code)
        except AgentError as refused:
            return refused.header
        return self.send_and_reply("pair.finish", confirm=exchange.expected["host"])


def check_error(header: Dict[str, Any]) -> None:
    assert header["code"] in ERROR_CODES, header
    assert isinstance(header["message"], str) and header["message"], header


# --- tensors (section 7) ---

def pack(tensors: Iterable[Tuple[str, np.ndarray]],
         start: int = 0) -> Tuple[List[Dict[str, Any]], bytes]:
    """Descriptors and payload: little-endian, C order, one after the other from ``start`` (the
    bytes before it are filler)."""
    descriptors, parts, offset = [], [b"\xee" * start], start
    for name, array in tensors:
        array = np.ascontiguousarray(array, dtype=np.asarray(array).dtype.newbyteorder("<"))
        data = array.tobytes(order="C")
        descriptors.append({"name": name, "dtype": array.dtype.name, "shape": list(array.shape),
                            "offset": offset, "nbytes": len(data)})
        parts.append(data)
        offset += len(data)
    return descriptors, b"".join(parts)


def unpack(descriptors: List[Dict[str, Any]], payload: bytes) -> Dict[str, np.ndarray]:
    arrays = {}
    for desc in descriptors:
        dtype = desc["dtype"]
        assert dtype in ITEMSIZE, desc
        count = int(np.prod(desc["shape"])) if desc["shape"] else 1
        assert desc["nbytes"] == count * ITEMSIZE[dtype], desc
        assert desc["offset"] + desc["nbytes"] <= len(payload), desc
        data = payload[desc["offset"]:desc["offset"] + desc["nbytes"]]
        arrays[desc["name"]] = np.frombuffer(data, dtype=np.dtype(dtype).newbyteorder("<")).reshape(
            desc["shape"])
    return arrays


# --- models (section 8) ---

def push(link: Link, data: bytes, chunk: int = 1024 * 1024, window: int = 4) -> Dict[str, Any]:
    """Push ``data`` (begin, pipelined chunks, end) and wait for the check; push.end's reply."""
    sha = hashlib.sha256(data).hexdigest()
    begin = link.ok("push.begin", sha256=sha, size=len(data), name="conformance.bin")
    if begin["present"]:
        return {"sha256": sha, "size": len(data), "verified": True, "present": True}
    pending: List[int] = []
    position = begin["offset"]
    while position < len(data):
        n = min(chunk, len(data) - position)
        pending.append(link.send("push.chunk", data[position:position + n], sha256=sha,
                                 offset=position))
        position += n
        while len(pending) >= window or (position >= len(data) and pending):
            header, _ = link.reply(pending.pop(0))
            assert header["type"] == "push.chunk.ok", header
    end = link.ok("push.end", sha256=sha)
    assert end["sha256"] == sha and end["size"] == len(data) and isinstance(end["verified"], bool)
    if not end["verified"]:
        assert link.ok("model.has", sha256=sha)["present"] is True
    return end

"""A minimal host side of the device debug link, written from docs/device-protocol.md alone.

It deliberately shares no code with ``workbench_device``: when the document and an agent
disagree, these tests fail, whichever of the two is wrong.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import socket
import struct
from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np

# Section 2: magic, version, flags, reserved, header_len (u32), payload_len (u64), big-endian.
PREFIX = struct.Struct(">4sBBHIQ")
MAGIC = b"WBDL"
VERSION = 1
MAX_HEADER = 64 * 1024
# Section 8: every agent takes push.chunk payloads this large; hello.ok's max_chunk may say more.
BASE_CHUNK = 4 * 1024 * 1024
BEFORE_AUTH_PAYLOAD = 64 * 1024
ERROR_CODES = {"bad_frame", "too_large", "unknown_type", "not_authenticated", "pairing_locked",
               "bad_code", "auth_failed", "not_found", "bad_request", "sandbox", "runtime", "busy",
               "internal", "unsupported_version"}
# Section 7: the dtypes a tensor may have, and their sizes.
ITEMSIZE = {"float16": 2, "float32": 4, "float64": 8, "int8": 1, "uint8": 1, "int16": 2,
            "uint16": 2, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "bool": 1}

Frame = Tuple[Dict[str, Any], bytes]


def prefix(header_len: int, payload_len: int, magic: bytes = MAGIC,
           version: int = VERSION) -> bytes:
    return PREFIX.pack(magic, version, 0, 0, header_len, payload_len)


def encode(header: Dict[str, Any], payload: bytes = b"") -> bytes:
    """One whole frame."""
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    return prefix(len(head), len(payload)) + head + bytes(payload)


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


class Link:
    """One TCP connection to the agent, frames in and out, nothing else."""

    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 20.0,
                 source: Optional[str] = None):
        self.sock = socket.create_connection((host, port), timeout=timeout,
                                             source_address=(source, 0) if source else None)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.next_id = 1
        self.logs: List[Dict[str, Any]] = []
        self.nonce: Optional[str] = None

    # --- bytes ---

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

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
        assert magic == MAGIC and version == VERSION, head
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
        except ConnectionResetError:
            return True

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
        self.sock.sendall(encode(header, payload))
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

    # --- the handshake (section 5) ---

    def hello(self, host_id: Optional[str] = None) -> Dict[str, Any]:
        fields: Dict[str, Any] = {"client": "conformance-suite/1", "protocol": VERSION}
        if host_id is not None:
            fields["host_id"] = host_id
        reply = self.ok("hello", **fields)
        self.nonce = reply["nonce"]
        return reply

    def authenticate(self, host_id: str, secret: str) -> Dict[str, Any]:
        host_nonce = secrets.token_hex(32)
        reply = self.ok("auth", host_id=host_id, host_nonce=host_nonce,
                        proof=proof(secret, self.nonce, host_nonce))
        assert hmac.compare_digest(reply["proof_agent"], proof(secret, host_nonce, self.nonce))
        return reply


def check_error(header: Dict[str, Any]) -> None:
    assert header["code"] in ERROR_CODES, header
    assert isinstance(header["message"], str) and header["message"], header


def proof(secret_hex: str, first_hex: str, second_hex: str) -> str:
    """hex(HMAC-SHA256(bytes(secret), bytes(first) + bytes(second)))."""
    return hmac.new(bytes.fromhex(secret_hex), bytes.fromhex(first_hex) + bytes.fromhex(second_hex),
                    hashlib.sha256).hexdigest()


def is_hex(value: Any, length: Optional[int] = None) -> bool:
    if not isinstance(value, str) or (length is not None and len(value) != length):
        return False
    try:
        bytes.fromhex(value)
    except ValueError:
        return False
    return True


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

"""The debug link's wire protocol, versions 2 to 4: frames, message names, error codes, tensors.

This module is the one definition of the protocol; the agent, ``client.py`` and the host side of
Workbench import it. It does no I/O (``wire.py`` moves frames over sockets), so a parser bug can
be fuzzed here without a socket.

A frame is a fixed 20-byte prefix, a UTF-8 JSON object (the header), then raw bytes (the
payload)::

    magic b"WBDL" | version u8 | flags u8 | reserved u16 | header_len u32 | payload_len u64

all big-endian. The header's ``type`` names the message and ``id`` pairs a reply with its
request; the payload carries tensors and files without any encoding.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

MAGIC = b"WBDL"
# The highest protocol version this end speaks (what the agent announces).
VERSION = 4
# Every protocol version this end speaks; hello picks the highest one both ends speak. Version 1
# was clear text: an agent of this version answers its frames with "update Workbench" only.
# Version 3 adds debugging a script on the device (debug.start, debug.stop, and debug.tunnel,
# which turns its connection into a raw byte stream). Version 4 adds deployment slots (slot.deploy,
# slot.list, slot.run, slot.remove), also served to the device's own apps on a loopback port.
SUPPORTED_VERSIONS = (2, 3, 4)
# The version byte of a connection's frames until a hello chose another: every agent that speaks
# TLS speaks it.
FIRST_VERSION = 2
CLEAR_TEXT_VERSION = 1
PREFIX = struct.Struct(">4sBBHIQ")
PREFIX_SIZE = PREFIX.size  # 20

MAX_HEADER = 64 * 1024
MAX_PAYLOAD = 1 << 30
# What the agent accepts unless told otherwise: one push.chunk, and one run's tensors or file.
# The chunk limit is announced in hello.ok (max_chunk): measured on loopback with a 50 MB model,
# 16 MiB chunks took a third less of the agent's CPU than 4 MiB ones (fewer requests, replies
# and wake-ups), which is what bounds a push there.
MAX_CHUNK = 16 * 1024 * 1024
# The chunk every agent takes: what a host sends to an agent whose hello.ok names no max_chunk.
BASE_CHUNK = 4 * 1024 * 1024
DEFAULT_MAX_RUN_PAYLOAD = 256 * 1024 * 1024

DEFAULT_PORT = 7300
# The local inference endpoint (version 4): loopback only, no TLS, no pairing; 0 turns it off.
DEFAULT_INFERENCE_PORT = 7301
SERVICE_TYPE = "_workbench-device._tcp.local."


class Msg:
    """Every message name, in one place. A reply is ``ok(<request name>)`` or ``ERROR``."""

    HELLO = "hello"
    PAIR_BEGIN = "pair.begin"
    PAIR_FINISH = "pair.finish"
    INFO = "info"
    SESSION_OPEN = "session.open"
    MODEL_HAS = "model.has"
    PUSH_BEGIN = "push.begin"
    PUSH_CHUNK = "push.chunk"
    PUSH_END = "push.end"
    MODEL_LOAD = "model.load"
    MODEL_RUN = "model.run"
    MODEL_BENCH = "model.bench"
    FILE_PUT = "file.put"
    FILE_GET = "file.get"
    SCRIPT_RUN = "script.run"
    LOGS_SUBSCRIBE = "logs.subscribe"
    DEBUG_START = "debug.start"
    DEBUG_STOP = "debug.stop"
    DEBUG_TUNNEL = "debug.tunnel"
    SLOT_DEPLOY = "slot.deploy"
    SLOT_LIST = "slot.list"
    SLOT_RUN = "slot.run"
    SLOT_REMOVE = "slot.remove"
    CLOSE = "close"
    # Agent to host only.
    ERROR = "error"
    LOG = "log"
    # Events (no id): a script's output as it runs, and the end of a script being debugged.
    SCRIPT_OUTPUT = "script.output"
    DEBUG_EXITED = "debug.exited"

    REQUESTS = (HELLO, PAIR_BEGIN, PAIR_FINISH, INFO, SESSION_OPEN, MODEL_HAS, PUSH_BEGIN, PUSH_CHUNK, PUSH_END,
                MODEL_LOAD, MODEL_RUN, MODEL_BENCH, FILE_PUT, FILE_GET, SCRIPT_RUN, LOGS_SUBSCRIBE,
                DEBUG_START, DEBUG_STOP, DEBUG_TUNNEL, SLOT_DEPLOY, SLOT_LIST, SLOT_RUN, SLOT_REMOVE,
                CLOSE)
    # What a connection without a pinned certificate may send: it can only pair.
    BEFORE_AUTH = (HELLO, PAIR_BEGIN, PAIR_FINISH, CLOSE)
    # The protocol version a connection must have chosen (in hello) for these: on an older one
    # they are unknown types, as they are to an agent of that version.
    SINCE = {DEBUG_START: 3, DEBUG_STOP: 3, DEBUG_TUNNEL: 3, SLOT_DEPLOY: 4, SLOT_LIST: 4,
             SLOT_RUN: 4, SLOT_REMOVE: 4}
    # What the local inference endpoint (loopback, no pairing) serves: running and listing the
    # deployed slots, nothing that changes the device.
    LOCAL_INFERENCE = (SLOT_RUN, SLOT_LIST)


def ok(request_type: str) -> str:
    """The type of a successful reply to ``request_type`` ("push.begin" -> "push.begin.ok")."""
    return request_type + ".ok"


class Err:
    """The error codes of an ``error`` reply."""

    BAD_FRAME = "bad_frame"
    TOO_LARGE = "too_large"
    UNKNOWN_TYPE = "unknown_type"
    NOT_AUTHENTICATED = "not_authenticated"
    PAIRING_LOCKED = "pairing_locked"
    BAD_CODE = "bad_code"
    NOT_FOUND = "not_found"
    BAD_REQUEST = "bad_request"
    SANDBOX = "sandbox"
    RUNTIME = "runtime"
    BUSY = "busy"
    INTERNAL = "internal"
    UNSUPPORTED_VERSION = "unsupported_version"
    # Version 3: the script being debugged ended before the debugger attached (debug.tunnel).
    SCRIPT_EXITED = "script_exited"

    # Raised by hosts about a link, never sent by an agent.
    CERTIFICATE_CHANGED = "certificate_changed"
    NOT_PAIRED = "not_paired"

    ALL = (BAD_FRAME, TOO_LARGE, UNKNOWN_TYPE, NOT_AUTHENTICATED, PAIRING_LOCKED, BAD_CODE,
           NOT_FOUND, BAD_REQUEST, SANDBOX, RUNTIME, BUSY, INTERNAL,
           UNSUPPORTED_VERSION, SCRIPT_EXITED)


class ProtocolError(Exception):
    """An error with a protocol error code. Raised by the agent's handlers (and sent back as an
    ``error`` reply); ``extra`` holds fields added to that reply (``seconds`` of a pairing lock,
    the ``offset`` a push expects)."""

    def __init__(self, code: str, message: str, **extra: Any):
        super().__init__(message)
        self.code = code
        self.message = message
        self.extra = extra

    def __str__(self) -> str:
        return f"{self.message} ({self.code})"


class FrameError(ProtocolError):
    """Bytes that are not a frame of this protocol: the connection cannot go on after it."""


class RemoteError(ProtocolError):
    """The agent answered a request with an ``error`` reply."""


class ConnectionClosed(ConnectionError):
    """The other end closed the connection (or it dropped)."""


@dataclass
class Frame:
    """One frame: its JSON header and its payload (bytes, bytearray or memoryview)."""

    header: Dict[str, Any]
    payload: Any = b""

    @property
    def type(self) -> str:
        return self.header.get("type", "")

    @property
    def id(self) -> Optional[int]:
        return self.header.get("id")


def encode_header(header: Mapping[str, Any]) -> bytes:
    """``header`` as the UTF-8 JSON bytes a frame carries; ProtocolError(too_large) past
    MAX_HEADER."""
    data = json.dumps(header, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
    if len(data) > MAX_HEADER:
        raise ProtocolError(Err.TOO_LARGE, f"a header of {len(data)} bytes is over the "
                                           f"{MAX_HEADER}-byte limit")
    return data


def encode_prefix(header_len: int, payload_len: int, version: int = FIRST_VERSION) -> bytes:
    return PREFIX.pack(MAGIC, version, 0, 0, header_len, payload_len)


def frame_bytes(header: Mapping[str, Any], payload: bytes = b"",
                version: int = FIRST_VERSION) -> bytes:
    """A whole frame as one bytes object (for small frames and tests)."""
    data = encode_header(header)
    return encode_prefix(len(data), len(payload), version) + data + bytes(payload)


def parse_prefix(data: bytes, max_header: int = MAX_HEADER,
                 max_payload: int = MAX_PAYLOAD,
                 versions: Sequence[int] = SUPPORTED_VERSIONS) -> Tuple[int, int]:
    """``(header_len, payload_len)`` from the first PREFIX_SIZE bytes of a frame whose version
    byte is one of ``versions``; FrameError (bad_frame, or too_large for a header or payload
    over the limits)."""
    if len(data) < PREFIX_SIZE:
        raise FrameError(Err.BAD_FRAME, f"a frame starts with {PREFIX_SIZE} bytes, got {len(data)}")
    magic, version, _flags, _reserved, header_len, payload_len = PREFIX.unpack_from(data)
    if magic != MAGIC:
        raise FrameError(Err.BAD_FRAME, f"not a Workbench debug link frame (magic {bytes(magic)!r})")
    if version not in versions:
        speaks = ", ".join(str(v) for v in versions)
        raise FrameError(Err.BAD_FRAME, f"protocol version {version} is not supported; this end "
                                        f"speaks version {speaks}")
    if header_len > max_header:
        raise FrameError(Err.TOO_LARGE, f"a header of {header_len} bytes is over the "
                                        f"{max_header}-byte limit")
    if payload_len > max_payload:
        raise FrameError(Err.TOO_LARGE, f"a payload of {payload_len} bytes is over the "
                                        f"{max_payload}-byte limit")
    return header_len, payload_len


class _NotStrictJSON(ValueError):
    """Text Python's json module reads but RFC 8259 JSON does not allow, or that two parsers
    would read differently."""


def _no_constant(name: str) -> Any:
    raise _NotStrictJSON(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    # 1e400 is valid JSON syntax but becomes Infinity in a double: a NaN/Infinity in disguise.
    value = float(text)
    if not math.isfinite(value):
        raise _NotStrictJSON(f"the number {text[:40]} does not fit a 64-bit float")
    return value


def _unique_keys(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    # Parsers disagree on which of two equal keys wins (Python: the last; others: the first or
    # an error), so a header with both could mean one thing to a check and another to its use.
    obj: Dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise _NotStrictJSON(f"the key {key[:60]!r} appears twice in one object")
        obj[key] = value
    return obj


def loads_strict(text: str) -> Any:
    """``text`` parsed as RFC 8259 JSON: ValueError for NaN, Infinity, numbers beyond a double
    and objects with a key given twice (at any depth), all of which ``json.loads`` accepts."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float,
                      object_pairs_hook=_unique_keys)


def parse_header(data: bytes) -> Dict[str, Any]:
    """The header object; FrameError(bad_frame) when the bytes are not a UTF-8 JSON object, or
    hold NaN, Infinity or a key given twice."""
    try:
        header = loads_strict(bytes(data).decode("utf-8"))
    except _NotStrictJSON as exc:
        raise FrameError(Err.BAD_FRAME, f"the header is not strict JSON: {exc}") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise FrameError(Err.BAD_FRAME, f"the header is not UTF-8 JSON ({exc})") from None
    if not isinstance(header, dict):
        raise FrameError(Err.BAD_FRAME, f"the header is JSON but not an object "
                                        f"({type(header).__name__})")
    return header


def decode_frame(data: bytes, max_header: int = MAX_HEADER,
                 max_payload: int = MAX_PAYLOAD) -> Tuple[Frame, int]:
    """The frame at the start of ``data`` and the number of bytes it took; FrameError when the
    bytes are no frame or end before the frame does."""
    header_len, payload_len = parse_prefix(data, max_header, max_payload)
    end = PREFIX_SIZE + header_len + payload_len
    if len(data) < end:
        raise FrameError(Err.BAD_FRAME, f"the frame is truncated: {len(data)} of {end} bytes")
    header = parse_header(data[PREFIX_SIZE:PREFIX_SIZE + header_len])
    return Frame(header, data[PREFIX_SIZE + header_len:end]), end


def error_header(code: str, message: str, request_id: Optional[int] = None,
                 **extra: Any) -> Dict[str, Any]:
    header: Dict[str, Any] = {"type": Msg.ERROR, "id": request_id, "code": code, "message": message}
    header.update(extra)
    return header


# --- Versions ----------------------------------------------------------------------------

def _is_version(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def negotiate_version(hello: Mapping[str, Any],
                      supported: Sequence[int] = SUPPORTED_VERSIONS) -> int:
    """The protocol version a connection speaks after ``hello``: the highest version in both
    ``supported`` and the host's ``versions`` list. A host that sends no list speaks every
    version up to its ``protocol`` field, and one that sends neither speaks version 1 (the hosts
    written before versions were negotiated). ProtocolError unsupported_version (with
    ``versions``: what this end speaks) when there is none in common; bad_request for a
    malformed field."""
    offered = hello.get("versions")
    if offered is not None:
        if not isinstance(offered, list) or not offered or not all(map(_is_version, offered)):
            raise ProtocolError(Err.BAD_REQUEST, "'versions' must be a non-empty list of "
                                                 "protocol versions (integers from 1)")
        common = [v for v in supported if v in offered]
        described = ", ".join(str(v) for v in sorted(set(offered)))
    else:
        highest = hello.get("protocol")
        if highest is None:
            highest = 1
        elif not _is_version(highest):
            raise ProtocolError(Err.BAD_REQUEST, "'protocol' must be a protocol version (an "
                                                 "integer from 1)")
        common = [v for v in supported if v <= highest]
        described = f"up to {highest}"
    if not common:
        speaks = ", ".join(str(v) for v in supported)
        raise ProtocolError(Err.UNSUPPORTED_VERSION,
                            f"the host speaks protocol versions {described}; this device speaks "
                            f"{speaks}: update the older side", versions=list(supported))
    return max(common)


# --- Tensors -----------------------------------------------------------------------------

# The dtypes a tensor may have on the wire (numpy names). Nothing else is ever built from
# received bytes: an object dtype would unpickle.
DTYPES = ("float16", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32",
          "uint32", "int64", "uint64", "bool")


@dataclass
class PackedTensors:
    """Tensors laid out for a payload: ``descriptors`` go in the header's ``tensors`` field,
    ``buffers`` (in order, ``nbytes`` in all) are the payload."""

    descriptors: List[Dict[str, Any]] = field(default_factory=list)
    buffers: List[memoryview] = field(default_factory=list)
    nbytes: int = 0

    def payload(self) -> bytes:
        return b"".join(self.buffers)


def pack_tensors(tensors: Any) -> PackedTensors:
    """``tensors`` (a mapping or pairs of name and numpy array) laid out little-endian in C order,
    one after the other; arrays already in that layout are not copied."""
    import numpy as np

    items = tensors.items() if isinstance(tensors, Mapping) else tensors
    packed = PackedTensors()
    for name, value in items:
        array = np.asarray(value)
        if array.dtype.name not in DTYPES:
            raise ProtocolError(Err.BAD_REQUEST, f"tensor {name!r} has dtype {array.dtype}, which "
                                                 f"the protocol does not carry ({', '.join(DTYPES)})")
        array = np.asarray(array, dtype=array.dtype.newbyteorder("<"), order="C")
        packed.descriptors.append({"name": str(name), "dtype": array.dtype.name,
                                   "shape": [int(d) for d in array.shape],
                                   "offset": packed.nbytes, "nbytes": int(array.nbytes)})
        packed.buffers.append(memoryview(array.reshape(-1).view(np.uint8)))
        packed.nbytes += int(array.nbytes)
    return packed


def unpack_tensors(descriptors: Any, payload: Any) -> Dict[str, Any]:
    """The arrays ``descriptors`` (a header's ``tensors``) describe, viewing ``payload`` without
    copying it; ProtocolError(bad_request) for a descriptor that does not fit the payload."""
    import numpy as np

    if not isinstance(descriptors, list):
        raise ProtocolError(Err.BAD_REQUEST, "'tensors' must be a list of tensor descriptions")
    view = memoryview(payload).cast("B")
    arrays: Dict[str, Any] = {}
    for index, desc in enumerate(descriptors):
        if not isinstance(desc, dict):
            raise ProtocolError(Err.BAD_REQUEST, f"tensor {index} is not an object")
        name, dtype, shape = desc.get("name"), desc.get("dtype"), desc.get("shape")
        offset, nbytes = desc.get("offset"), desc.get("nbytes")
        if not isinstance(name, str) or not name:
            raise ProtocolError(Err.BAD_REQUEST, f"tensor {index} has no name")
        if dtype not in DTYPES:
            raise ProtocolError(Err.BAD_REQUEST, f"tensor {name!r}: dtype {dtype!r} is not one of "
                                                 f"{', '.join(DTYPES)}")
        if (not isinstance(shape, list)
                or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
            raise ProtocolError(Err.BAD_REQUEST, f"tensor {name!r}: shape must be a list of "
                                                 "non-negative integers")
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (offset, nbytes)):
            raise ProtocolError(Err.BAD_REQUEST, f"tensor {name!r}: offset and nbytes must be "
                                                 "non-negative integers")
        itemsize = np.dtype(dtype).itemsize
        count = 1
        for d in shape:
            count *= d
        if count * itemsize != nbytes:
            raise ProtocolError(Err.BAD_REQUEST, f"tensor {name!r}: shape {shape} of {dtype} is "
                                                 f"{count * itemsize} bytes, not {nbytes}")
        if offset + nbytes > len(view):
            raise ProtocolError(Err.BAD_REQUEST, f"tensor {name!r} ends at byte {offset + nbytes} "
                                                 f"of a {len(view)}-byte payload")
        if name in arrays:
            raise ProtocolError(Err.BAD_REQUEST, f"tensor {name!r} is given twice")
        flat = np.frombuffer(view[offset:offset + nbytes], dtype=np.dtype(dtype).newbyteorder("<"),
                             count=count)
        if offset % itemsize:
            flat = flat.copy()  # runtimes want aligned data; the payload packs tensors tightly
        arrays[name] = flat.reshape(shape)
    return arrays


# --- Pairing ---------------------------------------------------------------------------

def hex_field(header: Mapping[str, Any], name: str, max_bytes: int) -> bytes:
    """The bytes a hex string field spells; ProtocolError bad_request when it is missing, not
    hex, empty or longer than ``max_bytes``."""
    value = header.get(name)
    if not isinstance(value, str) or not value or len(value) > 2 * max_bytes:
        raise ProtocolError(Err.BAD_REQUEST, f"'{name}' must be a hex string of at most "
                                             f"{max_bytes} bytes")
    try:
        return bytes.fromhex(value)
    except ValueError:
        raise ProtocolError(Err.BAD_REQUEST, f"'{name}' must be a hex string") from None


# --- Request fields ----------------------------------------------------------------------

_MISSING = object()


def field_of(header: Mapping[str, Any], name: str, kind: Any, default: Any = _MISSING) -> Any:
    """``header[name]`` checked to be of ``kind`` (a type or tuple of types; bool is never taken
    for int); ProtocolError(bad_request) naming the field when it is missing or of another kind."""
    value = header.get(name, _MISSING)
    if value is _MISSING or value is None:
        if default is _MISSING:
            raise ProtocolError(Err.BAD_REQUEST, f"{header.get('type', 'the request')} needs "
                                                 f"the field {name!r}")
        return default
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        ok_kind = False
    else:
        ok_kind = isinstance(value, kinds)
    if not ok_kind:
        names = " or ".join(k.__name__ for k in kinds)
        raise ProtocolError(Err.BAD_REQUEST, f"the field {name!r} must be {names}, not "
                                             f"{type(value).__name__}")
    return value


def check_sha256(value: Any) -> str:
    """``value`` as a lower-case sha256 hex digest; ProtocolError(bad_request) otherwise."""
    if (not isinstance(value, str) or len(value) != 64
            or any(c not in "0123456789abcdef" for c in value.lower())):
        raise ProtocolError(Err.BAD_REQUEST, "sha256 must be 64 hex digits")
    return value.lower()


def descriptor_shape(shape: Sequence[Any]) -> List[Any]:
    """A model's input or output shape for a header: ints for fixed axes, None for any size,
    a string for a named (symbolic) axis."""
    out: List[Any] = []
    for d in shape:
        if isinstance(d, bool):
            out.append(None)
        elif isinstance(d, int):
            out.append(d if d >= 0 else None)
        elif isinstance(d, str):
            out.append(d)
        else:
            out.append(None)
    return out

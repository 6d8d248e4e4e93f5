"""A small synchronous client of the debug link: what a host needs to pair with an agent,
push models, run, benchmark, verify and follow the device's log.

One ``DeviceClient`` is one TLS connection (and at most one session); it is not thread-safe.
Errors the agent answers raise ``RemoteError`` (with the protocol's ``code``); a connection that
drops raises ``ConnectionClosed`` (or the socket's own ``OSError``); a reply to no request this
client is waiting for raises ``ProtocolError`` (the link is out of step). An agent whose
certificate is not the pinned one raises ``CertificateChanged`` before any frame is sent.

    identity = load_or_make_identity(folder, "my laptop")          # this host's key pair
    with DeviceClient.for_pairing("127.0.0.1", 7300, identity) as device:
        pin = device.pair(host_id, "my laptop", "123456")          # once: the agent's pin
    with DeviceClient("127.0.0.1", 7300, identity=identity, pin=pin) as device:
        device.hello(host_id)
        device.open_session("onnxruntime")
        sha = device.push_model("model.onnx").sha256
        model = device.load_model(sha)
        outputs, run_ms = device.run(model["model"], {"x": x})
"""

from __future__ import annotations

import collections
import hashlib
import logging
import os
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Deque, Dict, List, Optional, Set, Tuple, Union

from workbench_device import __version__
from workbench_device.protocol import (
    BASE_CHUNK,
    FIRST_VERSION,
    MAX_CHUNK,
    SUPPORTED_VERSIONS,
    ConnectionClosed,
    Err,
    Frame,
    Msg,
    ProtocolError,
    RemoteError,
    hex_field,
    ok,
    pack_tensors,
    unpack_tensors,
)
from workbench_device.pake import PairingExchange, PakeError
from workbench_device.tls import Identity, client_context, fingerprint, short_fingerprint
from workbench_device.wire import FrameSocket, TLSStream, tune, tune_for_tunnel

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 60.0
# The chunk sent when the device takes one that large (see ``DeviceClient.max_chunk``): fewer
# requests and replies per model.
PUSH_CHUNK = MAX_CHUNK
# Chunks sent before the first one's reply is awaited: the agent writes while the next ones
# are on the way.
PUSH_WINDOW = 4
LOG_BACKLOG = 10000
# A file's sha256 is remembered by its path, size, inode and time stamps, unless it changed less
# than this long before it was hashed: time stamps are coarse (a few milliseconds), so a file
# rewritten that soon after could keep them all.
_RACY_S = 2.0
_REMEMBERED = 256
_hashes: "collections.OrderedDict[tuple, str]" = collections.OrderedDict()
_hashes_lock = threading.Lock()


def sha256_of(source: Union[str, Path, bytes, bytearray, memoryview]) -> str:
    """The sha256 of a file (by path) or of bytes. A file's is remembered while its size,
    inode and time stamps stay the same, so pushing a model again does not read it again."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return hashlib.sha256(source).hexdigest()
    with open(source, "rb", buffering=0) as stream:
        info = os.fstat(stream.fileno())
        key = (os.path.realpath(source), info.st_dev, info.st_ino, info.st_size,
               info.st_mtime_ns, info.st_ctime_ns)
        with _hashes_lock:
            known = _hashes.get(key)
        if known is not None:
            return known
        digest = hashlib.sha256()
        buffer = bytearray(1024 * 1024)
        view = memoryview(buffer)
        while True:
            n = stream.readinto(buffer)
            if not n:
                break
            digest.update(view[:n])
    sha256 = digest.hexdigest()
    changed = max(info.st_mtime_ns, info.st_ctime_ns) / 1e9
    if time.time() - changed > _RACY_S:
        with _hashes_lock:
            _hashes[key] = sha256
            while len(_hashes) > _REMEMBERED:
                _hashes.popitem(last=False)
    return sha256


@dataclass
class PushResult:
    sha256: str
    size: int
    sent: int          # bytes that went over the wire this time
    resumed_from: int  # bytes the device had already (the size when it had the whole model)
    # Whether the device had checked the bytes against the sha256 and stored the model when
    # push_model returned (always, unless it was told not to wait for that).
    verified: bool = True

    @property
    def skipped(self) -> bool:
        return self.sent == 0 and self.resumed_from == self.size


class DeviceClient:
    """One connection to an agent. ``on_log(frame)`` is called for each ``log`` frame that
    arrives while waiting for a reply (they are also kept in ``logs``); ``on_event[type]`` for
    each event of that type (a script's output, the end of a debugged script). Unsolicited
    frames of other types (events a newer agent may send) are skipped and counted in
    ``skipped_events``."""

    def __init__(self, host: str, port: int, timeout: float = DEFAULT_TIMEOUT_S,
                 connect_timeout: float = 10.0,
                 on_log: Optional[Callable[[Dict[str, Any]], None]] = None,
                 identity: Optional[Identity] = None, pin: Optional[str] = None,
                 present_certificate: bool = True):
        self.host = host
        self.port = port
        self.timeout = timeout
        self.identity = identity
        sock = socket.create_connection((host, port), timeout=connect_timeout)
        tune(sock)
        context = client_context(identity if present_certificate else None)
        try:
            tls_sock = context.wrap_socket(sock)
        except ssl.SSLError as exc:
            sock.close()
            raise _handshake_error(exc, f"{host}:{port}") from None
        except BaseException:
            sock.close()
            raise
        self.peer_fingerprint = fingerprint(tls_sock.getpeercert(binary_form=True) or b"")
        if pin is not None and pin.lower() != self.peer_fingerprint:
            tls_sock.close()
            raise CertificateChanged(f"{host}:{port}", pin.lower(), self.peer_fingerprint)
        tls_sock.settimeout(timeout)
        self.fs = FrameSocket(tls_sock)
        self._presented = identity is not None and present_certificate
        self._frames_read = 0
        self.on_log = on_log
        self.logs: Deque[Dict[str, Any]] = collections.deque(maxlen=LOG_BACKLOG)
        self.hello_reply: Dict[str, Any] = {}
        # The protocol version hello chose (until then the first one every agent speaks).
        self.protocol = FIRST_VERSION
        self.session_id: Optional[str] = None
        self.on_event: Dict[str, Callable[[Dict[str, Any]], None]] = {}
        self.skipped_events = 0
        self._tunnel: Optional[TLSStream] = None
        self._next_id = 1
        # Requests sent and not answered yet: a reply with another id is not for this client.
        self._waiting: Set[int] = set()
        self._closed = False

    @classmethod
    def for_pairing(cls, host: str, port: int, identity: Identity,
                    **options: Any) -> "DeviceClient":
        """A connection that offers no certificate (the agent does not know it yet): it can say
        hello and ``pair``."""
        return cls(host, port, identity=identity, present_certificate=False, **options)

    # --- frames ---

    def _new_id(self) -> int:
        request_id = self._next_id
        self._next_id += 1
        self._waiting.add(request_id)
        return request_id

    def send(self, kind: str, payload: Any = b"", **fields: Any) -> int:
        """Send a request; its id."""
        request_id = self._new_id()
        header = {"type": kind, "id": request_id}
        header.update(fields)
        self.fs.send(header, payload)
        return request_id

    def read_frame(self, timeout: Optional[float] = None) -> Frame:
        """The next frame from the agent, whatever it is."""
        self.fs.sock.settimeout(self.timeout if timeout is None else timeout)
        try:
            head = self.fs.recv_head()
        except ssl.SSLError as exc:
            # In TLS 1.3 the agent checks this host's certificate after the client's side of
            # the handshake is done: a refusal arrives as an alert on the first read.
            raise _handshake_error(exc, f"{self.host}:{self.port}",
                                   self._presented and not self._frames_read) from None
        self._frames_read += 1
        if head is None:
            raise ConnectionClosed(f"the device at {self.host}:{self.port} closed the connection")
        header, payload_len = head
        payload = self.fs.recv_payload(payload_len) if payload_len else b""
        return Frame(header, payload)

    def receive(self, request_id: int, timeout: Optional[float] = None) -> Frame:
        """The reply to ``request_id``; RemoteError for an ``error`` reply (or an error about
        the connection, id null). Log frames arriving meanwhile go to ``logs`` / ``on_log``;
        ProtocolError for a reply to no request this client is waiting for."""
        while True:
            frame = self._sort(self.read_frame(timeout), request_id)
            if frame is not None:
                return frame

    def _sort(self, frame: Frame, request_id: Optional[int]) -> Optional[Frame]:
        """``frame`` when it is the reply to ``request_id`` (RemoteError when that reply is an
        ``error``); None for a frame dealt with here: a log line or another event, a late reply
        to a request given up after an error. ProtocolError for a reply nobody waits for."""
        header = frame.header
        kind = frame.type
        if "id" not in header and kind != Msg.ERROR:
            if kind == Msg.LOG:
                self._got_log(header)
            elif kind in self.on_event:
                self.on_event[kind](header)
            else:
                self.skipped_events += 1
                log.debug("skipped a %r frame from %s:%s: not an event this host knows",
                          kind, self.host, self.port)
            return None
        frame_id = header.get("id")
        if (frame_id is None and kind == Msg.ERROR) or (request_id is not None
                                                          and frame_id == request_id):
            self._waiting.discard(frame_id)
            if kind == Msg.ERROR:
                extra = {k: v for k, v in header.items()
                         if k not in ("type", "id", "code", "message")}
                raise RemoteError(str(header.get("code") or Err.INTERNAL),
                                  str(header.get("message") or "the device reported an error"),
                                  **extra)
            return frame
        # Replies come in the order of their requests: one to an earlier request still waiting
        # was given up (the chunks pipelined after a failed one in a push).
        if (frame_id in self._waiting and isinstance(frame_id, int)
                and (request_id is None or frame_id < request_id)):
            self._waiting.discard(frame_id)
            return None
        waiting = f"for request {request_id}" if request_id is not None else "for no reply"
        raise ProtocolError(Err.BAD_FRAME, f"the device at {self.host}:{self.port} sent "
                                           f"{kind!r} for request id {frame_id!r}, which has no "
                                           f"reply to come (this host was waiting {waiting}): "
                                           "the link is out of step; connect again")

    def request(self, kind: str, payload: Any = b"", timeout: Optional[float] = None,
                **fields: Any) -> Frame:
        """Send a request and wait for its reply."""
        frame = self.receive(self.send(kind, payload, **fields), timeout)
        if frame.type != ok(kind):
            raise ProtocolError(Err.BAD_FRAME, f"the device answered {kind} with {frame.type!r}")
        return frame

    def _got_log(self, header: Dict[str, Any]) -> None:
        self.logs.append(header)
        if self.on_log is not None:
            self.on_log(header)

    # --- handshake ---

    def hello(self, host_id: Optional[str] = None) -> Dict[str, Any]:
        """The agent's hello (name, device_id, whether this connection's certificate is a paired
        host's)."""
        fields: Dict[str, Any] = {"client": f"workbench-device-client/{__version__}",
                                  "protocol": max(SUPPORTED_VERSIONS),
                                  "versions": list(SUPPORTED_VERSIONS)}
        if host_id:
            fields["host_id"] = host_id
        reply = self.request(Msg.HELLO, **fields).header
        if reply.get("protocol") not in SUPPORTED_VERSIONS:
            raise ProtocolError(Err.UNSUPPORTED_VERSION, f"the device chose protocol "
                                f"{reply.get('protocol')}, this host speaks "
                                f"{', '.join(map(str, SUPPORTED_VERSIONS))}: update the older side")
        self.hello_reply = reply
        self.protocol = int(reply["protocol"])
        self.fs.version = self.protocol
        return reply

    @property
    def max_chunk(self) -> int:
        """The largest push.chunk the device takes: what its hello said, else the base size
        every agent takes."""
        announced = self.hello_reply.get("max_chunk")
        if isinstance(announced, int) and not isinstance(announced, bool) and announced > 0:
            return min(announced, MAX_CHUNK)
        return BASE_CHUNK

    def pair(self, host_id: str, host_name: str, code: str) -> str:
        """Pair with the code the device shows (see ``pake.py``); the fingerprint of the agent's
        certificate, to pin. This connection is authenticated once it returns.

        RemoteError bad_code / pairing_locked from the agent; ``RelayDetected`` when the agent
        says it presents another certificate than the one this connection got (nothing is sent
        that would spend a guess); ProtocolError when the agent's confirmation does not match
        (a device that does not know the code)."""
        if self.identity is None:
            raise ProtocolError(Err.BAD_REQUEST, "pairing needs this host's identity")
        exchange = PairingExchange("host", code)
        reply = self.request(Msg.PAIR_BEGIN, host_id=host_id, host_name=host_name,
                             cert=self.identity.cert_der.hex(),
                             pake=exchange.message.hex()).header
        claimed = reply.get("cert_fingerprint")
        if isinstance(claimed, str) and claimed.lower() != self.peer_fingerprint:
            raise RelayDetected(f"{self.host}:{self.port}", claimed.lower(), self.peer_fingerprint)
        try:
            exchange.finish(hex_field(reply, "pake", 1024), host_id, self.peer_fingerprint,
                            self.identity.fingerprint)
        except PakeError as exc:
            raise ProtocolError(Err.BAD_FRAME, f"the device's pairing message: {exc}") from None
        reply = self.request(Msg.PAIR_FINISH, confirm=exchange.confirmation()).header
        if not exchange.confirms(reply.get("confirm")):
            raise ProtocolError(Err.BAD_CODE, f"the device at {self.host}:{self.port} accepted "
                                "the code but could not prove it knows it: it is not the device "
                                "showing that code; nothing was paired")
        return self.peer_fingerprint

    # --- device and session ---

    def info(self) -> Dict[str, Any]:
        return _fields(self.request(Msg.INFO))

    def open_session(self, runtime: str = "onnxruntime", threads: int = 1) -> str:
        reply = self.request(Msg.SESSION_OPEN, runtime=runtime, threads=threads).header
        self.session_id = reply["session_id"]
        return self.session_id

    # --- models ---

    def has_model(self, sha256: str) -> Optional[int]:
        """The size of the model on the device, None when it is not there."""
        reply = self.request(Msg.MODEL_HAS, sha256=sha256).header
        return reply.get("size") if reply.get("present") else None

    def push_model(self, source: Union[str, Path, bytes, bytearray, memoryview],
                   name: Optional[str] = None, sha256: Optional[str] = None,
                   chunk_size: int = PUSH_CHUNK, window: int = PUSH_WINDOW,
                   progress: Optional[Callable[[int, int], None]] = None,
                   wait_until_stored: bool = True) -> PushResult:
        """Push a model (a file's path or bytes) unless the device has it; a push that was cut
        off goes on where the device's copy ends. ``progress(done, size)`` after each chunk.

        The device may answer push.end before it has checked the bytes against their sha256;
        this waits for that check (RemoteError when the bytes did not match) unless
        ``wait_until_stored`` is false: then ``verified`` may be False, and the device's
        model.has / model.load of that model wait for the check."""
        chunk_size = max(1, min(chunk_size, self.max_chunk))
        in_memory = isinstance(source, (bytes, bytearray, memoryview))
        size = len(memoryview(source).cast("B")) if in_memory else os.stat(source).st_size
        sha256 = sha256 or sha256_of(source)
        if name is None and not in_memory:
            name = Path(source).name
        begin = self.request(Msg.PUSH_BEGIN, sha256=sha256, size=size, name=name).header
        offset = int(begin["offset"])
        if begin.get("present", offset >= size):
            if progress is not None:
                progress(size, size)
            return PushResult(sha256, size, 0, offset)
        file = None if in_memory else open(source, "rb")
        data = memoryview(source).cast("B") if in_memory else None
        try:
            pending: Deque[Tuple[int, int]] = collections.deque()
            position = offset
            while position < size:
                n = min(chunk_size, size - position)
                request_id = self._new_id()
                header = {"type": Msg.PUSH_CHUNK, "id": request_id, "sha256": sha256,
                          "offset": position}
                if data is not None:
                    self.fs.send(header, data[position:position + n])
                else:
                    self.fs.send_file_range(header, file, position, n)
                position += n
                pending.append((request_id, position))
                while len(pending) >= max(1, window) or (position >= size and pending):
                    done_id, done = pending.popleft()
                    self.receive(done_id)
                    if progress is not None:
                        progress(done, size)
        finally:
            if file is not None:
                file.close()
        end = self.request(Msg.PUSH_END, sha256=sha256).header
        verified = bool(end.get("verified", True))
        if not verified and wait_until_stored:
            has = self.request(Msg.MODEL_HAS, sha256=sha256).header  # after the check
            if not has.get("present"):
                raise RemoteError(Err.BAD_REQUEST, str(
                    has.get("push_error") or "the device did not keep the model: the bytes it "
                    "received do not match their sha256; push it again"))
            verified = True
        return PushResult(sha256, int(end["size"]), size - offset, offset, verified)

    def load_model(self, sha256: str, name: Optional[str] = None) -> Dict[str, Any]:
        """Load a pushed model in the session; the reply (``model`` handle, inputs, outputs,
        init_ms)."""
        fields: Dict[str, Any] = {"sha256": sha256}
        if name:
            fields["name"] = name
        return _fields(self.request(Msg.MODEL_LOAD, **fields))

    def run(self, model: str, inputs: Dict[str, Any],
            timeout: Optional[float] = None) -> Tuple[Dict[str, Any], float]:
        """The model's outputs (numpy arrays by name) for ``inputs``, and the device's run time
        in milliseconds."""
        packed = pack_tensors(inputs)
        reply = self.request(Msg.MODEL_RUN, packed.buffers, timeout=timeout, model=model,
                             tensors=packed.descriptors)
        outputs = unpack_tensors(reply.header.get("tensors", []), reply.payload)
        return outputs, float(reply.header.get("run_ms", 0.0))

    def bench(self, model: str, warmup: int = 5, runs: int = 50, batch: Optional[int] = None,
              inputs: Optional[Dict[str, Any]] = None,
              timeout: Optional[float] = None) -> Dict[str, Any]:
        """Latency figures (init_ms, p50_ms, p90_ms, p99_ms, mean_ms, peak_rss_bytes…)."""
        fields: Dict[str, Any] = {"model": model, "warmup": warmup, "runs": runs}
        if batch is not None:
            fields["batch"] = batch
        payload: Any = b""
        if inputs is not None:
            packed = pack_tensors(inputs)
            fields["tensors"] = packed.descriptors
            payload = packed.buffers
        return _fields(self.request(Msg.MODEL_BENCH, payload,
                                    timeout=timeout or max(self.timeout, 600.0), **fields))

    # --- files and scripts ---

    def put_file(self, path: str, data: Union[bytes, bytearray, memoryview, str, Path]
                 ) -> Dict[str, Any]:
        """Write ``data`` (bytes, or a local file's path) to ``path`` in the session's folder."""
        if isinstance(data, (str, Path)):
            data = Path(data).read_bytes()
        size = len(memoryview(data).cast("B"))
        return _fields(self.request(Msg.FILE_PUT, data, path=path, size=size))

    def get_file(self, path: str) -> bytes:
        return bytes(self.request(Msg.FILE_GET, path=path).payload)

    def run_script(self, path: str, model: Optional[str] = None, timeout_s: float = 60.0,
                   on_output: Optional[Callable[[str, str], None]] = None) -> Dict[str, Any]:
        """Run a script in the session's folder (``model``: a loaded model's handle or a
        pushed model's sha256); exit_code, stdout, stderr (their ends), result.
        ``on_output(stream, text)`` gets what it writes ("stdout" or "stderr") while it runs
        (an older agent sends nothing while it runs: then it gets nothing)."""
        fields: Dict[str, Any] = {"path": path, "timeout_s": timeout_s}
        if model:
            fields["model"] = model
        if on_output is None:
            return _fields(self.request(Msg.SCRIPT_RUN, timeout=timeout_s + self.timeout,
                                        **fields))

        def output(event: Dict[str, Any]) -> None:
            skipped = event.get("skipped")
            if isinstance(skipped, int) and skipped > 0:
                on_output(str(event.get("stream")), f"\n[… {skipped} bytes skipped …]\n")
            on_output(str(event.get("stream")), str(event.get("text") or ""))

        # Between output events the script may be silent for long: each wait is for the next
        # frame, and the whole run is bounded by its own time-out on the device.
        before = self.on_event.get(Msg.SCRIPT_OUTPUT)
        self.on_event[Msg.SCRIPT_OUTPUT] = output
        try:
            return _fields(self.request(Msg.SCRIPT_RUN, timeout=timeout_s + self.timeout,
                                        stream=True, **fields))
        finally:
            if before is None:
                self.on_event.pop(Msg.SCRIPT_OUTPUT, None)
            else:
                self.on_event[Msg.SCRIPT_OUTPUT] = before

    # --- debugging (protocol version 3) ---

    def start_debug(self, path: str, model: Optional[str] = None,
                    timeout_s: Optional[float] = None, wait: bool = True,
                    stream: bool = False) -> Dict[str, Any]:
        """Start the script ``path`` (in the session's folder) under debugpy on the device;
        debug_id, pid, program and sandbox (its paths on the device). With ``wait`` it waits
        for a debugger; with ``stream`` its output comes as ``script.output`` events."""
        self._needs(3, "debug a script")
        fields: Dict[str, Any] = {"path": path, "wait": wait, "stream": stream}
        if model:
            fields["model"] = model
        if timeout_s is not None:
            fields["timeout_s"] = timeout_s
        return _fields(self.request(Msg.DEBUG_START, **fields))

    def stop_debug(self, debug_id: str) -> Dict[str, Any]:
        self._needs(3, "stop a debugged script")
        return _fields(self.request(Msg.DEBUG_STOP, debug_id=debug_id))

    def open_tunnel(self, debug_id: str) -> TLSStream:
        """Turn this connection into the tunnel of the debug run ``debug_id``: the stream its
        debugger speaks DAP on (no frames go over this connection any more). Reading it gives
        b"" when the device ended the tunnel in order (debugpy closed it), and raises
        (ssl.SSLEOFError, ConnectionResetError, a time-out) when the link dropped."""
        self._needs(3, "debug a script")
        self.request(Msg.DEBUG_TUNNEL, debug_id=debug_id)
        stream = self.fs.sock
        if not isinstance(stream, TLSStream):
            raise ProtocolError(Err.BAD_FRAME, "a tunnel needs a TLS connection")
        # An end without TLS's close_notify is a dropped link, not the end of the stream.
        stream.tls.suppress_ragged_eofs = False
        stream.settimeout(None)
        tune_for_tunnel(stream)
        self._tunnel = stream
        return stream

    # --- deployment slots (protocol version 4) ---

    def deploy_slot(self, slot: str, sha256: str, warm_runs: Optional[int] = None,
                    runtime: Optional[str] = None, threads: Optional[int] = None,
                    name: Optional[str] = None,
                    timeout: Optional[float] = None) -> Dict[str, Any]:
        """Switch ``slot`` to the pushed model ``sha256`` once it loaded and ran ``warm_runs``
        times (default 3); slot, model, previous, load_ms, warm_ms, switched_at. RemoteError
        ``runtime`` (the slot keeps its model) for a model the runtime cannot load, ``busy``
        while another deploy of the slot runs."""
        self._needs(4, "deploy to a slot")
        fields: Dict[str, Any] = {"slot": slot, "model": sha256}
        for field, value in (("warm_runs", warm_runs), ("runtime", runtime),
                             ("threads", threads), ("name", name)):
            if value is not None:
                fields[field] = value
        return _fields(self.request(Msg.SLOT_DEPLOY, timeout=timeout or max(self.timeout, 600.0),
                                    **fields))

    def list_slots(self) -> List[Dict[str, Any]]:
        """Every slot: slot, model, since, served, errors, deploying, runtime, inputs, outputs."""
        self._needs(4, "list slots")
        return list(self.request(Msg.SLOT_LIST).header.get("slots") or [])

    def run_slot(self, slot: str, inputs: Dict[str, Any],
                 timeout: Optional[float] = None) -> Tuple[Dict[str, Any], str, float]:
        """The outputs of the model deployed to ``slot`` for ``inputs``, the sha256 of that
        model, and the device's run time in milliseconds."""
        self._needs(4, "run a slot")
        packed = pack_tensors(inputs)
        reply = self.request(Msg.SLOT_RUN, packed.buffers, timeout=timeout, slot=slot,
                             tensors=packed.descriptors)
        outputs = unpack_tensors(reply.header.get("tensors", []), reply.payload)
        return outputs, str(reply.header.get("model")), float(reply.header.get("run_ms", 0.0))

    def remove_slot(self, slot: str) -> Dict[str, Any]:
        self._needs(4, "remove a slot")
        return _fields(self.request(Msg.SLOT_REMOVE, slot=slot))

    def _needs(self, version: int, what: str) -> None:
        if self.protocol < version:
            raise ProtocolError(Err.UNSUPPORTED_VERSION, f"to {what}, the device's agent must "
                                f"speak protocol {version}; this connection speaks "
                                f"{self.protocol}: update workbench-device-agent on the device")

    def next_event(self, timeout: float = 5.0) -> Optional[Dict[str, Any]]:
        """The next event (a log line, a script's output, a debugged script's end) after it
        went to its handler, None when none comes within ``timeout``."""
        try:
            frame = self.read_frame(timeout)
        except socket.timeout:
            return None
        if "id" in frame.header or frame.type in (Msg.LOG, Msg.ERROR) or frame.type in self.on_event:
            self._sort(frame, None)  # a handler's, or a reply nobody waits for (ProtocolError)
        return frame.header

    # --- logs ---

    def subscribe_logs(self, level: str = "info") -> None:
        self.request(Msg.LOGS_SUBSCRIBE, level=level)

    def next_log(self, timeout: float = 5.0) -> Optional[Dict[str, Any]]:
        """The next log line (kept ones first), None when none comes within ``timeout``."""
        if self.logs:
            return self.logs.popleft()
        try:
            frame = self.read_frame(timeout)
        except socket.timeout:
            return None
        self._sort(frame, None)  # a log line lands in ``logs`` (and goes to on_log)
        return self.logs.popleft() if self.logs else None

    # --- closing ---

    def close(self) -> None:
        """Say goodbye (when the connection is still up) and close it."""
        if self._closed:
            return
        self._closed = True
        if self._tunnel is not None:  # no frames on a tunnel: just end it
            self.fs.close()
            return
        try:
            self.fs.sock.settimeout(2.0)
            self.request(Msg.CLOSE, timeout=2.0)
        except (OSError, ProtocolError):
            pass
        self.fs.close()

    def __enter__(self) -> "DeviceClient":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _fields(frame: Frame) -> Dict[str, Any]:
    return {k: v for k, v in frame.header.items() if k not in ("type", "id")}


def connect(host: str, port: int, host_id: str, identity: Identity, pin: str,
            timeout: float = DEFAULT_TIMEOUT_S) -> DeviceClient:
    """A TLS connection to the agent at ``host:port`` whose certificate is ``pin``, offering
    ``identity``'s, said hello to."""
    client = DeviceClient(host, port, timeout=timeout, identity=identity, pin=pin)
    try:
        client.hello(host_id)
    except BaseException:
        client.fs.close()
        raise
    return client


class CertificateChanged(ProtocolError):
    """The agent at ``address`` presented another certificate than the pinned one."""

    def __init__(self, address: str, pinned: str, presented: str):
        super().__init__(Err.CERTIFICATE_CHANGED,
                         f"the device at {address} presented a certificate "
                         f"{short_fingerprint(presented)}, not the one pinned at pairing "
                         f"({short_fingerprint(pinned)})")
        self.address = address
        self.pinned = pinned
        self.presented = presented


class RelayDetected(ProtocolError):
    """Pairing found that something between host and agent terminates TLS."""

    def __init__(self, address: str, agent_says: str, connection_has: str):
        super().__init__(Err.CERTIFICATE_CHANGED,
                         f"the connection to {address} is intercepted: the device says its "
                         f"certificate is {short_fingerprint(agent_says)}, this connection got "
                         f"{short_fingerprint(connection_has)}; nothing was paired. Pair over a "
                         "network you trust, or over USB (adb forward)")


def _handshake_error(exc: ssl.SSLError, address: str,
                     first_read_with_certificate: bool = False) -> ProtocolError:
    """What a failed TLS handshake means for the user."""
    text = str(exc)
    if first_read_with_certificate and isinstance(exc, ssl.SSLEOFError):
        return ProtocolError(Err.NOT_PAIRED, f"the device at {address} closed the connection "
                             "right after the TLS handshake: it does not know this computer's "
                             "certificate (it was unpaired, or its data was reset); pair again "
                             "with the code it shows")
    if any(alert in text for alert in ("UNKNOWN_CA", "CERTIFICATE_UNKNOWN", "BAD_CERTIFICATE",
                                       "CERTIFICATE_REQUIRED")):
        return ProtocolError(Err.NOT_PAIRED, f"the device at {address} does not know this "
                             "computer's certificate (it was unpaired, or its data was reset): "
                             "pair again with the code it shows")
    if "WRONG_VERSION_NUMBER" in text or "PACKET_LENGTH_TOO_LONG" in text:
        return ProtocolError(Err.UNSUPPORTED_VERSION, f"the device at {address} does not speak "
                             "TLS: its agent is older than this Workbench (protocol 1, clear "
                             "text); update workbench-device-agent on it")
    return ProtocolError(Err.BAD_FRAME, f"the TLS handshake with {address} failed "
                                        f"({exc.reason or text})")

"""One host connection to the agent: its TLS, its frames, its authentication, its session.

Every request goes to the method ``on_<type>`` (dots as underscores: ``push.chunk`` ->
``on_push_chunk``), which returns the reply's fields (and payload). Whatever goes wrong stays
with this connection: a request's error becomes an ``error`` reply; bytes that are no frame get
one ``error`` (bad_frame / too_large) and the connection is closed; nothing here stops the agent.
"""

from __future__ import annotations

import logging
import os
import select
import socket
import ssl
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional

from workbench_device import __version__, logs
from workbench_device.auth import NotTLS, PairingAttempt, hello_fields, host_of, upgrade
from workbench_device.bench import benchmark
from workbench_device.debugging import TUNNEL_LINGER_S, DebugRun, debug_info, pump_tunnel
from workbench_device.device_info import describe
from workbench_device.protocol import (
    FIRST_VERSION,
    MAX_CHUNK,
    ConnectionClosed,
    Err,
    FrameError,
    Msg,
    ProtocolError,
    check_sha256,
    error_header,
    field_of,
    ok,
    pack_tensors,
    unpack_tensors,
)
from workbench_device.runtimes import check_runtime, load_model
from workbench_device.scripts import run_script
from workbench_device.sessions import Session
from workbench_device.wire import STREAM_BUFFER, FrameSocket, TLSStream, tune, tune_for_tunnel

if TYPE_CHECKING:
    from workbench_device.agent import Agent

log = logging.getLogger(__name__)

AGENT_NAME = f"workbench-device-agent/{__version__}"
# A connection that has not authenticated gets no more than this much payload read for it.
BEFORE_AUTH_PAYLOAD = 64 * 1024
MAX_MODELS_PER_SESSION = 32
MAX_THREADS = 256


class Reply:
    """What a handler answers: the reply's fields and a payload (buffers, or an open file's
    descriptor and size to send with sendfile)."""

    def __init__(self, fields: Optional[Dict[str, Any]] = None, payload: Any = b"",
                 file_fd: Optional[int] = None, file_size: int = 0,
                 after_sent: Optional[Callable[[], None]] = None):
        self.fields = fields or {}
        # Runs once the reply is out (or could not be sent).
        self.after_sent = after_sent
        self.payload = payload
        self.file_fd = file_fd
        self.file_size = file_size


class Payload:
    """The payload of the frame being handled, still in the socket until a handler takes it."""

    def __init__(self, fs: FrameSocket, length: int, buffer: Callable[[], bytearray]):
        self.fs = fs
        self.length = length
        self._buffer = buffer
        self.taken = False
        # Set when a handler failed part-way through the payload: where the next frame starts
        # is lost, so the connection has to close.
        self.broken = False

    def read(self) -> bytearray:
        self.taken = True
        return self.fs.recv_payload(self.length)

    def stream(self, consume: Callable[[memoryview], None]) -> None:
        """Pass the payload to ``consume`` piece by piece (see ``FrameSocket.recv_stream``)."""
        self.taken = True
        try:
            self.fs.recv_stream(self.length, consume, self._buffer())
        except ConnectionClosed:
            raise
        except BaseException:
            self.broken = True
            raise

    def to_file(self, fd: int, offset: int, wrote: Callable[[int], None]) -> None:
        """Write the payload to the file ``fd`` at ``offset`` (see
        ``FrameSocket.recv_to_file``)."""
        self.taken = True
        try:
            self.fs.recv_to_file(self.length, fd, offset, wrote)
        except ConnectionClosed:
            raise
        except BaseException:
            self.broken = True
            raise

    def to_memory(self, view: memoryview, wrote: Callable[[int], None]) -> None:
        """Receive the payload into ``view``, which is as long as it (see
        ``FrameSocket.recv_exact_into``)."""
        self.taken = True
        try:
            self.fs.recv_exact_into(view, wrote)
        except ConnectionClosed:
            raise
        except BaseException:
            self.broken = True
            raise

    def discard(self) -> None:
        if not self.taken:
            self.taken = True
            self.fs.discard(self.length)


class AgentConnection:
    """Serves one accepted socket until it closes (``serve`` runs on the connection's thread)."""

    def __init__(self, agent: "Agent", sock: socket.socket, peer: str):
        self.agent = agent
        self.sock = sock
        self.peer = peer
        tune(sock)
        # Until the TLS handshake is done this holds the bare socket, so close() can wake it.
        self.fs = FrameSocket(sock, max_payload=agent.max_payload)
        self.pairing = PairingAttempt(agent.pairing, agent.identity.cert_der, peer)
        self.host_id: Optional[str] = None
        # The protocol version this connection's hello chose (before any hello, the first).
        self.protocol = FIRST_VERSION
        self.session: Optional[Session] = None
        self.subscription: Optional[logs.LogSubscription] = None
        # Events of the scripts this connection debugs (their output, their end), sent from
        # their threads through a bounded queue: a host that reads slowly never blocks them.
        self.events: Optional[logs.LogSubscription] = None
        self._closing = False
        self._stream_buffer: Optional[bytearray] = None
        self._handlers: Dict[str, Callable[[Dict[str, Any], Payload], Optional[Reply]]] = {
            name: getattr(self, "on_" + name.replace(".", "_")) for name in Msg.REQUESTS}

    @property
    def authenticated(self) -> bool:
        return self.host_id is not None

    # --- the loop ---

    def serve(self) -> None:
        logs.context.agent = self.agent
        log.debug("connection from %s", self.peer)
        try:
            if not self._start_tls():
                return
            while not self._closing and self._serve_one():
                pass
        except Exception:  # a bug here must end this connection only
            log.exception("connection from %s failed", self.peer)
        finally:
            self.cleanup()

    def _start_tls(self) -> bool:
        """Do the TLS handshake; False (the connection is over) when it failed."""
        try:
            tls_sock = upgrade(self.sock, self.agent.tls_context(), self.agent.frame_timeout_s)
        except NotTLS as exc:
            log.warning("%s sent %s; it was %s", self.peer, exc,
                        "told to update Workbench" if exc.answered else "closed")
            return False
        except ssl.SSLError as exc:
            reason = exc.reason or str(exc)
            if "CERTIFICATE_VERIFY_FAILED" in str(exc):
                reason = "its certificate is no paired host's: it must pair again"
            log.warning("TLS handshake with %s failed: %s", self.peer, reason)
            return False
        except (OSError, socket.timeout) as exc:
            log.info("TLS handshake with %s did not finish (%s)", self.peer, exc)
            return False
        self.fs = FrameSocket(tls_sock, max_payload=self.agent.max_payload)
        # Time-outs go to the TLSStream: set on the SSL socket they would make it blocking
        # again, and a read waiting for the next request would hold the lock a log line (sent
        # from another thread) needs.
        self.sock = self.fs.sock
        if self._closing:
            return False
        self.host_id = host_of(self.agent.paired_hosts, tls_sock)
        if self.host_id is not None:
            log.info("host %s authenticated from %s by its pinned certificate", self.host_id,
                     self.peer)
        return True

    def _serve_one(self) -> bool:
        """Read and answer one frame; False when the connection is over."""
        try:
            self.sock.settimeout(None)  # a host may stay quiet between requests for hours
            head = self.fs.recv_head(
                on_first_byte=lambda: self.sock.settimeout(self.agent.frame_timeout_s))
        except FrameError as exc:
            log.warning("%s sent a bad frame: %s; closing that connection", self.peer, exc.message)
            self._send_error(exc, None)
            return False
        except (ConnectionClosed, socket.timeout) as exc:
            log.info("connection from %s ended inside a frame (%s)", self.peer, exc)
            return False
        except ssl.SSLError as exc:
            # A record that does not decrypt (clear text or garbage after the handshake), one
            # over TLS's size limit, a record cut short: TLS cannot resync, so this one ends.
            log.warning("%s broke the TLS stream (%s); closing that connection", self.peer,
                        exc.reason or exc)
            return False
        except OSError:
            return False
        if head is None:
            log.debug("%s closed the connection", self.peer)
            return False
        header, payload_len = head
        request_id = header.get("id")
        valid_id = request_id is None or (isinstance(request_id, int)
                                          and not isinstance(request_id, bool))
        payload = Payload(self.fs, payload_len, self._buffer)
        kind = header.get("type")
        reply: Optional[Reply] = None
        try:
            if not valid_id:
                request_id = None
                raise ProtocolError(Err.BAD_REQUEST, "'id' must be an integer")
            if not isinstance(kind, str):
                raise ProtocolError(Err.BAD_REQUEST, "the header needs 'type', a message name")
            if not self.authenticated and kind not in Msg.BEFORE_AUTH:
                raise ProtocolError(Err.NOT_AUTHENTICATED,
                                    f"{kind} needs an authenticated connection: connect with a "
                                    "paired certificate, or pair first")
            handler = self._handlers.get(kind)
            if handler is None:
                raise ProtocolError(Err.UNKNOWN_TYPE, f"unknown message type {kind!r}")
            since = Msg.SINCE.get(kind, FIRST_VERSION)
            if self.protocol < since:
                raise ProtocolError(Err.UNKNOWN_TYPE, f"{kind} is a message of protocol version "
                                                      f"{since}; this connection speaks "
                                                      f"{self.protocol} (say hello with versions "
                                                      f"including {since})")
            if not self.authenticated and payload_len > BEFORE_AUTH_PAYLOAD:
                raise FrameError(Err.TOO_LARGE, f"{kind} takes no payload of {payload_len} bytes")
            if kind == Msg.PUSH_CHUNK and payload_len > MAX_CHUNK:
                raise FrameError(Err.TOO_LARGE, f"a push.chunk of {payload_len} bytes is over the "
                                                f"{MAX_CHUNK}-byte limit")
            reply = handler(header, payload)
            payload.discard()
        except FrameError as exc:
            log.warning("%s: %s; closing that connection", self.peer, exc.message)
            self._send_error(exc, request_id)
            return False
        except ProtocolError as exc:
            log.debug("%s: %s failed: %s", self.peer, kind, exc)
            return self._after_error(exc, request_id, payload)
        except (ConnectionClosed, ConnectionError, socket.timeout, ssl.SSLError) as exc:
            log.info("connection from %s ended during %s (%s)", self.peer, kind, exc)
            return False
        except Exception as exc:
            log.exception("%s: %s failed", self.peer, kind)
            error = ProtocolError(Err.INTERNAL, f"the agent failed on {kind}: {exc}")
            return self._after_error(error, request_id, payload)
        if reply is not None:
            return self._send_reply_or_close(kind, request_id, reply)
        return True

    def _send_reply_or_close(self, kind: str, request_id: Optional[int], reply: Reply) -> bool:
        """Send the reply; False (close the connection) when it failed part-way: the host may
        have its beginning, so no other frame can follow it."""
        try:
            self._send_reply(kind, request_id, reply)
        except ProtocolError as exc:  # nothing was sent (a header over the limit)
            self._send_error(exc, request_id)
        except (OSError, ValueError) as exc:
            log.info("the reply to %s from %s could not be sent (%s); closing that connection",
                     kind, self.peer, exc)
            return False
        finally:
            if reply.after_sent is not None:
                reply.after_sent()
        return True

    def _after_error(self, exc: ProtocolError, request_id: Optional[int], payload: Payload) -> bool:
        """Answer ``exc``; False when the connection cannot go on (the payload is half-read, or
        is too large to read for a host that has not authenticated)."""
        go_on = not payload.broken
        if go_on and not payload.taken:
            if not self.authenticated and payload.length > BEFORE_AUTH_PAYLOAD:
                go_on = False
            else:
                try:
                    payload.discard()
                except (OSError, ConnectionClosed):
                    return False
        self._send_error(exc, request_id)
        return go_on

    def _send_error(self, exc: ProtocolError, request_id: Optional[int]) -> None:
        try:
            self.fs.send(error_header(exc.code, exc.message, request_id, **exc.extra))
        except (OSError, ValueError, ProtocolError):
            pass

    def _send_reply(self, kind: str, request_id: Optional[int], reply: Reply) -> None:
        header = {"type": ok(kind), "id": request_id}
        header.update(reply.fields)
        if reply.file_fd is not None:
            with os.fdopen(reply.file_fd, "rb") as file:
                self.fs.send_file_range(header, file, 0, reply.file_size)
        else:
            self.fs.send(header, reply.payload)

    def close(self) -> None:
        """End the connection from another thread (the agent is stopping)."""
        self._closing = True
        self.fs.shutdown()

    def cleanup(self) -> None:
        self.agent.logs.unsubscribe(self.subscription)
        self.subscription = None
        self.agent.store.release(self)
        # The scripts debugged in this session end with it (their folder is about to go).
        self.agent.debug_runs.end_session(self.session)
        if self.events is not None:
            self.events.stop()
        self.agent.sessions.close(self.session)
        self.session = None
        self.fs.close()
        self.agent.forget(self)

    # --- helpers ---

    def _buffer(self) -> bytearray:
        """The connection's buffer for streamed payloads (made on first use: most connections
        never stream one)."""
        if self._stream_buffer is None:
            self._stream_buffer = bytearray(STREAM_BUFFER)
        return self._stream_buffer

    def _session(self) -> Session:
        if self.session is None:
            raise ProtocolError(Err.BAD_REQUEST, "open a session first (session.open)")
        return self.session

    # --- handshake ---

    def on_hello(self, header: Dict[str, Any], payload: Payload) -> Reply:
        handshake = hello_fields(header, self.host_id)
        client = header.get("client")
        if isinstance(client, str):
            log.debug("%s says hello (%s)", self.peer, client[:100])
        self.protocol = handshake["protocol"]

        def speak_it() -> None:
            # hello.ok goes out in the version its hello came in; the frames after it in the
            # version chosen.
            self.fs.version = self.protocol

        return Reply({"agent": AGENT_NAME, "name": self.agent.name,
                      "device_id": self.agent.device_id, "max_chunk": MAX_CHUNK,
                      "cert_fingerprint": self.agent.identity.fingerprint, **handshake},
                     after_sent=speak_it)

    def on_pair_begin(self, header: Dict[str, Any], payload: Payload) -> Reply:
        return Reply(self.pairing.begin(header))

    def on_pair_finish(self, header: Dict[str, Any], payload: Payload) -> Reply:
        host_id, confirmation = self.pairing.finish(header)
        self.agent.paired_hosts_changed()
        # The host proved it knows the code: this connection goes on authenticated.
        self.host_id = host_id
        return Reply({"confirm": confirmation})

    def on_close(self, header: Dict[str, Any], payload: Payload) -> Reply:
        self._closing = True
        return Reply()

    # --- the device ---

    def on_info(self, header: Dict[str, Any], payload: Payload) -> Reply:
        info = describe(self.agent.name, self.agent.device_id, len(self.agent.sessions))
        info["max_sessions"] = self.agent.sessions.max_sessions
        info["session_id"] = self.session.id if self.session else None
        debug = debug_info()
        if debug is not None:
            info["debug"] = debug
        return Reply(info)

    def on_session_open(self, header: Dict[str, Any], payload: Payload) -> Reply:
        if self.session is not None:
            raise ProtocolError(Err.BAD_REQUEST, f"this connection has session {self.session.id} "
                                                 "already; open another connection for another")
        runtime = check_runtime(header.get("runtime") or "onnxruntime")
        threads = field_of(header, "threads", int, 1)
        if not 1 <= threads <= MAX_THREADS:
            raise ProtocolError(Err.BAD_REQUEST, f"'threads' must be from 1 to {MAX_THREADS}")
        self.session = self.agent.sessions.open(runtime, threads, self.peer)
        return Reply({"session_id": self.session.id, "runtime": runtime, "threads": threads})

    def on_logs_subscribe(self, header: Dict[str, Any], payload: Payload) -> None:
        level = logs.level_of(header.get("level"))
        self.agent.logs.unsubscribe(self.subscription)
        self.subscription = self.agent.logs.subscribe(self.fs.send, level)
        # Lines logged from now on are collected; they go out after the reply.
        self._send_reply(Msg.LOGS_SUBSCRIBE, header.get("id"),
                         Reply({"level": logs.level_name(level)}))
        self.subscription.start()
        log.info("%s follows the device log (%s and above)", self.peer, logs.level_name(level))
        return None

    # --- models ---

    def on_model_has(self, header: Dict[str, Any], payload: Payload) -> Reply:
        sha256 = check_sha256(header.get("sha256"))
        size = self.agent.store.stored_size(sha256)  # after the check of a push under way
        fields = {"sha256": sha256, "present": size is not None, "size": size}
        problem = self.agent.store.push_error(sha256) if size is None else None
        if problem:
            fields["push_error"] = problem
        return Reply(fields)

    def on_push_begin(self, header: Dict[str, Any], payload: Payload) -> Reply:
        sha256 = check_sha256(header.get("sha256"))
        offset, present = self.agent.store.begin(sha256, header.get("size"), self)
        if present:
            log.info("%s: model %s… (%s) is here already", self.peer, sha256[:12],
                     header.get("name") or "?")
        return Reply({"sha256": sha256, "offset": offset, "present": present})

    def on_push_chunk(self, header: Dict[str, Any], payload: Payload) -> Reply:
        sha256 = check_sha256(header.get("sha256"))
        offset = field_of(header, "offset", int)
        received = self.agent.store.receive(sha256, offset, payload.length, self,
                                             payload.to_file, payload.to_memory)
        return Reply({"received": received})

    def on_push_end(self, header: Dict[str, Any], payload: Payload) -> Reply:
        sha256 = check_sha256(header.get("sha256"))
        payload.discard()  # nothing may fail between the end and the reply that starts the check
        deferred: list = []
        size, verified = self.agent.store.end(sha256, self, start_check=deferred.append)
        return Reply({"sha256": sha256, "size": size, "verified": verified},
                     after_sent=deferred[0] if deferred else None)

    def on_model_load(self, header: Dict[str, Any], payload: Payload) -> Reply:
        session = self._session()
        sha256 = check_sha256(header.get("sha256"))
        name = str(header.get("name") or "")[:200]
        if len(session.models) >= MAX_MODELS_PER_SESSION:
            raise ProtocolError(Err.BUSY, f"a session holds at most {MAX_MODELS_PER_SESSION} "
                                          "models; open a new session")
        path = self.agent.store.model_file(sha256)
        model = load_model(session.runtime, path, sha256, name, session.threads)
        handle = session.add_model(model)
        log.info("session %s loaded %s (%s…) in %.1f ms with %s", session.id, name or "a model",
                 sha256[:12], model.init_ms, session.runtime)
        fields = {"model": handle, "runtime": session.runtime}
        fields.update(model.describe())
        return Reply(fields)

    def on_model_run(self, header: Dict[str, Any], payload: Payload) -> Reply:
        model = self._session().model(header.get("model"))
        data = payload.read()
        feeds = unpack_tensors(header.get("tensors", []), data)
        start = time.perf_counter()
        outputs = model.run(feeds)
        run_ms = (time.perf_counter() - start) * 1000.0
        packed = pack_tensors(outputs)
        if packed.nbytes > self.agent.max_payload:
            raise ProtocolError(Err.TOO_LARGE, f"the outputs are {packed.nbytes} bytes, over the "
                                               f"{self.agent.max_payload}-byte payload limit")
        return Reply({"tensors": packed.descriptors, "run_ms": round(run_ms, 4)}, packed.buffers)

    def on_model_bench(self, header: Dict[str, Any], payload: Payload) -> Reply:
        model = self._session().model(header.get("model"))
        feeds = None
        if header.get("tensors"):
            feeds = unpack_tensors(header["tensors"], payload.read())
        result = benchmark(model, header.get("warmup"), header.get("runs"), header.get("batch"),
                           feeds)
        log.info("session %s benchmarked %s: p50 %.3f ms over %d runs", self.session.id,
                 model.name or model.sha256[:12], result["p50_ms"], result["runs"])
        return Reply(result)

    # --- files and scripts ---

    def on_file_put(self, header: Dict[str, Any], payload: Payload) -> Reply:
        session = self._session()
        path = header.get("path")
        size = field_of(header, "size", int, payload.length)
        if size != payload.length:
            raise ProtocolError(Err.BAD_REQUEST, f"'size' says {size} bytes but the payload has "
                                                 f"{payload.length}")
        session.sandbox.put(path, payload.length, payload.stream)
        return Reply({"path": path, "size": payload.length})

    def on_file_get(self, header: Dict[str, Any], payload: Payload) -> Reply:
        session = self._session()
        path = header.get("path")
        fd, size = session.sandbox.open_for_reading(path)
        if size > self.agent.max_payload:
            os.close(fd)
            raise ProtocolError(Err.TOO_LARGE, f"{path!r} is {size} bytes, over the "
                                               f"{self.agent.max_payload}-byte payload limit")
        return Reply({"path": path, "size": size}, file_fd=fd, file_size=size)

    def _model_file(self, session: Session, model: Any):
        """The file of the model a script request names (a loaded model's handle or a stored
        model's sha256), None when it names none."""
        if not model:
            return None
        if isinstance(model, str) and model in session.models:
            return session.models[model].path
        return self.agent.store.model_file(check_sha256(model))

    def on_script_run(self, header: Dict[str, Any], payload: Payload) -> Reply:
        session = self._session()
        model_file = self._model_file(session, header.get("model"))
        request_id = header.get("id")

        def send_output(event: Dict[str, Any]) -> None:
            self.fs.send(dict(event, request=request_id))

        on_output = send_output if field_of(header, "stream", bool, False) else None
        return Reply(run_script(session.sandbox, header.get("path"), model_file,
                                header.get("timeout_s"), self.agent.scripts, on_output,
                                self._hung_up))

    def _hung_up(self) -> bool:
        """Whether the host closed its end (checked while a request runs long: its work is
        then stopped). A request pipelined meanwhile reads as "still there"."""
        raw = self.fs.sock.tls if isinstance(self.fs.sock, TLSStream) else self.fs.sock
        try:
            readable, _, _ = select.select([raw], [], [], 0)
            if not readable:
                return False
            return socket.socket.recv(raw, 1, socket.MSG_PEEK) == b""
        except (BlockingIOError, InterruptedError):
            return False
        except (OSError, ValueError):
            return True

    # --- deployment slots (protocol version 4; slots.py) ---

    def on_slot_deploy(self, header: Dict[str, Any], payload: Payload) -> Reply:
        return Reply(self.agent.slots.deploy(header.get("slot"), header.get("model"),
                                             header.get("warm_runs"), header.get("runtime"),
                                             header.get("threads"), header.get("name")))

    def on_slot_list(self, header: Dict[str, Any], payload: Payload) -> Reply:
        return Reply({"slots": self.agent.slots.list()})

    def on_slot_run(self, header: Dict[str, Any], payload: Payload) -> Reply:
        feeds = unpack_tensors(header.get("tensors", []), payload.read())
        outputs, sha256, run_ms = self.agent.slots.run(header.get("slot"), feeds)
        packed = pack_tensors(outputs)
        if packed.nbytes > self.agent.max_payload:
            raise ProtocolError(Err.TOO_LARGE, f"the outputs are {packed.nbytes} bytes, over the "
                                               f"{self.agent.max_payload}-byte payload limit")
        return Reply({"slot": header.get("slot"), "model": sha256, "tensors": packed.descriptors,
                      "run_ms": round(run_ms, 4)}, packed.buffers)

    def on_slot_remove(self, header: Dict[str, Any], payload: Payload) -> Reply:
        return Reply(self.agent.slots.remove(header.get("slot")))

    # --- debugging (protocol version 3) ---

    def _send_event(self, event: Dict[str, Any]) -> None:
        if self.events is None:
            self.events = logs.LogSubscription(self.fs.send, 0)
            self.events.start()
        self.events.offer(event)

    def on_debug_start(self, header: Dict[str, Any], payload: Payload) -> Reply:
        session = self._session()
        model_file = self._model_file(session, header.get("model"))
        run = self.agent.debug_runs.start(
            session, self.host_id, header.get("path"), model_file, header.get("timeout_s"),
            field_of(header, "wait", bool, True), self._send_event,
            field_of(header, "stream", bool, False))
        return Reply(run.describe())

    def on_debug_stop(self, header: Dict[str, Any], payload: Payload) -> Reply:
        run = self.agent.debug_runs.find(header.get("debug_id"), self.host_id)
        run.kill()
        run.ended.wait(10.0)
        return Reply({"debug_id": run.id, "exit_code": run.exit_code})

    def on_debug_tunnel(self, header: Dict[str, Any], payload: Payload) -> None:
        if self.session is not None or self.subscription is not None or self.events is not None:
            raise ProtocolError(Err.BAD_REQUEST, "debug.tunnel takes a connection of its own: "
                                                 "this one has a session, a log subscription or "
                                                 "debug runs; open another connection")
        run: DebugRun = self.agent.debug_runs.find(header.get("debug_id"), self.host_id)
        dap = run.connect()
        payload.discard()
        try:
            self._send_reply(Msg.DEBUG_TUNNEL, header.get("id"), Reply({"debug_id": run.id}))
        except BaseException:
            dap.close()
            run.kill()
            raise
        # From here on this connection carries debugpy's bytes, not frames.
        self._closing = True
        self.sock.settimeout(None)
        tune_for_tunnel(self.fs.sock)
        log.info("%s attached a debugger to %s", self.peer, run.relative)
        ended_by = pump_tunnel(self.fs.sock, dap, run.id)
        if ended_by == "debugpy":
            # debugpy closes the tunnel as the script ends (or after the debugger detached):
            # give the script the time to end by itself.
            run.ended.wait(TUNNEL_LINGER_S)
        if run.child.poll() is None:
            log.info("the debugger of %s %s; stopping the script", run.relative,
                     "hung up" if ended_by == "host" else "detached")
        run.kill()
        return None

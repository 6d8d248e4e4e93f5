"""``workbench-device-agent``: the server of the debug link, and its command line.

One thread per connection: a connection that blocks (a long benchmark, a script, a slow
network) blocks nobody else, and onnxruntime, hashing and file writes release the GIL, so
sessions run side by side. The agent listens on loopback, plus the address the user names
(``--host``); on every interface only with ``--all-interfaces``.

Every connection is TLS 1.3 (``tls.py``, ``auth.py``). Its data folder (``--data-dir``) holds
``device.json`` (the device's id), ``link-key.pem`` and ``link-cert.pem`` (its TLS identity, the
key readable by its user only), ``paired_hosts.json`` (the hosts' pinned certificates),
``models/`` (by sha256), ``sessions/`` (one sandbox per open session), ``slots.json`` (the
deployment slots and their models) and ``agent.log``.

Besides the debug link it serves the deployed slots to the device's own apps on a loopback port
of their own (``--inference-port``; ``local_endpoint.py``).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import logging
import os
import platform
import signal
import socket
import ssl
import sys
import threading
import uuid
from pathlib import Path
from typing import Callable, List, Optional, Set, Tuple

from workbench_device import __version__, logs
from workbench_device.auth import NotTLS, upgrade
from workbench_device.connection import AgentConnection
from workbench_device.debugging import DebugRuns
from workbench_device.device_info import _getprop, device_model
from workbench_device.local_endpoint import EndpointError, InferenceEndpoint
from workbench_device.logs import LogHub, say, setup_logging
from workbench_device.pairing import LOCK_SECONDS, PairedHosts, Pairing, write_private_json
from workbench_device.protocol import (
    DEFAULT_INFERENCE_PORT,
    DEFAULT_MAX_RUN_PAYLOAD,
    DEFAULT_PORT,
    SUPPORTED_VERSIONS,
    VERSION,
    Err,
    error_header,
)
from workbench_device.sessions import DEFAULT_MAX_SESSIONS, SessionRegistry
from workbench_device.scripts import RunningScripts
from workbench_device.slots import SlotRegistry
from workbench_device.store import PUSH_MEMORY_BYTES, ModelStore
from workbench_device.tls import IdentityError, load_or_make_identity, server_context, short_fingerprint
from workbench_device.wire import FrameSocket

log = logging.getLogger(__name__)

FRAME_TIMEOUT_S = 120.0
# A connection over the limit is told so within this long, by at most this many threads.
REFUSE_TIMEOUT_S = 5.0
MAX_REFUSING = 16
_WILDCARDS = ("0.0.0.0", "::", "")


class AgentError(Exception):
    """The agent cannot start; the message says why and what to do."""


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "workbench-device"


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


class Agent:
    """The debug link's server. ``start()`` binds and serves on background threads;
    ``stop()`` ends every connection. ``on_pairing_code(code)`` runs when the code changes.
    ``inference_port`` is the local inference endpoint's (0: a free one; None, the default
    here: no endpoint; the command line's default is DEFAULT_INFERENCE_PORT, and its 0 means
    none). With ``inference_optional`` an endpoint port that is taken (another agent on this
    machine has it) is logged and the agent goes on without an endpoint."""

    def __init__(self, data_dir: Path, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
                 name: Optional[str] = None, all_interfaces: bool = False,
                 max_sessions: int = DEFAULT_MAX_SESSIONS, mdns: bool = False,
                 pairing_lock_s: float = LOCK_SECONDS,
                 max_payload: int = DEFAULT_MAX_RUN_PAYLOAD,
                 frame_timeout_s: float = FRAME_TIMEOUT_S,
                 push_memory_bytes: int = PUSH_MEMORY_BYTES,
                 on_pairing_code: Optional[Callable[[str], None]] = None,
                 inference_port: Optional[int] = None, inference_optional: bool = False):
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._data_lock = self._lock_data_dir()
        self.host = host
        self.port = port
        self.all_interfaces = all_interfaces
        self.max_payload = max_payload
        self.frame_timeout_s = frame_timeout_s
        self.use_mdns = mdns
        self.on_pairing_code = on_pairing_code
        self.device_id, saved_name = self._identity()
        self.name = name or saved_name or self._default_name()
        try:
            self.identity = load_or_make_identity(self.data_dir, f"workbench-device {self.device_id}")
        except IdentityError as exc:
            self._release_data_dir()
            raise AgentError(str(exc)) from None
        self.paired_hosts = PairedHosts(self.data_dir / "paired_hosts.json")
        self._tls_lock = threading.Lock()
        self._tls_context = server_context(self.identity, self.paired_hosts.certificates())
        self.pairing = Pairing(self.paired_hosts, lock_seconds=pairing_lock_s,
                               on_new_code=self._code_changed)
        self.store = ModelStore(self.data_dir / "models", push_memory_bytes=push_memory_bytes)
        self.sessions = SessionRegistry(self.data_dir / "sessions", max_sessions)
        self.slots = SlotRegistry(self.data_dir, self.store)
        self.inference_port = inference_port
        self.inference_optional = inference_optional
        self.inference: Optional[InferenceEndpoint] = None
        self.max_connections = max(16, 4 * max_sessions)
        self.logs = LogHub(self)
        self.scripts = RunningScripts()
        self.debug_runs = DebugRuns()
        self.addresses: List[Tuple[str, int]] = []
        self._listeners: List[socket.socket] = []
        self._threads: List[threading.Thread] = []
        self._connections: Set[AgentConnection] = set()
        self._refusing = 0
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._advertisement = None

    def _lock_data_dir(self) -> Optional[int]:
        """Hold ``agent.lock`` in the data folder: two agents on one folder would remove each
        other's session folders. AgentError when another agent holds it."""
        try:
            import fcntl
        except ImportError:  # not a POSIX system: no lock, as before
            return None
        fd = os.open(str(self.data_dir / "agent.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise AgentError(f"another agent is using {self.data_dir}; stop it, or give this one "
                             "its own --data-dir") from None
        return fd

    def _release_data_dir(self) -> None:
        if self._data_lock is not None:
            os.close(self._data_lock)  # releases the lock
            self._data_lock = None

    # --- identity ---

    def _identity(self) -> Tuple[str, Optional[str]]:
        path = self.data_dir / "device.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and isinstance(data.get("device_id"), str):
                return data["device_id"], data.get("name")
        except (OSError, ValueError):
            pass
        device_id = uuid.uuid4().hex
        write_private_json(path, {"device_id": device_id})
        return device_id, None

    @staticmethod
    def _default_name() -> str:
        if _getprop("ro.product.model"):
            return device_model()
        return platform.node() or device_model()

    def tls_context(self) -> ssl.SSLContext:
        """The context for the next connection: it trusts the hosts paired so far."""
        with self._tls_lock:
            return self._tls_context

    def paired_hosts_changed(self) -> None:
        """A host paired: connections from now on accept its certificate."""
        context = server_context(self.identity, self.paired_hosts.certificates())
        with self._tls_lock:
            self._tls_context = context

    @property
    def fingerprint(self) -> str:
        """This agent's certificate fingerprint, as people compare it."""
        return short_fingerprint(self.identity.fingerprint)

    def _code_changed(self, code: str) -> None:
        if self.on_pairing_code is not None:
            self.on_pairing_code(code)

    # --- serving ---

    def _bind_hosts(self) -> List[str]:
        if self.all_interfaces:
            return ["0.0.0.0"]
        if self.host in _WILDCARDS:
            raise AgentError(f"--host {self.host or '(empty)'} means every interface; say so "
                             "with --all-interfaces")
        hosts = ["127.0.0.1"]
        if not _is_loopback(self.host):
            hosts.append(self.host)
        elif self.host not in ("127.0.0.1", "localhost"):
            hosts = [self.host]
        return hosts

    def start(self) -> "Agent":
        """Bind (port 0: a free port, the same on every address) and start serving."""
        logger = logging.getLogger(logs.LOGGER)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.DEBUG)
        logger.addHandler(self.logs)
        # Before any request can come: a slot serves its model from the agent's first frame.
        self.slots.restore()
        if self.inference_port is not None:
            try:
                self.inference = InferenceEndpoint(self.slots, self.inference_port,
                                                   self.max_payload, self.frame_timeout_s).start()
            except EndpointError as exc:
                if not self.inference_optional:
                    self.stop()
                    raise AgentError(str(exc)) from None
                log.warning("%s; serving without it", exc)
            self.inference_port = self.inference.port if self.inference is not None else None
        port = self.port
        try:
            for host in self._bind_hosts():
                listener = self._listen(host, port)
                bound = listener.getsockname()[:2]
                port = bound[1]
                self._listeners.append(listener)
                self.addresses.append((bound[0], bound[1]))
        except OSError as exc:
            self.stop()
            raise AgentError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; choose "
                             "another --port or --host") from None
        self.port = port
        for listener in self._listeners:
            thread = threading.Thread(target=self._accept_loop, args=(listener,),
                                      name="wb-device-accept", daemon=True)
            thread.start()
            self._threads.append(thread)
        log.info("agent %s (%s) serving protocol %s on %s; data in %s", self.name,
                 self.device_id, ", ".join(map(str, SUPPORTED_VERSIONS)),
                 ", ".join(f"{h}:{p}" for h, p in self.addresses), self.data_dir)
        if self.use_mdns:
            from workbench_device.mdns import Advertisement

            advertised_host = "0.0.0.0" if self.all_interfaces else self.addresses[-1][0]
            self._advertisement = Advertisement(self.name, self.device_id, advertised_host, port)
            self._advertisement.start()
        return self

    @staticmethod
    def _listen(host: str, port: int) -> socket.socket:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((host, port))
            listener.listen(64)
            listener.settimeout(0.5)  # to notice stop() on systems where close does not wake accept
        except OSError:
            listener.close()
            raise
        return listener

    def _accept_loop(self, listener: socket.socket) -> None:
        logs.context.agent = self
        while not self._stopped.is_set():
            try:
                sock, address = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                if self._stopped.is_set():
                    return
                log.exception("accepting a connection failed")
                continue
            sock.settimeout(None)
            peer = f"{address[0]}:{address[1]}"
            with self._lock:
                full = len(self._connections) >= self.max_connections
                connection = None if full else AgentConnection(self, sock, peer)
                if connection is not None:
                    self._connections.add(connection)
            if connection is None:
                log.warning("refused %s: %d connections already", peer, self.max_connections)
                self._refuse(sock)
                continue
            threading.Thread(target=connection.serve, name=f"wb-device-{peer}",
                             daemon=True).start()

    def _refuse(self, sock: socket.socket) -> None:
        """Tell a connection over the limit that the device is busy (inside TLS, as every
        frame), on a short-lived thread of its own; past a few such threads, just close it."""
        with self._lock:
            if self._refusing >= MAX_REFUSING:
                sock.close()
                return
            self._refusing += 1

        def refuse() -> None:
            try:
                fs = FrameSocket(upgrade(sock, self.tls_context(), REFUSE_TIMEOUT_S))
                fs.send(error_header(Err.BUSY, f"the device has {self.max_connections} "
                                               "connections already; close one and try again"))
                fs.close()
            except (NotTLS, OSError, ssl.SSLError):
                sock.close()
            finally:
                with self._lock:
                    self._refusing -= 1

        threading.Thread(target=refuse, name="wb-device-refuse", daemon=True).start()

    def forget(self, connection: AgentConnection) -> None:
        with self._lock:
            self._connections.discard(connection)

    def connection_count(self) -> int:
        with self._lock:
            return len(self._connections)

    def serve_forever(self) -> None:
        """Block until ``stop()`` (from a signal handler or another thread)."""
        while not self._stopped.wait(1.0):
            pass

    def stop(self) -> None:
        """Stop listening, end every connection, withdraw the mDNS record."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        for listener in self._listeners:
            try:
                listener.shutdown(socket.SHUT_RDWR)  # wakes accept() at once (Linux)
            except OSError:
                pass
            try:
                listener.close()
            except OSError:
                pass
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            connection.close()
        self.scripts.kill_all()
        self.debug_runs.kill_all()
        if self.inference is not None:
            self.inference.stop()
        self.slots.close()
        self.store.close()
        for thread in self._threads:
            thread.join(timeout=2.0)
        if self._advertisement is not None:
            self._advertisement.stop()
        logging.getLogger(logs.LOGGER).removeHandler(self.logs)
        self._release_data_dir()
        log.info("agent stopped")

    def __enter__(self) -> "Agent":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


# --- the command line ---

def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workbench-device-agent",
        description="Serve Workbench's debug link on this device: receive models, run and "
                    "benchmark them, run verification scripts. Pair a host with the code it "
                    "prints.")
    parser.add_argument("--host", default="127.0.0.1",
                        help="an address to listen on besides loopback (default: loopback only)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"TCP port (default {DEFAULT_PORT}; 0 picks a free one)")
    parser.add_argument("--name", help="the name hosts show for this device")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help=f"where models, pairings and logs live (default {default_data_dir()})")
    parser.add_argument("--all-interfaces", action="store_true",
                        help="listen on every network interface")
    parser.add_argument("--no-mdns", action="store_true",
                        help="do not announce the device on the LAN")
    parser.add_argument("--max-sessions", type=int, default=DEFAULT_MAX_SESSIONS,
                        help=f"sessions served at once (default {DEFAULT_MAX_SESSIONS})")
    parser.add_argument("--push-memory-mb", type=int, default=PUSH_MEMORY_BYTES >> 20,
                        help="memory kept for receiving pushed models; a model up to this size "
                             "is received into it and then written to its file (default "
                             f"{PUSH_MEMORY_BYTES >> 20}; 0 writes every push straight to its "
                             "file)")
    parser.add_argument("--inference-port", type=int, default=None,
                        help="loopback port on which apps on this device run the deployed "
                             f"slots, without pairing (default {DEFAULT_INFERENCE_PORT}, unless "
                             "another agent has it; 0 turns it off)")
    parser.add_argument("--json", action="store_true",
                        help="also print the address and pairing code as one JSON line")
    parser.add_argument("--verbose", action="store_true", help="log debug lines too")
    # For tests: how long pairing stays locked after five wrong codes.
    parser.add_argument("--pairing-lock-seconds", type=float, default=LOCK_SECONDS,
                        help=argparse.SUPPRESS)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    if args.max_sessions < 1:
        print("workbench-device-agent: --max-sessions must be at least 1", file=sys.stderr)
        return 2
    if args.inference_port is not None and not 0 <= args.inference_port <= 65535:
        print("workbench-device-agent: --inference-port must be a port from 1 to 65535, or 0 "
              "for no inference endpoint", file=sys.stderr)
        return 2
    if args.push_memory_mb < 0:
        print("workbench-device-agent: --push-memory-mb cannot be negative", file=sys.stderr)
        return 2
    data_dir = args.data_dir or default_data_dir()
    try:
        setup_logging(data_dir, args.verbose)
    except OSError as exc:
        print(f"workbench-device-agent: cannot use the data folder {data_dir}: {exc}; give a "
              "writable one with --data-dir", file=sys.stderr)
        return 1

    def announce_code(code: str) -> None:
        if args.json:
            say(json.dumps({"event": "pairing_code", "pairing_code": code}))
        say(f"Pairing code: {code}")

    try:
        agent = Agent(data_dir, host=args.host, port=args.port, name=args.name,
                      all_interfaces=args.all_interfaces, max_sessions=args.max_sessions,
                      mdns=not args.no_mdns, pairing_lock_s=args.pairing_lock_seconds,
                      push_memory_bytes=args.push_memory_mb << 20,
                      on_pairing_code=announce_code,
                      inference_port=(DEFAULT_INFERENCE_PORT if args.inference_port is None
                                      else args.inference_port or None),
                      inference_optional=args.inference_port is None)
        agent.start()
    except (AgentError, OSError) as exc:
        print(f"workbench-device-agent: {exc}", file=sys.stderr)
        return 1

    # Before the announcement: whoever started the agent may stop it as soon as it reads that
    # the agent listens, and a stop must be the clean one.
    def stop(signum: int, frame: object) -> None:
        agent.stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, stop)
    code = agent.pairing.code
    if args.json:
        say(json.dumps({
            "event": "listening", "host": agent.addresses[-1][0], "port": agent.port,
            "addresses": [f"{h}:{p}" for h, p in agent.addresses], "pairing_code": code,
            "name": agent.name, "device_id": agent.device_id, "protocol": VERSION,
            "agent_version": __version__, "data_dir": str(agent.data_dir), "pid": os.getpid(),
            "cert_fingerprint": agent.identity.fingerprint,
            "inference_port": agent.inference_port}))
    say(f"Pairing code: {code}")
    say(f"Certificate: {agent.fingerprint}")
    for host, port in agent.addresses:
        say(f"Listening on {host}:{port}")
    if agent.inference is not None:
        for host, port in agent.inference.addresses:
            say(f"Inference endpoint on {host}:{port}")

    try:
        agent.serve_forever()
    finally:
        agent.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

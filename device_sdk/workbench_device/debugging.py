"""Debugging a script on the device (protocol version 3): debugpy runs it, and its debug
adapter's byte stream reaches the host only through the paired link.

``debug.start`` runs ``python -m debugpy --listen 127.0.0.1:0 --wait-for-client <script>`` in
the session's folder. debugpy's adapter picks a free port on the device's loopback and writes it
to the file ``DEBUGPY_ADAPTER_ENDPOINTS`` names, which is how the agent learns it (no port is
guessed, none is reachable from the network). ``debug.tunnel``, on a connection of its own,
connects to that port and from then on copies bytes both ways between it and the TLS
connection: the host's debugger speaks the Debug Adapter Protocol to debugpy as if it were
local.

A run ends, and its script is killed with everything it started, when the script exits, when
its time is up, on ``debug.stop``, when its tunnel closes (whichever side closed it: a dropped
link leaves no debugger behind on the device), and when the connection that started it closes
(its session's folder goes with it). debugpy's adapter leaves the script's process group to
daemonize; it exits by itself once the script is gone, and is killed when it does not.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from workbench_device.protocol import ConnectionClosed, Err, Msg, ProtocolError
from workbench_device.scripts import (
    MAX_TIMEOUT_S,
    OUTPUT_TICK_S,
    OutputForwarder,
    check_timeout,
    kill_group,
    script_env,
    script_file,
    tails,
)
from workbench_device.sessions import Session

log = logging.getLogger(__name__)

# debugpy's adapter starts in about a second; a device under load may take longer.
READY_TIMEOUT_S = 60.0
CONNECT_TIMEOUT_S = 10.0
# Once debugpy ended its side of a tunnel, how long the host has to close its own.
TUNNEL_LINGER_S = 5.0
# How long debugpy's adapter may outlive the script before it is killed.
ADAPTER_GRACE_S = 5.0
MAX_LIVE_RUNS_PER_SESSION = 4
# Ended runs kept per session, so that a late debug.tunnel learns how its script ended.
ENDED_RUNS_KEPT = 8
TUNNEL_BUFFER = 64 * 1024
ERROR_TAIL_BYTES = 4 * 1024


def debugpy_version() -> Optional[str]:
    """The version of debugpy the agent's Python would run, None when it has none."""
    import importlib.util

    try:
        if importlib.util.find_spec("debugpy") is None:
            return None
    except (ImportError, ValueError):  # made unimportable (sys.modules holds None for it)
        return None
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # Python 3.7
        return "unknown"
    try:
        return version("debugpy")
    except PackageNotFoundError:
        return "unknown"


def debug_info() -> Optional[Dict[str, str]]:
    """What ``info.ok`` says of debugging: ``{"debugpy": version}``, None without debugpy."""
    found = debugpy_version()
    return {"debugpy": found} if found else None


class DebugRun:
    """One script under debugpy: its process, its output files and its adapter's port."""

    def __init__(self, run_id: str, host_id: str, session: Session, relative: str, program: Path,
                 child: subprocess.Popen, scratch: Path, timeout_s: float,
                 emit: Optional[Callable[[Dict[str, Any]], None]], stream: bool):
        self.id = run_id
        self.host_id = host_id
        self.session = session
        self.relative = relative
        self.program = program
        self.child = child
        self.scratch = scratch
        self.started = time.monotonic()
        self.deadline = self.started + timeout_s
        self.port: Optional[int] = None
        self.exit_code: Optional[int] = None
        self.timed_out = False
        self.ended = threading.Event()
        self.tunnelled = False
        self.stderr_tail = ""
        self._emit = emit
        self._forwarder = (OutputForwarder(self.stdout, self.stderr, emit, {"debug_id": run_id})
                           if stream and emit is not None else None)
        self._lock = threading.Lock()

    @property
    def stdout(self) -> Path:
        return self.scratch / "stdout"

    @property
    def stderr(self) -> Path:
        return self.scratch / "stderr"

    @property
    def endpoints(self) -> Path:
        return self.scratch / "endpoints.json"

    def describe(self) -> Dict[str, Any]:
        """The fields of ``debug.start.ok``."""
        return {"debug_id": self.id, "pid": self.child.pid, "path": self.relative,
                "program": str(self.program), "sandbox": str(self.session.sandbox.root),
                "debugpy": debugpy_version() or "unknown"}

    # --- starting ---

    def wait_until_listening(self, wait_for_client: bool) -> None:
        """Wait until debugpy's adapter listens (its port is then known). A script that ended
        first is an error when it was to wait for the debugger (debugpy failed), and a run that
        ended already otherwise."""
        limit = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < limit:
            port = self._listening_port()
            if port is not None:
                self.port = port
                return
            if self.child.poll() is not None:
                if not wait_for_client:
                    return  # it ran to its end before anyone attached: debug.tunnel says so
                self._collect()
                raise ProtocolError(Err.RUNTIME, f"debugpy stopped before it listened (exit "
                                                 f"code {self.child.returncode}): "
                                                 f"{self.stderr_tail.strip()[-600:] or 'no output'}")
            time.sleep(0.02)
        raise ProtocolError(Err.RUNTIME, f"debugpy did not listen within {READY_TIMEOUT_S:g} s; "
                                         "the device may be overloaded: try again")

    def _listening_port(self) -> Optional[int]:
        try:
            endpoints = json.loads(self.endpoints.read_text(encoding="utf-8") or "null")
        except (OSError, ValueError):
            return None
        if not isinstance(endpoints, dict):
            return None
        if "error" in endpoints:
            raise ProtocolError(Err.RUNTIME, f"debugpy cannot listen: {endpoints['error']}")
        try:
            return int(endpoints["client"]["port"])
        except (KeyError, TypeError, ValueError):
            return None

    # --- while it runs ---

    def watch(self) -> None:
        """Forward the script's output and wait for its end (on a thread of its own)."""
        try:
            while self.child.poll() is None:
                if time.monotonic() >= self.deadline:
                    self.timed_out = True
                    log.info("debugged script %s ran out of time; stopping it", self.relative)
                    kill_group(self.child)
                    break
                if self._forwarder is not None:
                    self._forwarder.pump()
                time.sleep(OUTPUT_TICK_S)
            self.exit_code = self.child.wait()
            if self._forwarder is not None:
                self._forwarder.pump(final=True)
                self._forwarder.close()
        except Exception:  # an emit that failed (the connection is gone): the run still ends
            log.debug("watching debugged script %s failed", self.relative, exc_info=True)
            kill_group(self.child)
            self.exit_code = self.child.wait()
        finally:
            self._collect()
            self.ended.set()
            seconds = time.monotonic() - self.started
            log.info("debugged script %s %s after %.1f s", self.relative,
                     "was stopped" if self.timed_out else f"exited with {self.exit_code}", seconds)
            self._say({"type": Msg.DEBUG_EXITED, "debug_id": self.id,
                       "exit_code": None if self.timed_out else self.exit_code,
                       "timed_out": self.timed_out, "seconds": round(seconds, 3)})
            _end_adapter(self.endpoints)
            shutil.rmtree(self.scratch, ignore_errors=True)

    def _say(self, event: Dict[str, Any]) -> None:
        if self._emit is not None:
            try:
                self._emit(event)
            except Exception:
                pass  # the host is gone; the run ends all the same

    def _collect(self) -> None:
        with self._lock:
            if not self.stderr_tail:
                try:
                    self.stderr_tail = tails(self.stdout, self.stderr)["stderr"][-ERROR_TAIL_BYTES:]
                except OSError:
                    pass

    def kill(self) -> None:
        """End the script (and what it started) unless it ended already."""
        if self.child.poll() is None:
            kill_group(self.child)

    # --- the tunnel ---

    def connect(self) -> socket.socket:
        """A TCP connection to debugpy's adapter, for the run's one tunnel. ProtocolError
        script_exited when the script ended first, busy when a tunnel is open already."""
        with self._lock:
            if self.tunnelled:
                raise ProtocolError(Err.BUSY, f"a debugger is attached to {self.relative} "
                                              "already; a run takes one tunnel")
            ended = self.ended.is_set() or self.child.poll() is not None or self.port is None
            self.tunnelled = not ended
        if ended:
            self.ended.wait(2.0)  # the watcher reads the exit code and the end of the output
            self._collect()
            code = self.exit_code if self.exit_code is not None else self.child.poll()
            raise ProtocolError(Err.SCRIPT_EXITED, f"{self.relative} ended (exit code {code}) "
                                                   "before the debugger attached",
                                exit_code=code, stderr=self.stderr_tail)
        try:
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=CONNECT_TIMEOUT_S)
        except OSError as exc:
            self.kill()
            raise ProtocolError(Err.RUNTIME, f"cannot reach debugpy on the device ({exc}); the "
                                             "run was stopped: start it again") from None
        sock.settimeout(None)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock


def _end_adapter(endpoints: Path) -> None:
    """Kill debugpy's adapter of a run when it is still there a while after its script ended
    (it deletes its endpoints file when it exits). It is found by the file in its environment,
    which only that process has."""
    limit = time.monotonic() + ADAPTER_GRACE_S
    while endpoints.exists() and time.monotonic() < limit:
        time.sleep(0.1)
    if not endpoints.exists() or not os.path.isdir("/proc"):
        return
    marker = f"DEBUGPY_ADAPTER_ENDPOINTS={endpoints}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as environ:
                found = marker in environ.read().split(b"\0")
        except OSError:
            continue
        if found and int(entry) != os.getpid():
            log.info("debugpy's adapter (pid %s) outlived its script; stopping it", entry)
            try:
                os.kill(int(entry), signal.SIGKILL)
            except OSError:
                pass


class DebugRuns:
    """The scripts being debugged on this device, by id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: Dict[str, DebugRun] = {}

    def start(self, session: Session, host_id: str, relative: Any, model_file: Optional[Path],
              timeout_s: Any, wait_for_client: bool,
              emit: Optional[Callable[[Dict[str, Any]], None]], stream: bool) -> DebugRun:
        """Start ``relative`` (a script in the session's folder) under debugpy; the run, once
        debugpy listens. ProtocolError runtime when debugpy is missing or fails, busy past
        MAX_LIVE_RUNS_PER_SESSION."""
        program = script_file(session.sandbox, relative)
        timeout_s = check_timeout(timeout_s, MAX_TIMEOUT_S)
        if debugpy_version() is None:
            raise ProtocolError(Err.RUNTIME, f"debugpy is not installed on the device for "
                                             f"{sys.executable}: install it there (python -m pip "
                                             "install debugpy), then debug again")
        with self._lock:
            live = [r for r in self._runs.values()
                    if r.session is session and not r.ended.is_set()]
            if len(live) >= MAX_LIVE_RUNS_PER_SESSION:
                raise ProtocolError(Err.BUSY, f"this session debugs {len(live)} scripts already; "
                                              "stop one (debug.stop) first")
            self._forget_old(session)
        run_id = secrets.token_hex(8)
        scratch = Path(tempfile.mkdtemp(prefix="wb-debug-"))
        env = script_env(session.sandbox, model_file)
        env["DEBUGPY_ADAPTER_ENDPOINTS"] = str(scratch / "endpoints.json")
        # The check that warns of frozen modules would print on every run; they are off.
        env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
        argv = [sys.executable, "-Xfrozen_modules=off", "-m", "debugpy", "--listen",
                "127.0.0.1:0"] + (["--wait-for-client"] if wait_for_client else []) + [str(program)]
        try:
            with open(scratch / "stdout", "wb") as out, open(scratch / "stderr", "wb") as err:
                child = subprocess.Popen(argv, cwd=str(session.sandbox.root), env=env,
                                         stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                         start_new_session=True)
        except OSError as exc:
            shutil.rmtree(scratch, ignore_errors=True)
            raise ProtocolError(Err.RUNTIME, f"cannot start {sys.executable}: {exc}") from None
        run = DebugRun(run_id, host_id, session, str(relative), program, child, scratch,
                       timeout_s, emit, stream)
        try:
            run.wait_until_listening(wait_for_client)
        except BaseException:
            run.kill()
            child.wait()
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        with self._lock:
            self._runs[run_id] = run
        threading.Thread(target=run.watch, name=f"wb-debug-{run_id}", daemon=True).start()
        log.info("session %s debugs %s (pid %d) with debugpy on loopback port %s", session.id,
                 run.relative, child.pid, run.port)
        return run

    def _forget_old(self, session: Session) -> None:
        ended = [r for r in self._runs.values() if r.session is session and r.ended.is_set()]
        for run in ended[:max(0, len(ended) - ENDED_RUNS_KEPT + 1)]:
            self._runs.pop(run.id, None)

    def find(self, run_id: Any, host_id: Optional[str]) -> DebugRun:
        """The run ``run_id`` that ``host_id`` started; ProtocolError not_found otherwise (a
        run of another host is not said to exist)."""
        if not isinstance(run_id, str) or not run_id:
            raise ProtocolError(Err.BAD_REQUEST, "'debug_id' must be the id debug.start answered")
        with self._lock:
            run = self._runs.get(run_id)
        if run is None or run.host_id != host_id:
            raise ProtocolError(Err.NOT_FOUND, f"no debug run {run_id!r}: it ended with its "
                                               "session, or was never started; start it again")
        return run

    def end_session(self, session: Optional[Session]) -> None:
        """Kill the runs of ``session`` and forget them (it is closing)."""
        if session is None:
            return
        with self._lock:
            runs = [r for r in self._runs.values() if r.session is session]
            for run in runs:
                del self._runs[run.id]
        for run in runs:
            run.kill()
        for run in runs:
            run.ended.wait(ADAPTER_GRACE_S + 2.0)

    def kill_all(self) -> None:
        with self._lock:
            runs = list(self._runs.values())
            self._runs.clear()
        for run in runs:
            run.kill()

    def __len__(self) -> int:
        with self._lock:
            return sum(1 for r in self._runs.values() if not r.ended.is_set())


def pump_tunnel(stream: Any, dap: socket.socket, name: str) -> str:
    """Copy bytes between the host's TLS ``stream`` and debugpy's ``dap`` socket, both ways,
    until either side ends; how it ended ("debugpy" or "host"). When debugpy ends first, the
    host is sent TLS's close_notify (an orderly end) and given TUNNEL_LINGER_S to close."""
    ended_by: List[str] = []

    def to_host() -> None:
        try:
            while True:
                data = dap.recv(TUNNEL_BUFFER)
                if not data:
                    break
                stream.sendall(data)
        except (OSError, ValueError, ConnectionClosed):
            pass
        finally:
            if not ended_by:
                ended_by.append("debugpy")
                stream.close_notify()
                timer = threading.Timer(TUNNEL_LINGER_S, _shut, args=(stream,))
                timer.daemon = True
                timer.start()

    sender = threading.Thread(target=to_host, name=f"wb-tunnel-{name}", daemon=True)
    sender.start()
    buffer = bytearray(TUNNEL_BUFFER)
    view = memoryview(buffer)
    try:
        while True:
            n = stream.recv_into(view)
            if n == 0:
                break
            dap.sendall(view[:n])
    except (OSError, ValueError, ConnectionClosed, ssl.SSLError):
        pass
    finally:
        if not ended_by:
            ended_by.append("host")
        try:
            dap.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sender.join(TUNNEL_LINGER_S)
        dap.close()
    return ended_by[0]


def _shut(stream: Any) -> None:
    try:
        stream.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass

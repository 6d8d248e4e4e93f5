"""Debugging a script on a device: the script is sent to the device and started there under
debugpy, and the debugger on this computer speaks the Debug Adapter Protocol to it through a
tunnel of the paired link (protocol 3; docs/device-protocol.md, section 10).

    run = start_device_debug("local", Path("checks/verify.py"), project_root=project)
    stream = run.open_tunnel()         # sendall / recv / close, like a socket to debugpy
    # attach with pathMappings run.path_mappings: (the device's folder, the project's folder)
    ...
    run.close()                        # ends the run (the script is stopped) and the link

The script goes to the same relative path in the session's folder on the device as it has in
the project, so one path mapping (the session's folder on the device to the project folder)
makes breakpoints set on the project's files bind on the device, and the stack come back with
the project's paths.

A tunnel whose link drops raises ``TunnelClosed`` (a ConnectionError, so a DAP client that
stops on OSError reports its message); the device then stops the script (no debugger is left
behind on it). An orderly end (debugpy closed the session) reads as ``b""``.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.device.errors import DeviceError
from workbench_device.protocol import ConnectionClosed, Msg

log = logging.getLogger(__name__)


class TunnelClosed(ConnectionError):
    """The link carrying a debug session dropped: the message says which device and what now."""


def device_path(script: Path, project_root: Path | None) -> str:
    """Where ``script`` goes in the session's folder on the device: its path in the project
    (with ``/``), or its name when it is outside the project."""
    script = Path(script).resolve()
    if project_root is not None:
        try:
            return script.relative_to(Path(project_root).resolve()).as_posix()
        except ValueError:
            pass
    return script.name


def local_root(script: Path, project_root: Path | None) -> Path:
    """The folder on this computer that the session's folder on the device stands for."""
    script = Path(script).resolve()
    if project_root is not None:
        root = Path(project_root).resolve()
        if root == script.parent or root in script.parents:
            return root
    return script.parent


class DebugTunnel:
    """The byte stream between this computer's debugger and debugpy on the device (socket-like:
    ``sendall``, ``recv``, ``close``). ``recv`` gives ``b""`` at the orderly end; a dropped link
    raises TunnelClosed, once, naming the device."""

    def __init__(self, client, device: str):
        self._client = client
        self._stream = client.fs.sock
        self.device = device
        self._closed = threading.Event()

    def sendall(self, data: bytes) -> None:
        try:
            self._stream.sendall(data)
        except (OSError, ValueError, ConnectionClosed) as exc:
            raise self._dropped(exc) from None

    def recv(self, size: int) -> bytes:
        try:
            return self._stream.recv(size)
        except (OSError, ValueError, ConnectionClosed) as exc:
            if self._closed.is_set():
                return b""  # closed here: an end, not a drop
            raise self._dropped(exc) from None

    def _dropped(self, exc: BaseException) -> OSError:
        if self._closed.is_set():
            return TunnelClosed("the debug session on the device was closed")
        if isinstance(exc, (socket.timeout, TimeoutError)):
            why = "it stopped answering"
        elif isinstance(exc, ssl.SSLEOFError):
            why = "the connection was cut"
        elif isinstance(exc, ConnectionResetError):
            why = "the connection was reset"
        else:
            why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        return TunnelClosed(f"the link to {self.device} dropped during debugging ({why}); the "
                            "script on the device was stopped. Check that the agent still runs "
                            "and the device is reachable, then debug again")

    def close(self) -> None:
        """End the tunnel (the device then stops the script, unless it ended)."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._client.close()

    def shutdown(self, how: int = socket.SHUT_RDWR) -> None:
        """Wake a reader blocked in ``recv`` (it then gets ``b""``)."""
        self._closed.set()
        try:
            self._stream.shutdown(how)
        except OSError:
            pass


@dataclass
class DeviceDebugRun:
    """A script being debugged on a device (``start_device_debug``)."""

    link: Any  # the DeviceLink whose session holds the script: closing it ends the run
    debug_id: str
    script: Path  # on this computer
    path: str  # in the session's folder on the device
    program: str  # its absolute path on the device
    sandbox: str  # the session's folder on the device
    pid: int
    local_root: Path
    debugpy: str = ""
    tunnels: list = field(default_factory=list)

    @property
    def device(self) -> str:
        return self.link.known_name or self.link.name

    @property
    def name(self) -> str:
        return f"{self.script.name} on {self.device}"

    @property
    def path_mappings(self) -> list[tuple[str, str]]:
        """(path on the device, path here): the session's folder is the project folder."""
        return [(self.sandbox, str(self.local_root))]

    def dap_path_mappings(self) -> list[dict]:
        """The same as DAP's ``attach`` takes them."""
        return [{"remoteRoot": remote, "localRoot": local} for remote, local in self.path_mappings]

    def open_tunnel(self) -> DebugTunnel:
        """A new connection to the device carrying the DAP stream of this run (one per run)."""
        client = self.link.tunnel_client(self.debug_id)
        tunnel = DebugTunnel(client, f"{self.device} ({self.link.address})")
        self.tunnels.append(tunnel)
        return tunnel

    def wait_exit(self, timeout: float = 30.0) -> int | None:
        """The script's exit code once the device says it ended (None: stopped at its
        time-out); DeviceError when it does not say so within ``timeout``. (Its output comes
        to the debugger as DAP ``output`` events.)"""
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            event = self.link.next_event(min(1.0, max(0.05, deadline - time.monotonic())))
            if (event is not None and event.get("type") == Msg.DEBUG_EXITED
                    and event.get("debug_id") == self.debug_id):
                return event.get("exit_code")
        raise DeviceError(f"{self.name} did not end within {timeout:g} s")

    def stop(self) -> None:
        """Stop the script on the device (it ends with everything it started)."""
        try:
            self.link.stop_debug(self.debug_id)
        except DeviceError as exc:
            log.info("stopping %s: %s", self.name, exc)

    def close(self) -> None:
        """End the run and its link: the device stops the script and forgets its folder."""
        for tunnel in self.tunnels:
            tunnel.close()
        self.link.close()


def start_device_debug(device, script: Path | str, project_root: Path | str | None = None,
                       model: Path | str | None = None, text: str | None = None,
                       wait: bool = True, timeout_s: float | None = None,
                       devices=None) -> DeviceDebugRun:
    """Send ``script`` (``text`` when given: the editor's unsaved text) to ``device`` (a name,
    HOST:PORT, or an open DeviceLink, which the run then owns) and start it there under debugpy,
    waiting for a debugger unless ``wait`` is false. ``model`` (a model file, pushed and loaded
    first, or a sha256) becomes the script's WORKBENCH_MODEL. DeviceError when the device
    cannot debug (an older agent, no debugpy there: the message says what to install)."""
    from workbench.device.link import DeviceLink

    script = Path(script)
    if text is None and not script.is_file():
        raise DeviceError(f"{script} does not exist: save the script first")
    root = Path(project_root) if project_root is not None else None
    link = device if isinstance(device, DeviceLink) else DeviceLink.open(str(device), devices)
    try:
        path = device_path(script, root)
        loaded = link.load(model) if model is not None else None
        link.put_file(path, text.encode("utf-8") if text is not None else script)
        started = link.start_debug(path, loaded, wait=wait, timeout_s=timeout_s)
    except BaseException:
        link.close()
        raise
    return DeviceDebugRun(link, str(started["debug_id"]), script, path, str(started["program"]),
                          str(started["sandbox"]), int(started["pid"]), local_root(script, root),
                          str(started.get("debugpy") or ""))

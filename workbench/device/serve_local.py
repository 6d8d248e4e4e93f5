"""This computer as a device: ``workbench device serve-local`` starts the agent here, in the
background, as the embedded default device (named ``local`` everywhere a device is named).

The agent (``python -m workbench_device.agent``) keeps its data in ``<user data dir>/local-device/``
and listens on loopback only, on port 7300 when that is free (else on a free port), without
announcing itself on the LAN. Its address and process id are recorded in
``<user data dir>/local-device.json`` so ``workbench device list`` shows it. Since this computer
starts the agent itself, it reads the pairing code from the agent's output and pairs at once:
no code to type.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from workbench.device.errors import DeviceError
from workbench.device.paired import PairedDevice, PairedDevices, format_address, now_iso, user_data_dir
from workbench.platform.processes import command_line, is_alive
from workbench_device.protocol import DEFAULT_PORT

log = logging.getLogger(__name__)

AGENT_FOLDER = "local-device"
RECORD_FILE = "local-device.json"
OUTPUT_FILE = "serve-local.out"
ERRORS_FILE = "serve-local.err"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0


@dataclass
class LocalAgent:
    """The agent serve-local started on this computer."""

    pid: int
    host: str
    port: int
    device_id: str
    name: str
    data_dir: str
    started_at: str = ""
    started: bool = False
    """True when this call started it (False: it was running already)."""
    paired: bool = False
    """True when this computer is paired with it (always, once serve_local returns)."""
    paired_now: bool = False
    """True when this call paired with it (False: it knew this computer already)."""

    @property
    def address(self) -> str:
        return format_address(self.host, self.port)

    def to_json(self) -> dict:
        data = asdict(self)
        data["address"] = self.address
        return data

    @classmethod
    def from_json(cls, data: dict) -> "LocalAgent":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def agent_data_dir() -> Path:
    return user_data_dir() / AGENT_FOLDER


def record_file() -> Path:
    return user_data_dir() / RECORD_FILE


def default_name() -> str:
    return f"{platform.node() or 'this computer'} (local)"


def recorded_local_agent() -> LocalAgent | None:
    """The recorded agent, running or not; None when none was ever started (or the record is
    unreadable)."""
    try:
        data = json.loads(record_file().read_text(encoding="utf-8"))
        return LocalAgent.from_json(data) if isinstance(data, dict) else None
    except (OSError, ValueError, TypeError):
        return None


def running_local_agent() -> LocalAgent | None:
    """The agent serve-local started, when it still runs and accepts connections."""
    agent = recorded_local_agent()
    if agent is None or not _is_our_agent(agent.pid) or not _accepts(agent.host, agent.port):
        return None
    return agent


def serve_local(port: int = DEFAULT_PORT, name: str | None = None,
                devices: PairedDevices | None = None,
                timeout: float = START_TIMEOUT_S) -> LocalAgent:
    """Start the local agent (or find the one running) and make sure this computer is paired
    with it; the agent. DeviceError when it cannot start (with the agent's own message)."""
    from workbench.device.link import pair_device  # link imports this module for `local`

    devices = devices or PairedDevices()
    agent = running_local_agent()
    if agent is None:
        agent = _start(port, name or default_name(), timeout)
    code = _latest_code(Path(agent.data_dir))
    if _paired_with(agent, devices):
        devices.remember(_as_paired(agent, devices))
    elif code is None:
        raise DeviceError(f"the local agent at {agent.address} printed no pairing code; stop it "
                          "with `workbench device serve-local --stop` and start it again")
    else:
        pair_device(agent.address, code, devices, local=True)
        agent.paired_now = True
    agent.paired = True
    return agent


def stop_local(timeout: float = STOP_TIMEOUT_S) -> LocalAgent | None:
    """Stop the local agent; the record of the one stopped, None when none ran."""
    agent = recorded_local_agent()
    if agent is None:
        return None
    running = _is_our_agent(agent.pid)
    if running:
        try:
            os.kill(agent.pid, signal.SIGTERM)
        except ProcessLookupError:
            running = False
        deadline = time.monotonic() + timeout
        while running and _alive(agent.pid):
            if time.monotonic() > deadline:
                os.kill(agent.pid, signal.SIGKILL)
                deadline = time.monotonic() + timeout
            time.sleep(0.05)
    try:
        record_file().unlink()
    except FileNotFoundError:
        pass
    return agent if running else None


# --- starting ---

def _start(port: int, name: str, timeout: float) -> LocalAgent:
    data_dir = agent_data_dir()
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DeviceError(f"cannot create the local agent's folder {data_dir} "
                          f"({exc.strerror or exc})") from None
    if port and not _port_free(port):
        log.info("port %d is taken; the local agent takes a free one", port)
        port = 0
    output, errors = data_dir / OUTPUT_FILE, data_dir / ERRORS_FILE
    command = [sys.executable, "-m", "workbench_device.agent", "--port", str(port),
               "--data-dir", str(data_dir), "--name", name, "--json", "--no-mdns"]
    with open(output, "w", encoding="utf-8") as out, open(errors, "w", encoding="utf-8") as err:
        # Its own session: the agent outlives the command that started it, and a Ctrl+C in
        # that terminal does not reach it.
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                   start_new_session=True, close_fds=True)
    _STARTED.append(process)
    deadline = time.monotonic() + timeout
    while True:
        listening = _listening_line(output)
        if listening is not None:
            break
        if process.poll() is not None:
            raise DeviceError(f"the local agent did not start: {_last_line(errors)}")
        if time.monotonic() > deadline:
            process.kill()
            process.wait()
            raise DeviceError(f"the local agent did not start within {timeout:.0f} s; see {errors}")
        time.sleep(0.05)
    agent = LocalAgent(pid=process.pid, host=str(listening["host"]), port=int(listening["port"]),
                       device_id=str(listening["device_id"]), name=str(listening["name"]),
                       data_dir=str(data_dir), started_at=now_iso(), started=True)
    from workbench.platform.atomic_files import write_text_atomically

    write_text_atomically(record_file(), json.dumps(
        {k: v for k, v in agent.to_json().items() if k not in ("started", "paired", "paired_now", "address")},
        indent=2) + "\n")
    log.info("started the local agent (pid %d) at %s", agent.pid, agent.address)
    return agent


# Popen objects of agents started from this process, kept so none is collected (and warned
# about) while its agent runs on.
_STARTED: list[subprocess.Popen] = []


def _json_lines(path: Path) -> list[dict]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    found = []
    for line in text.splitlines():
        if line.startswith("{") and line.endswith("}"):
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict):
                found.append(data)
    return found


def _listening_line(path: Path) -> dict | None:
    return next((d for d in _json_lines(path) if d.get("event") == "listening"), None)


def _latest_code(data_dir: Path) -> str | None:
    """The pairing code the agent printed last (it prints a new one after each pairing)."""
    codes = [d.get("pairing_code") for d in _json_lines(data_dir / OUTPUT_FILE)
             if d.get("event") in ("listening", "pairing_code")]
    codes = [c for c in codes if isinstance(c, str)]
    return codes[-1] if codes else None


def _paired_with(agent: LocalAgent, devices: PairedDevices) -> bool:
    """Whether the running agent knows this computer's certificate and is the one pinned."""
    pin = devices.pin(agent.device_id)
    if not pin:
        return False
    from workbench_device.client import DeviceClient

    try:
        with DeviceClient(agent.host, agent.port, timeout=10.0, connect_timeout=5.0,
                          identity=devices.keys.identity(), pin=pin) as client:
            return bool(client.hello(devices.host_id()).get("paired"))
    except Exception:
        return False


def _as_paired(agent: LocalAgent, devices: PairedDevices) -> PairedDevice:
    known = devices.get(agent.device_id)
    return PairedDevice(name=agent.name, device_id=agent.device_id, host=agent.host,
                        port=agent.port, paired_at=known.paired_at if known else now_iso(),
                        last_seen=now_iso(), local=True)


# --- processes and ports ---

def _alive(pid: int) -> bool:
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:  # our own child, and it has ended: reaped
            return False
    except ChildProcessError:
        pass
    return is_alive(pid)


def _is_our_agent(pid: int) -> bool:
    """Whether ``pid`` runs and is an agent (not another program that got the id later)."""
    if not pid or not _alive(pid):
        return False
    arguments = command_line(pid)
    if arguments is None:
        return True  # its command cannot be read: the id is all there is to go by
    command = "\0".join(arguments)
    return "workbench_device" in command or "workbench-device-agent" in command


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2.0):
            return True
    except OSError:
        return False


def _port_free(port: int) -> bool:
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def _last_line(path: Path) -> str:
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        lines = []
    if not lines:
        return "it ended without a message"
    return lines[-1].removeprefix("workbench-device-agent: ")

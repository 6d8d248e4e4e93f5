"""Finding devices: agents announcing themselves by mDNS on the LAN, an address the user types
(``HOST:PORT``), and phones on a USB cable through ``adb forward``.

mDNS goes through the zeroconf package, for a few seconds at a time (in a process of its own when
devices are listed, so a window does not keep zeroconf); ``$WORKBENCH_MDNS_INTERFACES``
(addresses, comma-separated) limits it to some interfaces (tests keep it on loopback). adb is
Android's own tool, run as a child process; when it is missing or no phone is attached the error
says what to do.
"""

from __future__ import annotations

import logging
import os
import queue
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from typing import Callable

from workbench.device.errors import AdbError, DeviceError
from workbench.device.paired import format_address
from workbench_device.protocol import DEFAULT_PORT, SERVICE_TYPE

log = logging.getLogger(__name__)

BROWSE_SECONDS = 2.0
MDNS_INTERFACES_ENV = "WORKBENCH_MDNS_INTERFACES"
ADB_TIMEOUT_S = 30.0
USB_PREFIX = "usb"


@dataclass
class SeenDevice:
    """A device found by mDNS (``source`` "mdns") or through adb ("usb")."""

    name: str
    device_id: str
    host: str
    port: int
    source: str
    protocol: int | None = None
    addresses: list[str] = field(default_factory=list)

    @property
    def address(self) -> str:
        return format_address(self.host, self.port)

    def to_json(self) -> dict:
        return {"name": self.name, "device_id": self.device_id, "host": self.host,
                "port": self.port, "address": self.address, "source": self.source,
                "protocol": self.protocol, "addresses": self.addresses}

    @classmethod
    def from_json(cls, data: dict) -> "SeenDevice":
        return cls(str(data["name"]), str(data["device_id"]), str(data["host"]), int(data["port"]),
                   str(data["source"]), data.get("protocol"), list(data.get("addresses") or []))


# --- Addresses ----------------------------------------------------------------------------

_ADDRESS = re.compile(r"\[(?P<v6>[0-9A-Fa-f:.%]+)\]:(?P<port6>\d+)|(?P<host>[A-Za-z0-9_.-]+):(?P<port>\d+)")


def parse_address(text: str) -> tuple[str, int] | None:
    """``(host, port)`` of ``HOST:PORT`` (``[v6]:PORT`` for IPv6); None when ``text`` is not of
    that form. DeviceError for a port out of range."""
    match = _ADDRESS.fullmatch(text.strip())
    if not match:
        return None
    host = match.group("v6") or match.group("host")
    port = int(match.group("port6") or match.group("port"))
    if not 1 <= port <= 65535:
        raise DeviceError(f"{text}: {port} is not a TCP port (1 to 65535); the agent's default "
                          f"is {DEFAULT_PORT}")
    return host, port


# --- mDNS --------------------------------------------------------------------------------

def _interfaces():
    from zeroconf import InterfaceChoice

    chosen = [a.strip() for a in os.environ.get(MDNS_INTERFACES_ENV, "").split(",") if a.strip()]
    return chosen or InterfaceChoice.All


def browse(seconds: float = BROWSE_SECONDS, interfaces: list[str] | None = None,
           stop_when: Callable[[SeenDevice], bool] | None = None) -> list[SeenDevice]:
    """The agents that announce themselves by mDNS within ``seconds`` (sooner when
    ``stop_when(device)`` says so). DeviceError when this machine cannot browse (no zeroconf,
    multicast refused): devices can still be named by HOST:PORT."""
    try:
        from zeroconf import IPVersion, ServiceBrowser, ServiceListener, Zeroconf
    except ImportError:
        raise DeviceError("zeroconf is not installed, so devices on the LAN cannot be found "
                          "(pip install zeroconf); name them by HOST:PORT") from None

    names: "queue.Queue[str]" = queue.Queue()

    class Listener(ServiceListener):
        def add_service(self, zc, type_, name):
            names.put(name)

        def update_service(self, zc, type_, name):
            names.put(name)

        def remove_service(self, zc, type_, name):
            pass

    try:
        zc = Zeroconf(interfaces=interfaces or _interfaces(), ip_version=IPVersion.V4Only)
    except Exception as exc:
        raise DeviceError(f"cannot look for devices on the LAN ({_one_line(exc)}); name them by "
                          "HOST:PORT") from None
    found: dict[str, SeenDevice] = {}
    try:
        browser = ServiceBrowser(zc, SERVICE_TYPE, Listener())
        deadline = time.monotonic() + seconds
        try:
            while (left := deadline - time.monotonic()) > 0:
                try:
                    name = names.get(timeout=min(left, 0.2))
                except queue.Empty:
                    continue
                device = _resolve_service(zc, name, max(0.3, min(left, 2.0)))
                if device is None:
                    continue
                found[device.device_id] = device
                if stop_when is not None and stop_when(device):
                    break
        finally:
            browser.cancel()
    finally:
        zc.close()
    return sorted(found.values(), key=lambda d: (d.name.lower(), d.device_id))


def browse_in_child(seconds: float = BROWSE_SECONDS) -> list[SeenDevice]:
    """``browse(seconds)`` in a process of its own: zeroconf, with asyncio under it (13 MB), loads
    there and goes with it, so a window that lists devices now and then does not keep it.
    DeviceError as ``browse`` raises it."""
    import json
    import sys

    command = [sys.executable, "-m", "workbench.device.discovery", str(seconds)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DeviceError(f"cannot look for devices on the LAN ({_one_line(exc)}); name them by "
                          "HOST:PORT") from None
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        raise DeviceError(lines[-1] if lines else f"looking for devices on the LAN failed (exit status "
                                                  f"{done.returncode}); name them by HOST:PORT")
    return [SeenDevice.from_json(row) for row in json.loads(done.stdout)]


def _resolve_service(zc, service_name: str, seconds: float) -> SeenDevice | None:
    info = zc.get_service_info(SERVICE_TYPE, service_name, int(seconds * 1000))
    if info is None:
        return None
    properties = {_text(k): _text(v) for k, v in (info.properties or {}).items()}
    addresses = list(info.parsed_addresses())
    if not addresses or not properties.get("device_id"):
        return None
    try:
        protocol = int(properties.get("protocol") or 0) or None
    except ValueError:
        protocol = None
    host = next((a for a in addresses if not a.startswith("127.")), addresses[0])
    return SeenDevice(properties.get("name") or service_name.split(".")[0],
                      properties["device_id"], host, int(info.port), "mdns", protocol, addresses)


def _text(value) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


# --- USB through adb ----------------------------------------------------------------------

@dataclass
class UsbDevice:
    """A phone ``adb devices`` lists: its serial, its state ("device" when usable,
    "unauthorized", "offline"…) and its model when adb tells it."""

    serial: str
    state: str
    model: str = ""

    def to_json(self) -> dict:
        return {"serial": self.serial, "state": self.state, "model": self.model}


def find_adb() -> str:
    """The adb program; AdbError saying how to get it when there is none."""
    found = shutil.which("adb")
    if found:
        return found
    for variable in ("ANDROID_HOME", "ANDROID_SDK_ROOT"):
        root = os.environ.get(variable)
        if root:
            candidate = os.path.join(root, "platform-tools", "adb")
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
    raise AdbError("adb is not installed (no `adb` on PATH), so devices on a USB cable cannot be "
                   "reached: install Android's platform tools (Debian/Ubuntu: `sudo apt install "
                   "adb`, macOS: `brew install android-platform-tools`), or name the device by "
                   "HOST:PORT over the network")


def _adb(adb: str, *args: str) -> subprocess.CompletedProcess:
    try:
        done = subprocess.run([adb, *args], capture_output=True, text=True, timeout=ADB_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise AdbError(f"`adb {' '.join(args)}` did not answer within {ADB_TIMEOUT_S:.0f} s; "
                       "restart it with `adb kill-server` and try again") from None
    except OSError as exc:
        raise AdbError(f"{adb} cannot be run ({exc.strerror or exc}); reinstall Android's platform "
                       "tools") from None
    return done


def usb_devices(adb: str | None = None) -> list[UsbDevice]:
    """The phones adb sees (any state). AdbError when adb is missing or its server fails."""
    adb = adb or find_adb()
    done = _adb(adb, "devices", "-l")
    if done.returncode != 0:
        raise AdbError(f"`adb devices` failed: {_last_line(done.stderr or done.stdout)}; restart "
                       "adb with `adb kill-server` and try again", details=done.stderr)
    devices = []
    for line in done.stdout.splitlines():
        line = line.strip()
        if not line or line.startswith(("List of devices", "*")):
            continue
        parts = line.split()
        if len(parts) < 2:
            continue
        model = next((p.split(":", 1)[1] for p in parts[2:] if p.startswith("model:")), "")
        devices.append(UsbDevice(parts[0], parts[1], model.replace("_", " ")))
    return devices


def _usable_device(devices: list[UsbDevice], serial: str | None) -> UsbDevice:
    if serial:
        chosen = next((d for d in devices if d.serial == serial), None)
        if chosen is None:
            listed = ", ".join(d.serial for d in devices) or "none"
            raise AdbError(f"adb sees no device {serial!r} on USB (it sees: {listed}); check the "
                           "serial with `adb devices`")
    else:
        if not devices:
            raise AdbError("no device is attached over USB (`adb devices` lists none): plug the "
                           "phone in, turn on USB debugging in its developer options and accept "
                           "the prompt on its screen")
        ready = [d for d in devices if d.state == "device"]
        if len(ready) > 1:
            listed = ", ".join(f"usb:{d.serial}" + (f" ({d.model})" if d.model else "")
                               for d in ready)
            raise AdbError(f"several devices are attached over USB; name one: {listed}")
        chosen = ready[0] if ready else devices[0]
    if chosen.state == "unauthorized":
        raise AdbError(f"the device {chosen.serial} has not allowed USB debugging from this "
                       "computer: accept the prompt on its screen, then try again")
    if chosen.state != "device":
        raise AdbError(f"the device {chosen.serial} is {chosen.state} for adb: unplug it and plug "
                       "it in again, or restart adb with `adb kill-server`")
    return chosen


def adb_forward(serial: str | None = None, device_port: int = DEFAULT_PORT) -> tuple[str, int]:
    """``("127.0.0.1", port)``: a local port adb forwards to ``device_port`` on the phone
    (``serial``, or the one phone attached). An existing forward is reused. AdbError when adb
    is missing, no phone is attached, or it refuses."""
    adb = find_adb()
    device = _usable_device(usb_devices(adb), serial)
    listed = _adb(adb, "forward", "--list")
    if listed.returncode == 0:
        for line in listed.stdout.splitlines():
            parts = line.split()
            if (len(parts) == 3 and parts[0] == device.serial and parts[2] == f"tcp:{device_port}"
                    and parts[1].startswith("tcp:")):
                return "127.0.0.1", int(parts[1][4:])
    done = _adb(adb, "-s", device.serial, "forward", "tcp:0", f"tcp:{device_port}")
    if done.returncode != 0:
        message = _last_line(done.stderr or done.stdout)
        if "no devices" in message or "not found" in message:
            raise AdbError(f"the device {device.serial} went away before the port could be "
                           "forwarded: check the cable and try again", details=done.stderr)
        raise AdbError(f"adb could not forward a port to the device {device.serial}: {message}",
                       details=done.stderr)
    try:
        port = int(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise AdbError(f"adb forwarded a port but did not say which ({done.stdout.strip()!r}); "
                       "update Android's platform tools") from None
    log.info("adb forwards 127.0.0.1:%d to %s:%d", port, device.serial, device_port)
    return "127.0.0.1", port


def _last_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


# --- Everything known at once -------------------------------------------------------------

PROBE_TIMEOUT_S = 1.5


@dataclass
class KnownDevice:
    """A row of the device list: a paired device, this computer's agent, or a device seen on
    the LAN. ``status`` is "online", "offline", "certificate changed" (refused: see
    ``link.certificate_changed``) or "forgot this computer" (online, but it no
    longer knows this host)."""

    name: str
    device_id: str
    host: str
    port: int
    paired: bool
    status: str
    local: bool = False
    seen_on_lan: bool = False
    last_seen: str = ""
    note: str = ""

    @property
    def address(self) -> str:
        return format_address(self.host, self.port)

    def to_json(self) -> dict:
        return {"name": self.name, "device_id": self.device_id, "host": self.host,
                "port": self.port, "address": self.address, "paired": self.paired,
                "status": self.status, "local": self.local, "seen_on_lan": self.seen_on_lan,
                "last_seen": self.last_seen, "note": self.note}


def probe(host: str, port: int, host_id: str | None = None,
          timeout: float = PROBE_TIMEOUT_S, identity=None, pin: str | None = None) -> dict | None:
    """The agent's hello at ``host:port`` (name, device_id, paired…), None when nothing answers.
    With ``identity`` the connection offers this computer's certificate; with ``pin`` too, a
    device whose certificate is another gives ``{"problem": "certificate changed"}``, and one
    that does not know this computer ``{"problem": "forgot this computer"}``."""
    from workbench_device.client import CertificateChanged, DeviceClient
    from workbench_device.protocol import Err, ProtocolError

    try:
        with DeviceClient(host, port, timeout=timeout, connect_timeout=timeout,
                          identity=identity, pin=pin) as client:
            return client.hello(host_id)
    except CertificateChanged:
        return {"problem": "certificate changed"}
    except ProtocolError as exc:
        if exc.code == Err.NOT_PAIRED:
            return {"problem": "forgot this computer"}
        return None
    except Exception:
        return None


def device_overview(devices=None, browse_lan: bool = True, seconds: float = BROWSE_SECONDS,
                    usb: bool = False) -> dict:
    """Every device this computer knows or sees, as JSON: ``devices`` (paired ones probed for
    being online, this computer's agent, devices announcing themselves on the LAN), ``usb``
    (phones adb sees, when asked) and ``notes`` (why a part is missing: no adb, no mDNS)."""
    from concurrent.futures import ThreadPoolExecutor

    from workbench.device.paired import PairedDevices
    from workbench.device.serve_local import recorded_local_agent, running_local_agent

    devices = devices or PairedDevices()
    notes: list[str] = []
    paired = devices.list()
    host_id = devices.host_id() if paired else None
    identity, pins = None, {}
    if paired:
        try:
            identity = devices.keys.identity()
            pins = {d.device_id: devices.pin(d.device_id) for d in paired}
        except DeviceError as exc:
            notes.append(str(exc))
    local_record = recorded_local_agent()
    local_running = running_local_agent() if local_record else None

    with ThreadPoolExecutor(max_workers=8) as pool:
        lan = pool.submit(browse_in_child, seconds) if browse_lan else None
        hellos = list(pool.map(lambda d: probe(d.host, d.port, host_id, identity=identity,
                                               pin=pins.get(d.device_id)), paired))
        try:
            seen = lan.result() if lan is not None else []
        except DeviceError as exc:
            notes.append(str(exc))
            seen = []

    rows: dict[str, KnownDevice] = {}
    for device, hello in zip(paired, hellos):
        note = ""
        if hello is None:
            status = "offline"
        elif hello.get("problem"):
            status = hello["problem"]
            if status == "certificate changed":
                note = ("its certificate is not the one pinned at pairing; see `workbench device "
                        f"info \"{device.name}\"`")
        elif hello.get("device_id") != device.device_id:
            status, note = "offline", f"another device answers there ({hello.get('name')})"
        elif not hello.get("paired"):
            status = "forgot this computer"
        else:
            status = "online"
        rows[device.device_id] = KnownDevice(device.name, device.device_id, device.host,
                                             device.port, True, status, local=device.local,
                                             last_seen=device.last_seen, note=note)
    if local_record is not None:
        row = rows.get(local_record.device_id)
        if row is None:
            row = KnownDevice(local_record.name, local_record.device_id, local_record.host,
                              local_record.port, False,
                              "online" if local_running else "offline", local=True)
            rows[local_record.device_id] = row
        row.local = True
        row.note = f"this computer's agent, pid {local_record.pid}" if local_running else ""
    for row in rows.values():
        if row.local and not row.note and row.status == "offline":
            row.note = "this computer's agent, stopped: `workbench device serve-local` starts it"
    for device in seen:
        row = rows.get(device.device_id)
        if row is None:
            rows[device.device_id] = KnownDevice(device.name, device.device_id, device.host,
                                                 device.port, False, "online", seen_on_lan=True,
                                                 note="seen on the LAN; pair with the code it prints")
        else:
            row.seen_on_lan = True
            if row.status == "offline" and (row.host, row.port) != (device.host, device.port):
                row.note = f"announced now at {device.address}"
    usb_list: list[dict] = []
    if usb:
        try:
            usb_list = [d.to_json() for d in usb_devices()]
        except AdbError as exc:
            notes.append(str(exc))
    ordered = sorted(rows.values(), key=lambda r: (not r.local, not r.paired, r.name.lower()))
    return {"devices": [r.to_json() for r in ordered], "usb": usb_list, "notes": notes}


def _main(argv: list[str]) -> int:
    """``python -m workbench.device.discovery [SECONDS]`` (``browse_in_child``'s process): the
    devices seen on the LAN as a JSON list on stdout, or browse's error on stderr and exit 1."""
    import json
    import sys

    try:
        found = browse(float(argv[0]) if argv else BROWSE_SECONDS)
    except DeviceError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    print(json.dumps([device.to_json() for device in found]))
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(_main(sys.argv[1:]))

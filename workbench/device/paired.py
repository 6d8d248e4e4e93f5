"""The devices this computer is paired with, and where the device capability keeps its things.

Paired devices are user-level settings, never part of a project: ``<config dir>/devices.json``
holds this computer's ``host_id`` (a random id made once, that devices know this host by) and,
for each device, its name, device id, last address and when it was last seen. The certificate
each device is pinned to, and this computer's own key, are kept by ``HostKeys`` (the OS keyring,
or a file readable by the user only where no keyring is usable).

Windows, the hub and the CLI may all change the file, so each change takes a lock, reads the
file fresh, edits it and writes it back atomically.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from workbench.device.errors import DeviceError
from workbench.device.host_keys import HostKeys
from workbench.platform.locks import locked


DEVICES_FILE = "devices.json"
DATA_DIR_ENV = "WORKBENCH_DATA_DIR"
FILE_VERSION = 1


def user_data_dir() -> Path:
    """The folder for user-level data that is no setting (the local agent's folder, the
    verification history of models outside any project): ``$WORKBENCH_DATA_DIR`` when set
    (tests set it), else the platform's data folder for "workbench"."""
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override)
    import platformdirs  # only needed when there is no override

    return Path(platformdirs.user_data_dir("workbench", appauthor=False))


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class PairedDevice:
    """One paired device as this computer knows it."""

    name: str
    device_id: str
    host: str
    port: int
    paired_at: str = ""
    last_seen: str = ""
    """When a connection to it last succeeded (ISO 8601, UTC)."""
    local: bool = False
    """The agent ``workbench device serve-local`` runs on this computer."""

    @property
    def address(self) -> str:
        return format_address(self.host, self.port)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "PairedDevice":
        """A device from the file; keys this version does not know are ignored, so a newer
        Workbench's file still loads."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["port"] = int(values.get("port") or 0)
        return cls(**values)


def format_address(host: str, port: int) -> str:
    """``host:port``, an IPv6 address in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class PairedDevices:
    """The paired devices in ``<config_dir>/devices.json`` (the user's config folder unless
    ``config_dir`` is given) and their pins in ``keys``."""

    def __init__(self, config_dir: Path | None = None, on_notice=None):
        if config_dir is None:
            from workbench.project.recent import user_config_dir

            config_dir = user_config_dir()
        self.config_dir = Path(config_dir)
        self.file = self.config_dir / DEVICES_FILE
        self.keys = HostKeys(self.config_dir, on_notice)

    # --- reading ---

    def list(self) -> list[PairedDevice]:
        """Every paired device, by name."""
        devices = [PairedDevice.from_json(d) for d in self._read().get("devices", [])]
        return sorted(devices, key=lambda d: (d.name.lower(), d.device_id))

    def get(self, device_id: str) -> PairedDevice | None:
        return next((d for d in self.list() if d.device_id == device_id), None)

    def find(self, name: str) -> list[PairedDevice]:
        """The devices called ``name`` (any case), or whose id is or starts with ``name`` (at
        least 6 characters of it)."""
        wanted = name.strip().lower()
        devices = self.list()
        by_name = [d for d in devices if d.name.lower() == wanted]
        if by_name:
            return by_name
        if len(wanted) >= 6:
            return [d for d in devices if d.device_id.lower().startswith(wanted)]
        return []

    def local(self) -> PairedDevice | None:
        """The agent serve-local started on this computer, when it is paired."""
        return next((d for d in self.list() if d.local), None)

    def fingerprint(self) -> tuple:
        """What a device list shows of the paired devices (who, where, which is local): it
        changes with a pairing, a forgotten device or a new address, not with a connection
        that only notes when a device was last seen. A file that cannot be read is its own
        fingerprint (the listing then says what is wrong)."""
        try:
            devices = self.list()
        except DeviceError as exc:
            return ("unreadable", str(exc))
        return tuple((d.device_id, d.name, d.host, d.port, d.local) for d in devices)

    def host_id(self) -> str:
        """This computer's id as devices know it: made once, then the same for good."""
        host_id = self._read().get("host_id")
        if isinstance(host_id, str) and host_id:
            return host_id
        with self._editing() as data:
            if not data.get("host_id"):
                data["host_id"] = secrets.token_hex(16)
            return data["host_id"]

    # --- changing ---

    def remember(self, device: PairedDevice, pin: str | None = None) -> PairedDevice:
        """Add ``device`` or replace the one with its id; with ``pin`` (its certificate's
        fingerprint), keep that first (DeviceError when it cannot be: nothing is written then)."""
        if pin is not None:
            self.keys.set_pin(device.device_id, pin)
        with self._editing() as data:
            others = [d for d in data.get("devices", []) if d.get("device_id") != device.device_id]
            if device.local:  # one local agent: an older one's entry is no longer local
                for other in others:
                    other["local"] = False
            data["devices"] = [*others, device.to_json()]
        return device

    def seen(self, device_id: str, host: str, port: int, name: str | None = None) -> None:
        """Note that the device answered at ``host:port`` just now (under ``name``)."""
        with self._editing() as data:
            for entry in data.get("devices", []):
                if entry.get("device_id") == device_id:
                    entry.update(host=host, port=int(port), last_seen=now_iso())
                    if name:
                        entry["name"] = name
                    return

    def forget(self, device_id: str) -> bool:
        """Remove the device and its pin; False when it was not paired."""
        with self._editing() as data:
            devices = data.get("devices", [])
            kept = [d for d in devices if d.get("device_id") != device_id]
            data["devices"] = kept
        self.keys.forget(device_id)
        return len(kept) != len(devices)

    def pin(self, device_id: str) -> str | None:
        """The fingerprint of the certificate ``device_id`` was paired with; None when there is
        none."""
        return self.keys.pin(device_id)

    # --- the file ---

    def _read(self) -> dict:
        try:
            text = self.file.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise DeviceError(f"{self.file} cannot be read ({exc.strerror or exc}); check its "
                              "permissions") from None
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise DeviceError(f"{self.file} is not valid JSON ({exc}); fix it, or delete it and "
                              "pair the devices again") from None
        if not isinstance(data, dict) or not isinstance(data.get("devices", []), list):
            raise DeviceError(f"{self.file} is not a paired-devices file; delete it and pair the "
                              "devices again")
        data["devices"] = [d for d in data.get("devices", [])
                           if isinstance(d, dict) and isinstance(d.get("device_id"), str)]
        return data

    @contextlib.contextmanager
    def _editing(self) -> Iterator[dict]:
        """The file's data to change in place; written back atomically when the block ends,
        with other processes kept out meanwhile."""
        from workbench.platform.atomic_files import write_atomically

        try:
            self.config_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DeviceError(f"cannot create the config folder {self.config_dir} "
                              f"({exc.strerror or exc})") from None
        with locked(self.config_dir / (DEVICES_FILE + ".lock")):
            data = self._read()
            data.setdefault("devices", [])
            yield data
            data["version"] = FILE_VERSION
            ordered = {"version": data.pop("version"), **data}
            try:
                write_atomically(self.file, (json.dumps(ordered, indent=2) + "\n").encode(), 0o600)
            except OSError as exc:
                raise DeviceError(f"cannot write {self.file} ({exc.strerror or exc}); check the "
                                  "folder's permissions and free space") from None

"""Announcing the agent on the LAN by mDNS (service type ``_workbench-device._tcp.local.``, TXT
``name``, ``device_id``, ``protocol``), through the zeroconf package when it is installed.
Without it, or when the network refuses multicast, the agent runs all the same and the host
names it by HOST:PORT.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
from typing import Any, List, Optional

from workbench_device.protocol import SERVICE_TYPE, VERSION

log = logging.getLogger(__name__)


def available() -> bool:
    import importlib.util

    return importlib.util.find_spec("zeroconf") is not None


def _instance_name(name: str, device_id: str) -> str:
    # An mDNS instance label is at most 63 bytes; the id's start tells two "Pixel 8" apart.
    label = re.sub(r"[.\x00-\x1f]", " ", name).strip() or "device"
    label = f"{label[:40]} ({device_id[:8]})"
    return f"{label}.{SERVICE_TYPE}"


class Advertisement:
    """The agent's mDNS record while it is published (``start`` returns at once; registering
    takes a second or two of probing, done on a thread of its own)."""

    def __init__(self, name: str, device_id: str, host: str, port: int):
        self.name = name
        self.device_id = device_id
        self.host = host
        self.port = port
        self._zeroconf: Any = None
        self._info: Any = None
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()
        self._stopped = False

    def start(self) -> bool:
        """Begin publishing; False (and a log line saying why) when zeroconf is missing."""
        if not available():
            log.info("zeroconf is not installed: the device is not announced on the LAN "
                     "(pip install zeroconf); hosts reach it by HOST:PORT")
            return False
        self._thread = threading.Thread(target=self._register, name="wb-device-mdns", daemon=True)
        self._thread.start()
        return True

    def _addresses(self) -> List[str]:
        if self.host in ("", "0.0.0.0", "::"):
            from zeroconf import get_all_addresses

            return [a for a in get_all_addresses() if not a.startswith("127.")] or ["127.0.0.1"]
        try:
            return [socket.gethostbyname(self.host)]
        except OSError:
            return [self.host]

    def _register(self) -> None:
        try:
            from zeroconf import InterfaceChoice, IPVersion, ServiceInfo, Zeroconf

            addresses = self._addresses()
            everywhere = self.host in ("", "0.0.0.0", "::")
            info = ServiceInfo(
                SERVICE_TYPE, _instance_name(self.name, self.device_id), port=self.port,
                properties={"name": self.name, "device_id": self.device_id,
                            "protocol": str(VERSION)},
                server=f"wb-{self.device_id[:12]}.local.", parsed_addresses=addresses)
            zc = Zeroconf(interfaces=InterfaceChoice.All if everywhere else addresses,
                          ip_version=IPVersion.V4Only)
            with self._lock:
                if self._stopped:
                    zc.close()
                    return
                self._zeroconf, self._info = zc, info
            try:
                # "workbench-device" is one byte over RFC 6335's 15 for a service name, which
                # zeroconf enforces unless told otherwise; browsers accept it.
                zc.register_service(info, allow_name_change=True, strict=False)
            except TypeError:  # a zeroconf from before the strict flag
                zc.register_service(info, allow_name_change=True)
            log.info("announced on mDNS as %r at %s:%d", info.name, ",".join(addresses), self.port)
        except Exception as exc:  # multicast refused, no interface: the agent goes on
            log.warning("could not announce the device by mDNS (%s); hosts reach it by HOST:PORT",
                        exc)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            zc, info = self._zeroconf, self._info
            self._zeroconf = self._info = None
        if zc is None:
            return
        try:
            if info is not None:
                zc.unregister_service(info)
        except Exception as exc:
            log.debug("mDNS unregister: %s", exc)
        finally:
            zc.close()

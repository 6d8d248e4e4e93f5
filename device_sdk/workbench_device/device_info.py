"""What the agent tells about its device: model, OS, CPU, memory, runtimes."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, Optional

from workbench_device import __version__
from workbench_device.runtimes import available_runtimes


def _read(path: str) -> Optional[str]:
    try:
        text = Path(path).read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None
    text = text.replace("\x00", "").strip()
    return text or None


def _getprop(name: str) -> Optional[str]:
    """An Android system property (None off Android)."""
    if shutil.which("getprop") is None:
        return None
    try:
        done = subprocess.run(["getprop", name], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


@lru_cache(maxsize=1)
def device_model() -> str:
    """The product's name as its maker gives it: "Pixel 8", "Raspberry Pi 5 Model B Rev 1.0"…"""
    android = _getprop("ro.product.model")
    if android:
        maker = _getprop("ro.product.manufacturer")
        return f"{maker} {android}" if maker and not android.startswith(maker) else android
    for path in ("/proc/device-tree/model", "/sys/devices/virtual/dmi/id/product_name",
                 "/sys/firmware/devicetree/base/model"):
        text = _read(path)
        if text:
            return text
    return platform.node() or "unknown"


@lru_cache(maxsize=1)
def os_name() -> str:
    release = _getprop("ro.build.version.release")
    if release:
        return f"Android {release} ({platform.system()} {platform.release()})"
    if platform.system() == "Linux":
        pretty = None
        text = _read("/etc/os-release") or ""
        for line in text.splitlines():
            if line.startswith("PRETTY_NAME="):
                pretty = line.split("=", 1)[1].strip().strip('"')
        if pretty:
            return f"{pretty} (Linux {platform.release()})"
    return platform.platform()


def memory_bytes() -> Optional[int]:
    text = _read("/proc/meminfo") or ""
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            try:
                return int(line.split()[1]) * 1024
            except (IndexError, ValueError):
                return None
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def cpu() -> Dict[str, Any]:
    return {"cores": os.cpu_count() or 1, "arch": platform.machine() or "unknown"}


def describe(name: str, device_id: str, sessions: int) -> Dict[str, Any]:
    """The fields of an ``info`` reply."""
    return {
        "name": name, "device_id": device_id, "model": device_model(), "os": os_name(),
        "cpu": cpu(), "memory_bytes": memory_bytes(), "runtimes": available_runtimes(),
        "python": platform.python_version(), "agent_version": __version__,
        "sessions": sessions,
    }

"""How the device capability writes quantities a person reads, the same in the Devices panel and
in ``workbench device``."""

from __future__ import annotations

BINARY_UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB")
EMPTY = "–"
"""What a table cell shows for a figure that is not known."""


def memory_text(n: int | float | None) -> str:
    """A memory size in binary units, as operating systems report RAM: "7.6 GiB", "512.0 MiB";
    "–" when unknown."""
    if n is None or isinstance(n, bool) or not isinstance(n, (int, float)) or n < 0:
        return EMPTY
    value, unit = float(n), BINARY_UNITS[0]
    for unit in BINARY_UNITS:
        if value < 1024 or unit == BINARY_UNITS[-1]:
            break
        value /= 1024
    return f"{int(n)} bytes" if unit == "bytes" else f"{value:.1f} {unit}"

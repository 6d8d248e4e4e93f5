"""File sizes as people read them, the same in every window and command."""

from __future__ import annotations


def format_size(size: float) -> str:
    """Bytes as "164.5 KB" or "1.2 MB" (1 KB = 1000 bytes, as file managers count)."""
    value = float(size)
    if abs(value) < 1000:
        return f"{value:.0f} B"
    for unit in ("KB", "MB", "GB", "TB"):
        value /= 1000
        if abs(value) < 999.95 or unit == "TB":
            return f"{value:.1f} {unit}"
    return f"{size} B"

"""Showing binary data as a hex dump: offset, sixteen bytes in hex, and the printable ASCII."""

from __future__ import annotations

# A binary file is shown up to this many bytes: enough to recognise a header or a magic number.
HEX_PREVIEW_BYTES = 64 * 1024

BYTES_PER_ROW = 16

_HALF_WIDTH = 8 * 3 - 1  # eight "xx" separated by spaces
_PRINTABLE = bytes(range(0x20, 0x7F))
_ASCII_TABLE = bytes(b if b in _PRINTABLE else ord(".") for b in range(256))


def hex_dump(data: bytes, first_offset: int = 0) -> str:
    """``data`` as rows of ``00000010  xx xx … xx  xx … xx  |ascii...|``, joined by "\\n".

    Offsets start at ``first_offset``; bytes outside printable ASCII show as "." in the ASCII
    column, and a short last row is padded so its ASCII column lines up with the others.
    """
    rows = []
    for start in range(0, len(data), BYTES_PER_ROW):
        row = data[start:start + BYTES_PER_ROW]
        left = row[:8].hex(" ")
        right = row[8:].hex(" ")
        text = row.translate(_ASCII_TABLE).decode("ascii")
        rows.append(
            f"{first_offset + start:08x}  {left:<{_HALF_WIDTH}}  {right:<{_HALF_WIDTH}}  |{text}|"
        )
    return "\n".join(rows)


def format_byte_size(size: int) -> str:
    """A size the way people say it: "512 bytes", "64 KiB", "1.2 MiB"."""
    if size < 1024:
        return f"{size} byte" if size == 1 else f"{size} bytes"
    value = float(size)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            break
    shown = f"{value:.1f}".removesuffix(".0")
    return f"{shown} {unit}"

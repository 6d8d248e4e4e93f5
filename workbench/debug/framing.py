"""The Debug Adapter Protocol's wire format: JSON messages, each after a ``Content-Length``
header (``Content-Length: N\\r\\n\\r\\n`` then N bytes of UTF-8 JSON), as LSP frames them.

Qt-free and I/O-free: ``encode`` makes the bytes of one message, ``MessageReader`` turns bytes
as they arrive (in any pieces) back into messages.
"""

from __future__ import annotations

import json

HEADER_END = b"\r\n\r\n"
# A header larger than this is not DAP: the stream is something else, or garbage.
MAX_HEADER_BYTES = 4096


class FramingError(ValueError):
    """The bytes on the stream are not DAP messages."""


def encode(message: dict) -> bytes:
    """The framed bytes of one message."""
    body = json.dumps(message, separators=(",", ":")).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class MessageReader:
    """Collects bytes and hands back the whole messages among them."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._length: int | None = None

    def feed(self, data: bytes) -> list[dict]:
        """The messages completed by ``data`` (maybe none); FramingError on bytes that are not
        DAP."""
        self._buffer += data
        messages = []
        while True:
            if self._length is None:
                end = self._buffer.find(HEADER_END)
                if end < 0:
                    if len(self._buffer) > MAX_HEADER_BYTES:
                        raise FramingError("no Content-Length header in the first "
                                           f"{MAX_HEADER_BYTES} bytes")
                    return messages
                self._length = _content_length(bytes(self._buffer[:end]))
                del self._buffer[:end + len(HEADER_END)]
            if len(self._buffer) < self._length:
                return messages
            body = bytes(self._buffer[:self._length])
            del self._buffer[:self._length]
            self._length = None
            try:
                message = json.loads(body.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as exc:
                raise FramingError(f"a message is not JSON: {exc}") from None
            if not isinstance(message, dict):
                raise FramingError("a message is not a JSON object")
            messages.append(message)


def _content_length(header: bytes) -> int:
    for line in header.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                break
            if length >= 0:
                return length
    raise FramingError(f"a header without a valid Content-Length: {header[:200]!r}")

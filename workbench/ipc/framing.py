"""Length-prefixed JSON frames: a 4-byte big-endian length, then that many bytes of UTF-8 JSON.

A peer that sends anything else (a length past MAX_FRAME_BYTES, bytes that are not JSON, JSON
that is not an object) gets a FrameError from the decoder; the connection owner answers with a
parse error and drops that peer, and nobody else is affected.
"""

from __future__ import annotations

import struct

import orjson

HEADER = struct.Struct(">I")
MAX_FRAME_BYTES = 16 * 1024 * 1024


class FrameError(ValueError):
    """The bytes received are not a valid frame."""


def encode_frame(message: dict) -> bytes:
    # orjson: a tenth of the stdlib's time per message, which is most of a hub round trip.
    try:
        payload = orjson.dumps(message)
    except TypeError as exc:
        raise FrameError(f"Message cannot be sent as JSON: {exc}") from None
    if len(payload) > MAX_FRAME_BYTES:
        raise FrameError(f"Message of {len(payload)} bytes is larger than {MAX_FRAME_BYTES}.")
    return HEADER.pack(len(payload)) + payload


class FrameDecoder:
    """Collects bytes as they arrive and returns the complete messages among them."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[dict]:
        if not self._buffer and len(data) >= HEADER.size:
            # The common case, one whole frame in one read, without copying it around.
            (length,) = HEADER.unpack_from(data)
            if length == len(data) - HEADER.size:
                return [self._parse(data[HEADER.size :])]
        self._buffer += data
        messages = []
        while len(self._buffer) >= HEADER.size:
            (length,) = HEADER.unpack_from(self._buffer)
            if length > MAX_FRAME_BYTES:
                self._buffer.clear()
                raise FrameError(f"Frame announces {length} bytes; the limit is {MAX_FRAME_BYTES}.")
            end = HEADER.size + length
            if len(self._buffer) < end:
                break
            payload = bytes(self._buffer[HEADER.size : end])
            del self._buffer[:end]
            try:
                messages.append(self._parse(payload))
            except FrameError:
                self._buffer.clear()
                raise
        return messages

    @staticmethod
    def _parse(payload: bytes) -> dict:
        if len(payload) > MAX_FRAME_BYTES:
            raise FrameError(f"Frame announces {len(payload)} bytes; the limit is {MAX_FRAME_BYTES}.")
        try:
            message = orjson.loads(payload)
        except orjson.JSONDecodeError as exc:
            raise FrameError(f"Frame is not UTF-8 JSON: {exc}") from None
        if not isinstance(message, dict):
            raise FrameError("Frame holds JSON that is not an object.")
        return message

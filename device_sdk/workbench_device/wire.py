"""Frames over a stream socket, without copying payloads more than the kernel makes us.

``FrameSocket`` reads a frame's prefix and header, then leaves the payload in the socket for the
caller to take the way it needs: whole into one preallocated buffer (tensors, files), or piece
by piece into a reused buffer (a pushed model going straight to its file).
"""

from __future__ import annotations

import socket
import threading
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from workbench_device.protocol import (
    MAX_HEADER,
    MAX_PAYLOAD,
    PREFIX_SIZE,
    ConnectionClosed,
    encode_header,
    encode_prefix,
    parse_header,
    parse_prefix,
)

# Below this a frame goes out as one buffer (one system call, one TCP segment).
_JOIN_BELOW = 64 * 1024
STREAM_BUFFER = 1024 * 1024


def tune(sock: socket.socket) -> None:
    """Options every debug link socket gets: no Nagle delay for the small request/reply frames,
    keep-alive so a peer that vanished without closing is noticed."""
    for level, option in ((socket.IPPROTO_TCP, socket.TCP_NODELAY),
                          (socket.SOL_SOCKET, socket.SO_KEEPALIVE)):
        try:
            sock.setsockopt(level, option, 1)
        except OSError:
            pass  # not a TCP socket (a socketpair in a test): nothing to tune


class FrameSocket:
    """One connection's frames. Sending is thread-safe (log lines go out from another thread);
    receiving belongs to one thread."""

    def __init__(self, sock: socket.socket, max_header: int = MAX_HEADER,
                 max_payload: int = MAX_PAYLOAD):
        self.sock = sock
        self.max_header = max_header
        self.max_payload = max_payload
        self._send_lock = threading.Lock()
        self._prefix = bytearray(PREFIX_SIZE)

    # --- receiving ---

    def recv_exact_into(self, view: memoryview) -> None:
        """Fill ``view`` from the socket; ConnectionClosed when the peer closes first."""
        got, size = 0, len(view)
        recv_into = self.sock.recv_into
        while got < size:
            n = recv_into(view[got:])
            if n == 0:
                raise ConnectionClosed(f"the connection closed {size - got} bytes before the end "
                                       "of a frame")
            got += n

    def recv_head(self, on_first_byte: Optional[Callable[[], None]] = None
                  ) -> Optional[Tuple[Dict[str, Any], int]]:
        """The next frame's header and payload length (the payload is still to be read), or None
        when the peer closed the connection between frames. FrameError for bytes that are no
        frame; ConnectionClosed when the connection ends inside one. ``on_first_byte`` runs once
        the frame has begun (the agent starts its mid-frame time-out there)."""
        view = memoryview(self._prefix)
        n = self.sock.recv_into(view)
        if n == 0:
            return None
        if on_first_byte is not None:
            on_first_byte()
        if n < PREFIX_SIZE:
            self.recv_exact_into(view[n:])
        header_len, payload_len = parse_prefix(self._prefix, self.max_header, self.max_payload)
        header_bytes = bytearray(header_len)
        self.recv_exact_into(memoryview(header_bytes))
        return parse_header(header_bytes), payload_len

    def recv_payload(self, length: int) -> bytearray:
        """``length`` payload bytes in a buffer of their own (written once, by the kernel)."""
        buffer = bytearray(length)
        self.recv_exact_into(memoryview(buffer))
        return buffer

    def recv_stream(self, length: int, consume: Callable[[memoryview], None],
                    buffer: Optional[bytearray] = None,
                    next_buffer: Optional[Callable[[], bytearray]] = None) -> None:
        """Pass ``length`` payload bytes to ``consume`` piece by piece. Each piece is a view of
        ``buffer`` (reused: ``consume`` must be done with it when it returns), or, with
        ``next_buffer``, of a buffer that call hands out (``consume`` may keep it, to hash it on
        another thread while the next piece arrives). ``consume`` sees every byte that arrived
        even when the connection closes part-way (ConnectionClosed is raised after)."""
        if next_buffer is None:
            buffer = buffer if buffer is not None else bytearray(min(length, STREAM_BUFFER) or 1)
        recv_into = self.sock.recv_into
        remaining = length
        while remaining:
            view = memoryview(next_buffer() if next_buffer is not None else buffer)
            want = min(remaining, len(view))
            got = 0
            # Fill the buffer before handing it on: fewer, larger writes and hash updates.
            while got < want:
                try:
                    n = recv_into(view[got:want])
                except OSError:
                    if got:
                        consume(view[:got])
                    raise
                if n == 0:
                    if got:
                        consume(view[:got])
                    raise ConnectionClosed(f"the connection closed {remaining - got} bytes before "
                                           "the end of a frame")
                got += n
            consume(view[:got])
            remaining -= got

    def discard(self, length: int) -> None:
        """Read and drop ``length`` payload bytes."""
        self.recv_stream(length, lambda _view: None)

    # --- sending ---

    def send(self, header: Dict[str, Any], payload: Any = b"") -> None:
        """Send one frame. ``payload`` is a bytes-like object or a sequence of them (sent in
        order, never joined when large)."""
        parts: Sequence[Any] = payload if isinstance(payload, (list, tuple)) else (payload,)
        views = [memoryview(p).cast("B") for p in parts if len(memoryview(p))]
        payload_len = sum(len(v) for v in views)
        header_bytes = encode_header(header)
        head = encode_prefix(len(header_bytes), payload_len) + header_bytes
        with self._send_lock:
            if payload_len + len(head) < _JOIN_BELOW:
                self.sock.sendall(b"".join([head, *views]))
                return
            self.sock.sendall(head)
            for view in views:
                self.sock.sendall(view)

    def send_file_range(self, header: Dict[str, Any], file: Any, offset: int, count: int) -> None:
        """Send one frame whose payload is ``count`` bytes of the open binary ``file`` from
        ``offset``, by sendfile where the system has it (the bytes never enter Python)."""
        header_bytes = encode_header(header)
        head = encode_prefix(len(header_bytes), count) + header_bytes
        with self._send_lock:
            self.sock.sendall(head)
            sent = self.sock.sendfile(file, offset, count)
            if sent != count:
                raise ConnectionClosed(f"only {sent} of {count} bytes of the file went out")

    def shutdown(self) -> None:
        """Wake a thread blocked reading this socket, and stop the connection."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def close(self) -> None:
        self.shutdown()
        try:
            self.sock.close()
        except OSError:
            pass


"""Byte streams a ``DapClient`` can speak over: a child's stdin/stdout, or a TCP connection."""

from __future__ import annotations

import os
import socket
import threading

from workbench.debug.errors import DebugError


class PipeStream:
    """A child process's stdin and stdout as one socket-like stream (``sendall``, ``recv``,
    ``close``); ``recv`` returns ``b""`` once the child has closed its stdout (it ended)."""

    def __init__(self, write_file, read_file):
        self._write_file = write_file
        self._read_fd = read_file.fileno()
        self._read_file = read_file
        self._lock = threading.Lock()
        self._closed = False

    def sendall(self, data: bytes) -> None:
        with self._lock:
            if self._closed:
                raise BrokenPipeError("the stream is closed")
            self._write_file.write(data)
            self._write_file.flush()

    def recv(self, size: int) -> bytes:
        try:
            return os.read(self._read_fd, size)
        except OSError:
            if self._closed:
                return b""
            raise

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for file in (self._write_file, self._read_file):
            try:
                file.close()
            except OSError:
                pass


def connect(host: str, port: int, timeout: float = 10.0) -> socket.socket:
    """A TCP connection to a debug adapter at ``host:port`` (one started by
    ``debugpy --listen``, say); DebugError when nothing answers there."""
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:
        raise DebugError(f"Nothing answers at {host}:{port} ({exc.strerror or exc}). Start the program "
                         f"with `python -m debugpy --listen {host}:{port} --wait-for-client …` first.") from None
    sock.settimeout(None)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock

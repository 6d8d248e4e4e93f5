"""Frames over a stream socket, without copying payloads more than the kernel makes us.

``FrameSocket`` reads a frame's prefix and header, then leaves the payload in the socket for the
caller to take the way it needs: whole into one preallocated buffer (tensors), piece by piece
into a reused buffer (files), into memory kept for it (a pushed model the device writes to
its file later), or straight into a file (a pushed model too large for that memory: on Linux
with ``os.splice`` the bytes go from the socket to the file through a pipe and never enter
Python; elsewhere through a reused buffer).
"""

from __future__ import annotations

import errno
import os
import select
import socket
import ssl
import sys
import threading
import time
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Union

from workbench_device.protocol import (
    FIRST_VERSION,
    MAX_HEADER,
    MAX_PAYLOAD,
    PREFIX_SIZE,
    SUPPORTED_VERSIONS,
    ConnectionClosed,
    encode_header,
    encode_prefix,
    parse_header,
    parse_prefix,
)

# Below this a frame goes out as one buffer (one system call, one TCP segment).
_JOIN_BELOW = 64 * 1024
STREAM_BUFFER = 1024 * 1024
# The pipe a payload is spliced through (where the system lets a process make it that large).
# Measured on loopback with 50 MB pushes: 1 MiB took the least CPU and time, the 64 KiB default
# the most (four times the system calls).
SPLICE_PIPE_BYTES = 1024 * 1024
_SPLICE = sys.platform.startswith("linux") and hasattr(os, "splice")
_SPLICE_UNSUPPORTED = (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EBADF)


class FileWriteError(Exception):
    """Writing received bytes to the file failed (``error`` is the OSError): the file's fault,
    not the connection's."""

    def __init__(self, error: OSError):
        super().__init__(str(error))
        self.error = error


def tune(sock: socket.socket) -> None:
    """Options every debug link socket gets: no Nagle delay for the small request/reply frames,
    keep-alive so a peer that vanished without closing is noticed."""
    for level, option in ((socket.IPPROTO_TCP, socket.TCP_NODELAY),
                          (socket.SOL_SOCKET, socket.SO_KEEPALIVE)):
        try:
            sock.setsockopt(level, option, 1)
        except OSError:
            pass  # not a TCP socket (a socketpair in a test): nothing to tune


# A tunnel may stay quiet for hours (a program stopped at a breakpoint), and its end must be
# noticed when the other side vanished without closing (a cable pulled): probe after 30 s of
# silence, every 10 s, and give up after 3 unanswered probes.
TUNNEL_KEEPALIVE = (30, 10, 3)


def tune_for_tunnel(sock: Any) -> None:
    """Keep-alive probes soon enough that a tunnel whose peer vanished ends within a minute or
    two rather than the system's default of hours (where the system lets a socket say so)."""
    raw = sock.tls if isinstance(sock, TLSStream) else sock
    idle, interval, count = TUNNEL_KEEPALIVE
    for name, value in (("TCP_KEEPIDLE", idle), ("TCP_KEEPINTVL", interval),
                        ("TCP_KEEPCNT", count)):
        option = getattr(socket, name, None)
        if option is None:
            continue
        try:
            socket.socket.setsockopt(raw, socket.IPPROTO_TCP, option, value)
        except OSError:
            pass


class TLSStream:
    """A TLS socket that one thread reads while others write (a reply and a log line).

    OpenSSL's SSL object must not be used by two threads at once, and Python's ``ssl`` module
    releases the lock around each call into it, so the socket is made non-blocking, every call
    into it takes one lock, and waiting is done outside the lock on the socket itself.
    ``settimeout`` / ``gettimeout`` keep their blocking-socket meaning (socket.timeout)."""

    def __init__(self, sock: ssl.SSLSocket):
        self.tls = sock
        self._timeout: Optional[float] = sock.gettimeout()
        sock.setblocking(False)
        self._lock = threading.Lock()

    def settimeout(self, timeout: Optional[float]) -> None:
        self._timeout = timeout

    def gettimeout(self) -> Optional[float]:
        return self._timeout

    def fileno(self) -> int:
        return self.tls.fileno()

    def getpeercert(self, binary_form: bool = False) -> Any:
        return self.tls.getpeercert(binary_form)

    def _wait(self, writing: bool, deadline: Optional[float]) -> None:
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        fd = self.tls.fileno()
        if fd < 0:
            raise ConnectionClosed("the connection was closed")
        readable, writable, _ = select.select([] if writing else [fd], [fd] if writing else [],
                                              [], timeout)
        if not readable and not writable:
            raise socket.timeout("timed out")

    def _deadline(self) -> Optional[float]:
        return None if self._timeout is None else time.monotonic() + self._timeout

    def recv_into(self, view: Union[memoryview, bytearray], nbytes: int = 0) -> int:
        deadline = self._deadline()
        while True:
            with self._lock:
                try:
                    return self.tls.recv_into(view, nbytes)
                except ssl.SSLWantReadError:
                    writing = False
                except ssl.SSLWantWriteError:
                    writing = True
            self._wait(writing, deadline)

    def recv(self, n: int) -> bytes:
        buffer = bytearray(n)
        got = self.recv_into(buffer)
        return bytes(buffer[:got])

    def sendall(self, data: Any) -> None:
        view = memoryview(data).cast("B")
        deadline = self._deadline()
        while view:
            with self._lock:
                try:
                    # 1 MiB at a time: a writer holds the lock for one slice, not a whole model.
                    sent = self.tls.send(view[:STREAM_BUFFER])
                except ssl.SSLWantWriteError:
                    sent, writing = 0, True
                except ssl.SSLWantReadError:
                    sent, writing = 0, False
            if sent:
                view = view[sent:]
                deadline = self._deadline()
            else:
                self._wait(writing, deadline)

    def shutdown(self, how: int) -> None:
        # The bare socket's shutdown: it wakes a reader waiting on it and leaves the SSL object
        # to the thread that uses it.
        socket.socket.shutdown(self.tls, how)

    def close_notify(self) -> None:
        """Send TLS's close_notify: the peer reads an orderly end (no more bytes) rather than a
        connection cut short. Its answer is not waited for."""
        with self._lock:
            try:
                self.tls.unwrap()
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                pass  # sent; the peer's close_notify has not come (and need not)
            except (OSError, ValueError):
                pass  # the connection is gone already

    def close(self) -> None:
        self.tls.close()


class FrameSocket:
    """One connection's frames. Sending is thread-safe (log lines go out from another thread);
    receiving belongs to one thread. A TLS socket is read and written through ``TLSStream``."""

    def __init__(self, sock: Union[socket.socket, TLSStream], max_header: int = MAX_HEADER,
                 max_payload: int = MAX_PAYLOAD):
        if isinstance(sock, ssl.SSLSocket):
            sock = TLSStream(sock)
        self.sock = sock
        self.max_header = max_header
        self.max_payload = max_payload
        # The version byte of the frames sent: the protocol version the connection's hello
        # chose (until then the first one every TLS agent speaks). Frames of any version this
        # end speaks are read: one pipelined behind a hello may still carry the old one.
        self.version = FIRST_VERSION
        self.versions: Sequence[int] = SUPPORTED_VERSIONS
        self._send_lock = threading.Lock()
        self._prefix = bytearray(PREFIX_SIZE)
        self._pipe: Optional[Tuple[int, int]] = None
        # Splicing moves bytes as the kernel has them: a TLS socket's are ciphertext.
        self._splice = _SPLICE and not isinstance(sock, TLSStream)
        self._file_buffer: Optional[bytearray] = None

    # --- receiving ---

    def recv_exact_into(self, view: memoryview,
                        wrote: Optional[Callable[[int], None]] = None) -> None:
        """Fill ``view`` from the socket, calling ``wrote(n)`` (when given) as each ``n`` bytes
        land; ConnectionClosed when the peer closes first (after ``wrote`` heard of the bytes
        that did arrive)."""
        got, size = 0, len(view)
        recv_into = self.sock.recv_into
        while got < size:
            n = recv_into(view[got:])
            if n == 0:
                raise ConnectionClosed(f"the connection closed {size - got} bytes before the end "
                                       "of a frame")
            got += n
            if wrote is not None:
                wrote(n)

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
        header_len, payload_len = parse_prefix(self._prefix, self.max_header, self.max_payload,
                                               self.versions)
        header_bytes = bytearray(header_len)
        self.recv_exact_into(memoryview(header_bytes))
        return parse_header(header_bytes), payload_len

    def recv_payload(self, length: int) -> bytearray:
        """``length`` payload bytes in a buffer of their own (written once, by the kernel)."""
        buffer = bytearray(length)
        self.recv_exact_into(memoryview(buffer))
        return buffer

    def recv_stream(self, length: int, consume: Callable[[memoryview], None],
                    buffer: Optional[bytearray] = None) -> None:
        """Pass ``length`` payload bytes to ``consume`` piece by piece, each a view of ``buffer``
        (reused: ``consume`` must be done with it when it returns). ``consume`` sees every byte
        that arrived even when the connection closes part-way (ConnectionClosed is raised
        after)."""
        buffer = buffer if buffer is not None else bytearray(min(length, STREAM_BUFFER) or 1)
        view = memoryview(buffer)
        recv_into = self.sock.recv_into
        remaining = length
        while remaining:
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

    def recv_to_file(self, length: int, fd: int, offset: int,
                     wrote: Callable[[int], None]) -> None:
        """Write ``length`` payload bytes to the file ``fd`` from ``offset`` on, calling
        ``wrote(n)`` after each ``n`` bytes are in the file (also for the bytes that arrived
        before the connection closed part-way; ConnectionClosed is raised after them).
        FileWriteError when the file cannot take them."""
        if self._splice and length:
            try:
                done = self._splice_to_file(length, fd, offset, wrote)
            except _NoSplice as no:
                done = no.done
                self._splice = False
            except BaseException:
                self._close_pipe()  # it may hold bytes that belong to no file now
                raise
            length, offset = length - done, offset + done
        if length:
            self._copy_to_file(length, fd, offset, wrote)

    def _copy_to_file(self, length: int, fd: int, offset: int,
                      wrote: Callable[[int], None]) -> None:
        if self._file_buffer is None:
            self._file_buffer = bytearray(STREAM_BUFFER)

        def write(view: memoryview) -> None:
            nonlocal offset
            _pwrite_all(fd, view, offset)
            offset += len(view)
            wrote(len(view))

        self.recv_stream(length, write, self._file_buffer)

    def _splice_to_file(self, length: int, fd: int, offset: int,
                        wrote: Callable[[int], None]) -> int:
        """Socket -> pipe -> file with ``os.splice``; the number of bytes written. _NoSplice
        (with the bytes done so far) when this socket or file cannot be spliced: the caller
        goes on by copying."""
        pipe_read, pipe_write = self._splice_pipe()
        sock_fd = self.sock.fileno()
        timeout = self.sock.gettimeout()
        done = 0
        while done < length:
            try:
                n = os.splice(sock_fd, pipe_write, min(length - done, SPLICE_PIPE_BYTES))
            except BlockingIOError:
                # A socket with a time-out is non-blocking underneath: wait for it here.
                if not _wait_readable(sock_fd, timeout):
                    raise socket.timeout("timed out in the middle of a frame") from None
                continue
            except InterruptedError:
                continue
            except OSError as exc:
                if exc.errno in _SPLICE_UNSUPPORTED and done == 0:
                    raise _NoSplice(0) from None
                raise
            if n == 0:
                raise ConnectionClosed(f"the connection closed {length - done} bytes before the "
                                       "end of a frame")
            self._drain_pipe(pipe_read, n, fd, offset + done, wrote)
            done += n
            if not self._splice:
                raise _NoSplice(done)
        return done

    def _drain_pipe(self, pipe_read: int, n: int, fd: int, offset: int,
                    wrote: Callable[[int], None]) -> None:
        """Move the ``n`` bytes in the pipe to the file at ``offset``."""
        while n:
            try:
                m = os.splice(pipe_read, fd, n, offset_dst=offset)
            except InterruptedError:
                continue
            except OSError as exc:
                if exc.errno not in _SPLICE_UNSUPPORTED:
                    raise FileWriteError(exc) from None
                # The file system takes no splice: read the pipe and write.
                while n:
                    data = os.read(pipe_read, n)
                    _pwrite_all(fd, memoryview(data), offset)
                    offset += len(data)
                    n -= len(data)
                    wrote(len(data))
                self._splice = False
                return
            if m == 0:
                raise FileWriteError(OSError(errno.EIO, "the file took no more bytes"))
            offset += m
            n -= m
            wrote(m)

    def _splice_pipe(self) -> Tuple[int, int]:
        if self._pipe is None:
            pipe_read, pipe_write = os.pipe()
            try:
                import fcntl

                fcntl.fcntl(pipe_write, getattr(fcntl, "F_SETPIPE_SZ", 1031), SPLICE_PIPE_BYTES)
            except (ImportError, OSError):
                pass  # the default size (64 KiB) works too
            self._pipe = (pipe_read, pipe_write)
        return self._pipe

    # --- sending ---

    def send(self, header: Dict[str, Any], payload: Any = b"") -> None:
        """Send one frame. ``payload`` is a bytes-like object or a sequence of them (sent in
        order, never joined when large)."""
        parts: Sequence[Any] = payload if isinstance(payload, (list, tuple)) else (payload,)
        views = [memoryview(p).cast("B") for p in parts if len(memoryview(p))]
        payload_len = sum(len(v) for v in views)
        header_bytes = encode_header(header)
        head = encode_prefix(len(header_bytes), payload_len, self.version) + header_bytes
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
        head = encode_prefix(len(header_bytes), count, self.version) + header_bytes
        with self._send_lock:
            self.sock.sendall(head)
            if isinstance(self.sock, TLSStream):
                sent = _send_file_through(self.sock, file, offset, count)
            else:
                sent = self.sock.sendfile(file, offset, count) if count else 0
            if sent != count:
                raise ConnectionClosed(f"only {sent} of {count} bytes of the file went out")

    def shutdown(self) -> None:
        """Wake a thread blocked reading this socket, and stop the connection."""
        try:
            socket.socket.shutdown(self.sock.tls if isinstance(self.sock, TLSStream) else self.sock,
                                   socket.SHUT_RDWR)
        except OSError:
            pass

    def close(self) -> None:
        self.shutdown()
        try:
            self.sock.close()
        except OSError:
            pass
        self._close_pipe()

    def _close_pipe(self) -> None:
        pipe, self._pipe = self._pipe, None
        for fd in pipe or ():
            try:
                os.close(fd)
            except OSError:
                pass


class _NoSplice(Exception):
    """Splicing does not work for this socket or file; ``done`` bytes were written before."""

    def __init__(self, done: int):
        super().__init__(done)
        self.done = done


def _send_file_through(stream: TLSStream, file: Any, offset: int, count: int) -> int:
    """Send ``count`` bytes of ``file`` from ``offset`` through TLS (sendfile would send the
    plain bytes past it); the number sent."""
    buffer = bytearray(min(count, STREAM_BUFFER) or 1)
    view = memoryview(buffer)
    sent = 0
    file.seek(offset)
    while sent < count:
        n = file.readinto(view[:min(count - sent, len(view))])
        if not n:
            break
        stream.sendall(view[:n])
        sent += n
    return sent


def _pwrite_all(fd: int, view: memoryview, offset: int) -> None:
    """Write all of ``view`` to ``fd`` at ``offset``; FileWriteError when the file fails."""
    done = 0
    try:
        while done < len(view):
            if hasattr(os, "pwrite"):
                done += os.pwrite(fd, view[done:], offset + done)
            else:
                os.lseek(fd, offset + done, os.SEEK_SET)
                done += os.write(fd, view[done:])
    except OSError as exc:
        raise FileWriteError(exc) from None


def _wait_readable(fd: int, timeout: Optional[float]) -> bool:
    """Wait until ``fd`` can be read (False when ``timeout`` seconds pass first)."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
        return bool(poller.poll(None if timeout is None else timeout * 1000.0))
    readable, _, _ = select.select([fd], [], [], timeout)
    return bool(readable)


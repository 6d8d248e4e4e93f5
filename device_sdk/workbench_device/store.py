"""Models kept by content: ``models/<sha256>``, pushed in chunks and resumable.

A push writes ``models/<sha256>.partial`` as the bytes arrive and hashes them on the way; when
the connection drops, what arrived stays, and the next ``push.begin`` for that sha256 (from any
connection) answers with the offset to go on from. ``push.end`` checks the hash and renames the
file into place (after an fsync), so a model under its final name is always whole. One
connection at a time pushes a given model; a second one waits for it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import queue
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Optional

from workbench_device.protocol import Err, ProtocolError, check_sha256

log = logging.getLogger(__name__)

# How long a push.begin waits for another connection's push of the same model to end.
WAIT_FOR_OTHER_PUSH_S = 60.0
DEFAULT_MAX_MODEL_BYTES = 16 * 1024 ** 3


class _HashPipe:
    """Hashes pushed bytes on a thread of its own while the next ones arrive and are written.

    Received bytes go into buffers taken from a small pool (``take``); ``submit`` queues one for
    hashing, and the hashing thread gives it back to the pool. When the pool is empty the
    receiver waits: that is the back-pressure that keeps memory bounded.
    """

    BUFFERS = 8
    BUFFER_BYTES = 1024 * 1024

    def __init__(self, hasher: Any):
        self.hasher = hasher
        self._free: "queue.Queue[bytearray]" = queue.Queue()
        for _ in range(self.BUFFERS):
            self._free.put(bytearray(self.BUFFER_BYTES))
        self._work: "queue.Queue[Optional[memoryview]]" = queue.Queue()
        self._thread = threading.Thread(target=self._hash, name="wb-device-hash", daemon=True)
        self._thread.start()

    def take(self) -> bytearray:
        return self._free.get()

    def submit(self, view: memoryview) -> None:
        self._work.put(view)

    def _hash(self) -> None:
        update = self.hasher.update
        while True:
            view = self._work.get()
            if view is None:
                return
            update(view)  # releases the GIL: runs beside the receiving thread
            self._free.put(view.obj)
            view.release()

    def finish(self) -> None:
        """Wait until every submitted byte is hashed; the pipe is done after this."""
        self._work.put(None)
        self._thread.join()


class _Flusher:
    """Writes a push's file to the disk as it grows (fdatasync on a thread of its own), so the
    fsync before ``push.end`` answers has little left to do."""

    EVERY_BYTES = 8 * 1024 * 1024

    def __init__(self, fd: int):
        self._fd = fd
        self._unsynced = 0
        self._wake = threading.Event()
        self._done = False
        self._thread = threading.Thread(target=self._run, name="wb-device-flush", daemon=True)
        self._thread.start()

    def wrote(self, n: int) -> None:
        self._unsynced += n
        if self._unsynced >= self.EVERY_BYTES:
            self._unsynced = 0
            self._wake.set()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._done:
                return
            try:
                os.fdatasync(self._fd) if hasattr(os, "fdatasync") else os.fsync(self._fd)
            except OSError:
                return  # the final fsync reports it

    def stop(self) -> None:
        self._done = True
        self._wake.set()
        self._thread.join()


class _Upload:
    """A model being received: its partial file, the hash so far, who is pushing it."""

    def __init__(self, sha256: str, size: int, path: Path):
        self.sha256 = sha256
        self.size = size
        self.path = path
        self.received = 0
        self.hasher = hashlib.sha256()
        self.file: Optional[object] = None
        self.owner: Optional[object] = None
        self.write_error: Optional[OSError] = None
        self._pipe: Optional[_HashPipe] = None
        self._flusher: Optional[_Flusher] = None

    def open(self) -> None:
        """Open the partial file at ``received`` (rehashing what is on disk when the hash in
        memory is not known to match it)."""
        exists = self.path.exists()
        self.file = open(self.path, "r+b" if exists else "w+b", buffering=0)
        on_disk = os.fstat(self.file.fileno()).st_size
        if (on_disk != self.received or (on_disk and self.received == 0)
                or self.received > self.size):
            self._rehash(on_disk)
        self.file.seek(self.received)
        self._pipe = _HashPipe(self.hasher)
        self._flusher = _Flusher(self.file.fileno())

    def _rehash(self, on_disk: int) -> None:
        keep = on_disk if on_disk <= self.size else 0
        self.hasher = hashlib.sha256()
        self.file.seek(0)
        left = keep
        buffer = bytearray(1024 * 1024)
        view = memoryview(buffer)
        while left:
            n = self.file.readinto(view[:min(left, len(view))])
            if not n:
                break
            self.hasher.update(view[:n])
            left -= n
        self.received = keep - left
        self.file.truncate(self.received)

    def next_buffer(self) -> bytearray:
        return self._pipe.take()

    def write(self, view: memoryview) -> None:
        """Write a piece (a view of a ``next_buffer`` buffer) and queue it for hashing."""
        try:
            written = 0
            while written < len(view):
                written += self.file.write(view[written:])
        except OSError as exc:
            self.write_error = exc
            raise
        self._flusher.wrote(len(view))
        self._pipe.submit(view)
        self.received += len(view)

    def settle(self) -> None:
        """Wait for the hashing and write-behind threads: ``hasher`` covers ``received``."""
        if self._pipe is not None:
            self._pipe.finish()
            self._pipe = None
        if self._flusher is not None:
            self._flusher.stop()
            self._flusher = None

    def close_file(self) -> None:
        self.settle()
        if self.file is not None:
            try:
                self.file.close()
            except OSError:
                pass
            self.file = None


class ModelStore:
    """The models under ``root`` and the pushes in progress."""

    def __init__(self, root: Path, max_model_bytes: int = DEFAULT_MAX_MODEL_BYTES,
                 wait_for_other_push_s: float = WAIT_FOR_OTHER_PUSH_S):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.max_model_bytes = max_model_bytes
        self.wait_for_other_push_s = wait_for_other_push_s
        self._uploads: Dict[str, _Upload] = {}
        self._changed = threading.Condition()

    def path_of(self, sha256: str) -> Path:
        return self.root / check_sha256(sha256)

    def size_of(self, sha256: str) -> Optional[int]:
        """The size of the stored model, None when it is not here (whole)."""
        try:
            return self.path_of(sha256).stat().st_size
        except FileNotFoundError:
            return None

    def model_file(self, sha256: str) -> Path:
        """The stored model's file; ProtocolError(not_found) when it has not been pushed."""
        path = self.path_of(sha256)
        if not path.is_file():
            raise ProtocolError(Err.NOT_FOUND, f"no model {sha256[:12]}… on this device; push it "
                                               "first")
        return path

    def begin(self, sha256: str, size: object, owner: object) -> int:
        """Start or resume a push by ``owner``: the number of bytes already here (``size`` when
        the model is stored already, so nothing needs sending: ``size_of`` tells that case from
        a push whose bytes all arrived but that has not ended)."""
        sha256 = check_sha256(sha256)
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ProtocolError(Err.BAD_REQUEST, "push.begin needs 'size', the model's size in bytes")
        if size > self.max_model_bytes:
            raise ProtocolError(Err.TOO_LARGE, f"a model of {size} bytes is over this device's "
                                               f"{self.max_model_bytes}-byte limit")
        deadline = time.monotonic() + self.wait_for_other_push_s
        with self._changed:
            while True:
                stored = self.size_of(sha256)
                if stored is not None:
                    if stored != size:
                        raise ProtocolError(Err.BAD_REQUEST, f"the model {sha256[:12]}… here has "
                                            f"{stored} bytes, not {size}: its sha256 or size is "
                                            "wrong")
                    return size
                upload = self._uploads.get(sha256)
                if upload is None or upload.owner is None or upload.owner is owner:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ProtocolError(Err.BUSY, f"another connection is pushing the model "
                                        f"{sha256[:12]}…; try again when it is done")
                self._changed.wait(left)
            if upload is None:
                upload = _Upload(sha256, size, self.root / (sha256 + ".partial"))
                self._uploads[sha256] = upload
            upload.owner = owner
        try:
            if upload.size != size:
                upload.size = size
                upload.close_file()
            if upload.file is None:
                upload.open()
        except OSError as exc:
            self._give_up(upload)
            raise ProtocolError(Err.INTERNAL, f"cannot write the model file: {exc}") from None
        log.info("push of %s… (%d bytes) starts at byte %d", sha256[:12], size, upload.received)
        return upload.received

    def _owned(self, sha256: str, owner: object) -> _Upload:
        sha256 = check_sha256(sha256)
        with self._changed:
            upload = self._uploads.get(sha256)
        if upload is None or upload.owner is not owner:
            raise ProtocolError(Err.BAD_REQUEST, f"no push of {sha256[:12]}… in progress on this "
                                                 "connection; send push.begin first")
        return upload

    def receive(self, sha256: str, offset: object, length: int, owner: object,
                stream: Callable[..., None]) -> int:
        """Append ``length`` bytes at ``offset`` (which must be where the push is), from
        ``stream(consume, next_buffer)``: it fills buffers it gets from ``next_buffer()`` and
        passes views of them to ``consume``. The number of bytes received so far."""
        upload = self._owned(sha256, owner)
        if offset != upload.received:
            raise ProtocolError(Err.BAD_REQUEST, f"push.chunk at offset {offset}, but the device "
                                f"has {upload.received} bytes of this model; go on from there",
                                offset=upload.received)
        if upload.received + length > upload.size:
            raise ProtocolError(Err.BAD_REQUEST, f"this chunk goes past the model's size "
                                                 f"({upload.size} bytes)")
        try:
            stream(upload.write, upload.next_buffer)
        except OSError as exc:
            if upload.write_error is not exc:  # the connection failed, not the file
                raise
            # The file and the hash may disagree now: drop the state; the next push.begin
            # rehashes what is on disk.
            self._give_up(upload)
            raise ProtocolError(Err.INTERNAL, f"cannot write the model file: {exc}") from None
        return upload.received

    def end(self, sha256: str, owner: object) -> int:
        """Check the pushed bytes against their sha256 and store them; the model's size."""
        upload = self._owned(sha256, owner)
        if upload.received != upload.size:
            raise ProtocolError(Err.BAD_REQUEST, f"only {upload.received} of {upload.size} bytes "
                                f"arrived; send the rest from offset {upload.received}",
                                offset=upload.received)
        upload.settle()
        digest = upload.hasher.hexdigest()
        if digest != upload.sha256:
            self._give_up(upload, delete=True)
            raise ProtocolError(Err.BAD_REQUEST, f"the bytes received hash to {digest[:12]}…, not "
                                f"{upload.sha256[:12]}…: the model changed or was corrupted on "
                                "the way; push it again")
        try:
            os.fsync(upload.file.fileno())
            upload.close_file()
            os.replace(upload.path, self.path_of(upload.sha256))
            _fsync_folder(self.root)
        except OSError as exc:
            self._give_up(upload)
            raise ProtocolError(Err.INTERNAL, f"cannot store the model: {exc}") from None
        with self._changed:
            self._uploads.pop(upload.sha256, None)
            self._changed.notify_all()
        log.info("model %s… stored (%d bytes)", upload.sha256[:12], upload.size)
        return upload.size

    def _give_up(self, upload: _Upload, delete: bool = False) -> None:
        upload.close_file()
        if delete:
            try:
                upload.path.unlink()
            except OSError:
                pass
        with self._changed:
            self._uploads.pop(upload.sha256, None)
            self._changed.notify_all()

    def release(self, owner: object) -> None:
        """``owner`` (a connection) is gone: its pushes wait, on disk, to be resumed."""
        with self._changed:
            released = [u for u in self._uploads.values() if u.owner is owner]
            for upload in released:
                # Closed before anyone else can take it over, so no write of theirs goes to a
                # file about to be closed.
                upload.close_file()
                upload.owner = None
            if released:
                self._changed.notify_all()
        for upload in released:
            log.info("push of %s… paused at byte %d of %d (the connection ended); it can resume",
                     upload.sha256[:12], upload.received, upload.size)


def _fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (where the system allows opening folders)."""
    try:
        fd = os.open(str(folder), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)

"""Models kept by content: ``models/<sha256>``, pushed in chunks, resumable, checked by sha256.

A push of a model up to PUSH_MEMORY_BYTES is received into memory the store keeps for it (one
push at a time); a larger one, or one that arrives while the memory is taken, is written to
``models/<sha256>.partial`` as the bytes arrive (from the socket straight into the file:
``FrameSocket.recv_to_file``). The sha256 is computed on a thread of its own. While the bytes
arrive slower than FOLLOW_BELOW_BYTES_PER_S (Wi-Fi, USB 2: the CPU waits for the network anyway)
that thread hashes along, at the lowest CPU priority, so the check is done soon after the last
byte; on a faster link (loopback) hashing along would slow the receiving, which keeps a CPU
busy, so it waits. After ``push.end`` it finishes at normal priority, beside the writing of the
memory to the file and the fsync. Only when all are done is the file renamed to
``models/<sha256>``: a model under its final name is always whole, checked and on disk.

``push.end`` answers once every byte is on the device, with ``verified`` telling whether the
check is over (it waits for the check when at most CHECK_INLINE_BYTES are left to hash, so small
models answer as they always did). Until the check is over, ``model.has``, ``push.begin`` and
``model.load`` of that model wait for it; bytes that do not match their sha256 are deleted, and
``model.load`` then says that the push was corrupt. Measured on loopback with a 50 MB model, the
receiving took 25-35 ms, the fsync 25 ms and the sha256 40 ms: waiting for all three before
answering made a push five times slower than the socket, for nothing the host can use earlier
(a model is loadable only once it is checked and stored, whatever push.end said). Writing the
bytes into the file as they arrived added a third to the receiving (the page cache takes new
pages for each push); a reused buffer's pages are already there.

When the connection drops, what arrived stays (the memory is written to the file then), and the
next push.begin for that sha256 (from any
connection, or after the agent restarts) answers with the offset to go on from. One connection
at a time pushes a given model; another one waits for it.
"""

from __future__ import annotations

import collections
import hashlib
import logging
import mmap
import os
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Dict, Optional, Tuple

from workbench_device.protocol import Err, ProtocolError, check_sha256
from workbench_device.wire import FileWriteError

log = logging.getLogger(__name__)

# How long a push.begin waits for another connection's push of the same model to end.
WAIT_FOR_OTHER_PUSH_S = 60.0
# How long model.has / model.load / push.begin wait for the check of a pushed model.
WAIT_FOR_CHECK_S = 600.0
DEFAULT_MAX_MODEL_BYTES = 16 * 1024 ** 3
# push.end waits for the check when no more than this is left to hash (a few milliseconds).
CHECK_INLINE_BYTES = 4 * 1024 * 1024
# The file is hashed through memory maps of this size (no copy into Python).
HASH_WINDOW = 4 * 1024 * 1024
# The check hashes along while the bytes arrive slower than this (see above), looking every
# FOLLOW_POLL_S, at this nice value.
FOLLOW_BELOW_BYTES_PER_S = 300 * 1000 * 1000
FOLLOW_POLL_S = 0.05
FOLLOWER_NICE = 19
# Models whose push failed its check, remembered to say so on model.load.
FAILED_REMEMBERED = 64
# A push of a model no larger than this is received into memory kept for it, and written to its
# file by the check (see above); larger models, and a second push while one holds the memory,
# go straight to the file. The memory is allocated at the first such push, and let go after
# PUSH_MEMORY_IDLE_S without one.
PUSH_MEMORY_BYTES = 64 * 1024 * 1024
# The memory is written to the file in pieces of this size.
WRITE_PIECE = 4 * 1024 * 1024
# The push memory is let go when no push used it for this long (a phone's memory is not there
# to be held between bursts of pushes).
PUSH_MEMORY_IDLE_S = 30.0

STORED = "stored"


class _Upload:
    """A model being received or checked: its partial file, how far it is written and hashed,
    who is pushing it."""

    def __init__(self, sha256: str, size: int, path: Path,
                 on_checked: Callable[["_Upload", Tuple[str, str]], None]):
        self.sha256 = sha256
        self.size = size
        self.path = path
        self.owner: Optional[object] = None
        self.fd: Optional[int] = None
        self.received = 0  # bytes in the file, or in ``memory`` when it is set
        # Where the bytes arrive when the push is received into memory; the memory is lent by
        # the store and handed back with ``give_back_memory`` once the file holds the bytes.
        self.memory: Optional[memoryview] = None
        self.give_back_memory: Optional[Callable[[], None]] = None
        self.hasher = hashlib.sha256()
        self.hashed = 0  # the hasher covers the file's first ``hashed`` bytes
        self.ended = False  # push.end came: the check finishes and stores the model
        # None until the check is over; then (STORED, "") or (error code, message).
        self.outcome: Optional[Tuple[str, str]] = None
        self._on_checked = on_checked
        self._cond = threading.Condition()
        self._closing = threading.Lock()
        self._stop = False
        self._follower: Optional[threading.Thread] = None
        self._finisher: Optional[threading.Thread] = None

    # --- the file ---

    def open(self) -> None:
        """Open the partial file and go on from what it holds (the file is the truth; the hash
        so far is kept when it covers no more than the file), then follow it with the hash."""
        fd = os.open(str(self.path), os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o600)
        try:
            on_disk = os.fstat(fd).st_size
            if on_disk > self.size:
                os.ftruncate(fd, 0)
                on_disk = 0
        except OSError:
            os.close(fd)
            raise
        self.fd = fd
        if on_disk < self.hashed:
            self.hasher, self.hashed = hashlib.sha256(), 0
        self.received = on_disk
        self._stop = False
        self._follower = threading.Thread(target=self._follow, name="wb-device-hash", daemon=True)
        self._follower.start()

    def wrote(self, n: int) -> None:
        """``n`` more bytes are in the file (called by the receiving thread only; the follower
        looks at ``received`` every FOLLOW_POLL_S rather than being woken for each piece)."""
        self.received += n

    def close(self) -> None:
        """Stop hashing, put what arrived into the file and close it (the upload can be opened
        again to resume)."""
        self._halt()
        with self._closing:  # a stopping agent and the ending connection may both close it
            self.write_out_memory()
            self._close_fd()

    def receive_into_memory(self, memory: memoryview, give_back: Callable[[], None]) -> None:
        """Receive this push into ``memory`` (as long as the model); ``give_back`` returns it to
        the store."""
        self.memory, self.give_back_memory = memory, give_back

    def write_out_memory(self) -> None:
        """Put the bytes received into memory in the file, and go on without the memory (the
        push resumes from the file). A failed write is logged: the file holds less, and the
        next push.begin says from where to go on."""
        memory, self.memory = self.memory, None
        if memory is None:
            return
        try:
            if self.fd is not None:
                self._write_memory(memory, self.received)
        except OSError as exc:
            log.warning("keeping the %d bytes received of %s… failed (%s); its push starts "
                        "again", self.received, self.sha256[:12], exc)
            self.received = 0
        finally:
            self._return_memory()

    def _write_memory(self, memory: memoryview, end: int) -> None:
        offset = 0
        while offset < end:
            offset += os.pwrite(self.fd, memory[offset:min(end, offset + WRITE_PIECE)], offset)

    def _return_memory(self) -> None:
        give_back, self.give_back_memory = self.give_back_memory, None
        if give_back is not None:
            give_back()

    def _close_fd(self) -> None:
        with self._cond:  # the check and a stopping agent may both close it: only one does
            fd, self.fd = self.fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def _halt(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        for thread in (self._follower, self._finisher):
            if thread is not None and thread is not threading.current_thread():
                thread.join()
        self._follower = None

    # --- the check ---

    def _hash_to(self, end: int, following: bool = False) -> bool:
        """Hash the file up to ``end``; False when told to stop first (or, ``following``, when
        push.end came: the finisher goes on from there)."""
        granularity = mmap.ALLOCATIONGRANULARITY
        while self.hashed < end:
            if self._stop or (following and self.ended):
                return False
            start = self.hashed
            n = min(end - start, HASH_WINDOW)
            memory = self.memory
            if memory is not None:
                self.hasher.update(memory[start:start + n])  # releases the GIL
                with self._cond:
                    self.hashed = start + n
                continue
            base = start - start % granularity
            with mmap.mmap(self.fd, start + n - base, access=mmap.ACCESS_READ,
                           offset=base) as mapped:
                whole = memoryview(mapped)
                part = whole[start - base:start - base + n]
                try:
                    self.hasher.update(part)  # releases the GIL
                finally:
                    part.release()
                    whole.release()
            with self._cond:
                self.hashed = start + n
        return True

    def _follow(self) -> None:
        """Hash the bytes as they arrive on a slow link, at the lowest priority, until push.end
        or a stop."""
        _lower_priority()
        first_seen: Optional[Tuple[float, int]] = None  # (when, received) the bytes began coming
        try:
            while True:
                with self._cond:
                    if not self._stop and not self.ended:
                        self._cond.wait(FOLLOW_POLL_S)
                    if self._stop or self.ended:
                        return
                end = self.received
                if first_seen is None:
                    first_seen = (time.monotonic(), end)
                    continue
                seconds = time.monotonic() - first_seen[0]
                if (end - first_seen[1]) / seconds >= FOLLOW_BELOW_BYTES_PER_S:
                    continue  # a fast link: leave the CPU to the receiving
                if not self._hash_to(end, following=True):
                    return
        except (OSError, ValueError) as exc:
            # The finisher hashes the file from the start instead.
            log.warning("hashing %s… while it arrived failed (%s)", self.sha256[:12], exc)
            with self._cond:
                self.hasher, self.hashed = hashlib.sha256(), 0

    def finish(self) -> None:
        """Every byte is here (``ended`` is set): stop following, check and store on a thread
        of normal priority (``on_checked`` is called with the outcome when that is over)."""
        with self._cond:
            self.ended = True
            stopped = self._stop
            self._cond.notify_all()
        if self._follower is not None:
            self._follower.join()
            self._follower = None
        if stopped:  # the agent stopped after push.end, before the check began
            self._conclude((Err.INTERNAL, "the agent stopped before the model was checked; push "
                                          "it again"), delete=False)
            return
        self._finisher = threading.Thread(target=self._finish, name="wb-device-check",
                                          daemon=True)
        self._finisher.start()

    def _finish(self) -> None:
        try:
            self._check_and_store()
        except Exception as exc:  # whoever waits for the outcome must get one
            log.exception("checking %s… failed", self.sha256[:12])
            self._conclude((Err.INTERNAL, f"the agent failed checking the model: {exc}"),
                           delete=False)

    def _check_and_store(self) -> None:
        sync_error: list = []
        memory = self.memory

        def write_and_sync() -> None:
            # Not cut short by a stop: the file must hold every byte that arrived, so that the
            # push can be checked again after a restart.
            try:
                if memory is not None:
                    self._write_memory(memory, self.size)
                (os.fdatasync if hasattr(os, "fdatasync") else os.fsync)(self.fd)
            except OSError as exc:
                sync_error.append(exc)

        syncing = threading.Thread(target=write_and_sync, name="wb-device-sync", daemon=True)
        syncing.start()  # the disk writes while the CPU hashes
        try:
            done = self._hash_to(self.size)
        except (OSError, ValueError) as exc:
            syncing.join()
            self._drop_memory()
            self._conclude((Err.INTERNAL, f"cannot read the pushed model to check it: {exc}"),
                           delete=False)
            return
        syncing.join()
        self._drop_memory()
        if not done:
            self._conclude((Err.INTERNAL, "the agent stopped before the model was checked; push "
                                          "it again"), delete=False)
            return
        digest = self.hasher.hexdigest()
        if digest != self.sha256:
            self._conclude((Err.BAD_REQUEST, f"the bytes received hash to {digest[:12]}…, not "
                                             f"{self.sha256[:12]}…: the model changed or was "
                                             "corrupted on the way; push it again"), delete=True)
            return
        if sync_error:
            self._conclude((Err.INTERNAL, f"cannot store the model: {sync_error[0]}"),
                           delete=False)
            return
        self._close_fd()
        final = self.path.with_name(self.sha256)
        try:
            os.replace(self.path, final)
            _fsync_folder(self.path.parent)
        except OSError as exc:
            self._conclude((Err.INTERNAL, f"cannot store the model: {exc}"), delete=False)
            return
        log.info("model %s… stored (%d bytes)", self.sha256[:12], self.size)
        self._conclude((STORED, ""), delete=False)

    def _drop_memory(self) -> None:
        """The file holds the bytes (or failed to take them, which the check reports): the
        memory goes back to the store."""
        if self.memory is not None:
            self.memory = None
            self._return_memory()

    def _conclude(self, outcome: Tuple[str, str], delete: bool) -> None:
        self._close_fd()
        if delete:
            try:
                self.path.unlink()
            except OSError:
                pass
        if outcome[0] != STORED:
            log.warning("model %s… was not stored: %s", self.sha256[:12], outcome[1])
        self._on_checked(self, outcome)


def _lower_priority() -> None:
    """Give the calling thread the lowest CPU priority (Linux, where a thread has a nice value of
    its own; elsewhere the call would renice the whole process, so nothing is done)."""
    if not sys.platform.startswith("linux") or not hasattr(threading, "get_native_id"):
        return
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), FOLLOWER_NICE)
    except (OSError, AttributeError):
        pass


class ModelStore:
    """The models under ``root``, the pushes in progress and the checks under way."""

    def __init__(self, root: Path, max_model_bytes: int = DEFAULT_MAX_MODEL_BYTES,
                 wait_for_other_push_s: float = WAIT_FOR_OTHER_PUSH_S,
                 wait_for_check_s: float = WAIT_FOR_CHECK_S,
                 push_memory_bytes: int = PUSH_MEMORY_BYTES,
                 push_memory_idle_s: float = PUSH_MEMORY_IDLE_S):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.max_model_bytes = max_model_bytes
        self.wait_for_other_push_s = wait_for_other_push_s
        self.wait_for_check_s = wait_for_check_s
        self._uploads: Dict[str, _Upload] = {}
        self._failed: "collections.OrderedDict[str, str]" = collections.OrderedDict()
        self._changed = threading.Condition()
        self.push_memory_bytes = max(0, push_memory_bytes)
        self._push_memory: Optional[bytearray] = None
        self._push_memory_lent = False
        self._push_memory_idle_s = push_memory_idle_s
        self._push_memory_returned = 0.0
        self._closed = False

    @property
    def holds_push_memory(self) -> bool:
        """Whether the memory for receiving pushes is allocated now."""
        with self._changed:
            return self._push_memory is not None

    def _let_idle_memory_go(self) -> None:
        with self._changed:
            idle = time.monotonic() - self._push_memory_returned
            if not self._push_memory_lent and idle >= self._push_memory_idle_s * 0.99:
                self._push_memory = None

    def _lend_memory(self, upload: _Upload) -> None:
        """Let ``upload`` receive into the store's push memory when it is free and the model
        fits (a reused buffer: its pages are already the process's, where a new one would fault
        each page in on the first write, which costs more than writing to the file)."""
        if upload.size > self.push_memory_bytes or upload.received or upload.memory is not None:
            return
        with self._changed:
            if self._push_memory_lent or self._closed:
                return
            if self._push_memory is None:
                self._push_memory = bytearray(self.push_memory_bytes)
            self._push_memory_lent = True
            memory = memoryview(self._push_memory)[:upload.size]

        def give_back() -> None:
            with self._changed:
                self._push_memory_lent = False
                self._push_memory_returned = time.monotonic()
            timer = threading.Timer(self._push_memory_idle_s, self._let_idle_memory_go)
            timer.daemon = True
            timer.start()

        upload.receive_into_memory(memory, give_back)

    def path_of(self, sha256: str) -> Path:
        return self.root / check_sha256(sha256)

    def size_of(self, sha256: str) -> Optional[int]:
        """The size of the stored model, None when it is not here (whole and checked); does not
        wait for a check under way (``stored_size`` does)."""
        try:
            return self.path_of(sha256).stat().st_size
        except FileNotFoundError:
            return None

    def stored_size(self, sha256: str) -> Optional[int]:
        """``size_of`` once the check of a push of that model, if one is under way, is over."""
        self.wait_for_check(sha256)
        return self.size_of(sha256)

    def wait_for_check(self, sha256: str) -> None:
        """Return when no check of ``sha256`` is under way; ProtocolError(busy) when one takes
        longer than ``wait_for_check_s``."""
        sha256 = check_sha256(sha256)
        deadline = time.monotonic() + self.wait_for_check_s
        with self._changed:
            while True:
                upload = self._uploads.get(sha256)
                if upload is None or not upload.ended:
                    return
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ProtocolError(Err.BUSY, f"the device is still checking the model "
                                        f"{sha256[:12]}…; try again in a moment")
                self._changed.wait(left)

    def push_error(self, sha256: str) -> Optional[str]:
        """Why the last push of ``sha256`` was not stored (None when it was, or when none
        failed)."""
        with self._changed:
            return self._failed.get(check_sha256(sha256))

    def model_file(self, sha256: str) -> Path:
        """The stored model's file (after its check, when one is under way); ProtocolError
        (not_found) when it has not been pushed, or its push failed the check."""
        self.wait_for_check(sha256)
        path = self.path_of(sha256)
        if path.is_file():
            return path
        failure = self.push_error(sha256)
        if failure:
            raise ProtocolError(Err.NOT_FOUND, f"the model {sha256[:12]}… is not on this device: "
                                               f"its last push failed ({failure})")
        raise ProtocolError(Err.NOT_FOUND, f"no model {sha256[:12]}… on this device; push it "
                                           "first")

    def begin(self, sha256: str, size: object, owner: object) -> Tuple[int, bool]:
        """Start or resume a push by ``owner``: the number of bytes already here, and whether
        the model is stored already (then the offset is ``size`` and nothing needs sending)."""
        sha256 = check_sha256(sha256)
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ProtocolError(Err.BAD_REQUEST, "push.begin needs 'size', the model's size in "
                                                 "bytes")
        if size > self.max_model_bytes:
            raise ProtocolError(Err.TOO_LARGE, f"a model of {size} bytes is over this device's "
                                               f"{self.max_model_bytes}-byte limit")
        deadline = time.monotonic() + self.wait_for_other_push_s
        check_deadline = time.monotonic() + self.wait_for_check_s
        with self._changed:
            while True:
                upload = self._uploads.get(sha256)
                checking = upload is not None and upload.ended
                if not checking:
                    stored = self.size_of(sha256)
                    if stored is not None:
                        if stored != size:
                            raise ProtocolError(Err.BAD_REQUEST, f"the model {sha256[:12]}… here "
                                                f"has {stored} bytes, not {size}: its sha256 or "
                                                "size is wrong")
                        return size, True
                    if upload is None or upload.owner is None or upload.owner is owner:
                        break
                left = (check_deadline if checking else deadline) - time.monotonic()
                if left <= 0:
                    doing = "checking" if checking else "receiving the model from another host:"
                    raise ProtocolError(Err.BUSY, f"the device is still {doing} "
                                        f"{sha256[:12]}…; try again when it is done")
                self._changed.wait(left)
            if upload is None:
                upload = _Upload(sha256, size, self.root / (sha256 + ".partial"), self._checked)
                self._uploads[sha256] = upload
            self._failed.pop(sha256, None)
            upload.owner = owner
        try:
            if upload.size != size:
                upload.close()
                upload.size = size
            if upload.fd is None:
                upload.open()
            self._lend_memory(upload)
        except OSError as exc:
            self._give_up(upload)
            raise ProtocolError(Err.INTERNAL, f"cannot write the model file: {exc}") from None
        log.info("push of %s… (%d bytes) starts at byte %d", sha256[:12], size, upload.received)
        return upload.received, False

    def _owned(self, sha256: str, owner: object) -> _Upload:
        sha256 = check_sha256(sha256)
        with self._changed:
            upload = self._uploads.get(sha256)
        if upload is None or upload.owner is not owner or upload.ended:
            raise ProtocolError(Err.BAD_REQUEST, f"no push of {sha256[:12]}… in progress on this "
                                                 "connection; send push.begin first")
        return upload

    def receive(self, sha256: str, offset: object, length: int, owner: object,
                to_file: Callable[[int, int, Callable[[int], None]], None],
                to_memory: Optional[Callable[[memoryview, Callable[[int], None]], None]] = None
                ) -> int:
        """Append ``length`` bytes at ``offset`` (which must be where the push is) with
        ``to_memory(view, wrote)`` when the push is received into memory, else with
        ``to_file(fd, offset, wrote)``; each puts the bytes in place and calls ``wrote(n)`` as
        they land. The number of bytes received so far."""
        upload = self._owned(sha256, owner)
        if offset != upload.received:
            raise ProtocolError(Err.BAD_REQUEST, f"push.chunk at offset {offset}, but the device "
                                f"has {upload.received} bytes of this model; go on from there",
                                offset=upload.received)
        if upload.received + length > upload.size:
            raise ProtocolError(Err.BAD_REQUEST, f"this chunk goes past the model's size "
                                                 f"({upload.size} bytes)")
        if upload.memory is not None and to_memory is None:
            upload.write_out_memory()
        if upload.memory is not None:
            start = upload.received
            to_memory(upload.memory[start:start + length], upload.wrote)
            return upload.received
        try:
            to_file(upload.fd, upload.received, upload.wrote)
        except FileWriteError as exc:
            # Drop the state; the next push.begin goes on from what the file holds.
            self._give_up(upload)
            raise ProtocolError(Err.INTERNAL, f"cannot write the model file: "
                                              f"{exc.error.strerror or exc.error}") from None
        return upload.received

    def end(self, sha256: str, owner: object,
            start_check: Optional[Callable[[Callable[[], None]], None]] = None
            ) -> Tuple[int, bool]:
        """Every byte is here: the model's size, and whether it is checked and stored already
        (ProtocolError when the check failed). Otherwise the check goes on in the background:
        started at once, or handed to ``start_check`` to start later (the agent starts it once
        the push.end reply is out: the check's threads, hashing and writing, would otherwise
        take every CPU before the reply could be sent)."""
        upload = self._owned(sha256, owner)
        if upload.received != upload.size:
            raise ProtocolError(Err.BAD_REQUEST, f"only {upload.received} of {upload.size} bytes "
                                f"arrived; send the rest from offset {upload.received}",
                                offset=upload.received)
        with self._changed:  # from here on the check owns the upload: nobody takes it over
            upload.owner = None
            upload.ended = True
        if upload.size - upload.hashed > CHECK_INLINE_BYTES:
            (start_check or (lambda start: start()))(upload.finish)
            return upload.size, False
        upload.finish()
        with self._changed:
            while upload.outcome is None:
                self._changed.wait()
        code, message = upload.outcome
        if code != STORED:
            raise ProtocolError(code, message)
        return upload.size, True

    def _checked(self, upload: _Upload, outcome: Tuple[str, str]) -> None:
        with self._changed:
            upload.outcome = outcome
            if self._uploads.get(upload.sha256) is upload:
                del self._uploads[upload.sha256]
            if outcome[0] != STORED:
                self._failed[upload.sha256] = outcome[1]
                while len(self._failed) > FAILED_REMEMBERED:
                    self._failed.popitem(last=False)
            self._changed.notify_all()

    def _give_up(self, upload: _Upload) -> None:
        upload.close()
        with self._changed:
            if self._uploads.get(upload.sha256) is upload:
                del self._uploads[upload.sha256]
            self._changed.notify_all()

    def release(self, owner: object) -> None:
        """``owner`` (a connection) is gone: its pushes wait, on disk, to be resumed."""
        with self._changed:
            released = [u for u in self._uploads.values() if u.owner is owner and not u.ended]
        for upload in released:
            # Closed before anyone else can take it over, so no write of theirs goes to a file
            # about to be closed.
            upload.close()
            log.info("push of %s… paused at byte %d of %d (the connection ended); it can resume",
                     upload.sha256[:12], upload.received, upload.size)
        if released:
            with self._changed:
                for upload in released:
                    upload.owner = None
                self._changed.notify_all()

    def close(self) -> None:
        """Stop every push and check (the agent is stopping); what is on disk can be resumed."""
        with self._changed:
            self._closed = True
            uploads = list(self._uploads.values())
        for upload in uploads:
            upload.close()


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

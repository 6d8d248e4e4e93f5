"""Sessions: one per connection that asks for one, each with a sandbox folder of its own.

A path in ``file.put`` / ``file.get`` / ``script.run`` is relative to the session's sandbox and
must stay inside it, after every symbolic link is followed: absolute paths, ``..`` and links
that point out are refused with the error code ``sandbox``. (A verification script the host
runs is the user's own code and runs with the agent's rights; the path checks keep one session's
*requests* out of another session's files and out of the rest of the device.)
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import stat
import threading
import time
from pathlib import Path, PurePosixPath
from typing import Callable, Dict, List, Optional, Tuple

from workbench_device.atomic import replace_file
from workbench_device.protocol import Err, ProtocolError

log = logging.getLogger(__name__)

DEFAULT_MAX_SESSIONS = 16


class Sandbox:
    """A folder that a session's paths cannot leave."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.real_root = Path(os.path.realpath(self.root))

    def _inside(self, path: Path) -> bool:
        real = Path(os.path.realpath(path))
        return real == self.real_root or self.real_root in real.parents

    def resolve(self, relative: object) -> Path:
        """The path ``relative`` names in the sandbox; ProtocolError(sandbox) when it is absolute,
        climbs out with ``..``, or leads out through a symbolic link."""
        if not isinstance(relative, str) or not relative.strip():
            raise ProtocolError(Err.BAD_REQUEST, "'path' must be a non-empty path relative to the "
                                                 "session's folder")
        if "\x00" in relative:
            raise ProtocolError(Err.SANDBOX, "a path cannot contain a NUL character")
        pure = PurePosixPath(relative)
        if pure.is_absolute() or relative.startswith("\\"):
            raise ProtocolError(Err.SANDBOX, f"{relative!r} is absolute; paths are relative to "
                                             "the session's folder")
        if ".." in pure.parts:
            raise ProtocolError(Err.SANDBOX, f"{relative!r} leaves the session's folder (..)")
        path = self.root.joinpath(*pure.parts)
        if not self._inside(path):
            raise ProtocolError(Err.SANDBOX, f"{relative!r} leads out of the session's folder "
                                             "through a symbolic link")
        return path

    def put(self, relative: object, size: int,
            stream: Callable[[Callable[[memoryview], None]], None]) -> Path:
        """Write ``size`` bytes from ``stream`` to ``relative`` (atomically: a temporary file in
        the same folder, renamed over the target)."""
        path = self.resolve(relative)
        if path == self.root:
            raise ProtocolError(Err.BAD_REQUEST, "'path' names the session's folder itself")
        self._check_no_file_on_the_way(relative, path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            # A file appeared on the way after the check (a script running beside the put).
            self._check_no_file_on_the_way(relative, path)
            raise
        if not self._inside(path.parent):  # a link swapped in while the folders were made
            raise ProtocolError(Err.SANDBOX, f"{relative!r} leads out of the session's folder")
        if path.is_dir() and not path.is_symlink():
            raise ProtocolError(Err.BAD_REQUEST, f"{relative!r} is a folder")
        def write_stream(out) -> None:
            def write(view: memoryview) -> None:
                done = 0
                while done < len(view):
                    done += out.write(view[done:])
            stream(write)

        replace_file(path, write_stream, prefix=".put-")
        return path

    def _check_no_file_on_the_way(self, relative: object, path: Path) -> None:
        """ProtocolError(bad_request) naming the first folder of ``path`` that is a file (or
        anything else but a folder): the put could not create the folders on its way."""
        for parent in reversed(list(path.relative_to(self.root).parents)[:-1]):
            on_disk = self.root / parent
            if os.path.lexists(on_disk) and not on_disk.is_dir():
                raise ProtocolError(Err.BAD_REQUEST, f"cannot write {relative!r}: "
                                                     f"{parent.as_posix()!r} is a file, not a "
                                                     "folder; remove it or choose another path")

    def open_for_reading(self, relative: object) -> Tuple[int, int]:
        """An open file descriptor of the regular file ``relative`` and its size."""
        path = self.resolve(relative)
        real = os.path.realpath(path)
        try:
            fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            raise ProtocolError(Err.NOT_FOUND, f"{relative!r} does not exist in the session's "
                                               "folder") from None
        except OSError as exc:
            raise ProtocolError(Err.BAD_REQUEST, f"cannot read {relative!r}: {exc.strerror}") from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise ProtocolError(Err.BAD_REQUEST, f"{relative!r} is not a file")
        return fd, info.st_size


class Session:
    """What one connection opened: a runtime, a sandbox and the models it loaded."""

    def __init__(self, session_id: str, runtime: str, threads: int, sandbox: Sandbox, peer: str):
        self.id = session_id
        self.runtime = runtime
        self.threads = threads
        self.sandbox = sandbox
        self.peer = peer
        self.opened = time.time()
        self.models: Dict[str, object] = {}
        self._next_handle = 1

    def add_model(self, model: object) -> str:
        handle = f"m{self._next_handle}"
        self._next_handle += 1
        self.models[handle] = model
        return handle

    def model(self, handle: object) -> object:
        model = self.models.get(handle) if isinstance(handle, str) else None
        if model is None:
            raise ProtocolError(Err.NOT_FOUND, f"no model {handle!r} is loaded in this session; "
                                               "send model.load first")
        return model


class SessionRegistry:
    """The open sessions, at most ``max_sessions`` at once, their folders under ``root``."""

    def __init__(self, root: Path, max_sessions: int = DEFAULT_MAX_SESSIONS):
        self.root = Path(root)
        self.max_sessions = max_sessions
        self._lock = threading.Lock()
        self._sessions: Dict[str, Session] = {}
        # Folders of sessions that ended with the agent (it was killed): nobody can reach them.
        if self.root.exists():
            shutil.rmtree(self.root, ignore_errors=True)
        self.root.mkdir(parents=True, exist_ok=True)

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def ids(self) -> List[str]:
        with self._lock:
            return list(self._sessions)

    def open(self, runtime: str, threads: int, peer: str) -> Session:
        with self._lock:
            if len(self._sessions) >= self.max_sessions:
                raise ProtocolError(Err.BUSY, f"the device already serves {self.max_sessions} "
                                              "sessions; close one (or start the agent with a "
                                              "larger --max-sessions)")
            session_id = secrets.token_hex(6)
            while session_id in self._sessions:
                session_id = secrets.token_hex(6)
            session = Session(session_id, runtime, threads, Sandbox(self.root / session_id), peer)
            self._sessions[session_id] = session
        log.info("session %s opened by %s (runtime %s, %d threads)", session_id, peer, runtime,
                 threads)
        return session

    def close(self, session: Optional[Session]) -> None:
        if session is None:
            return
        with self._lock:
            if self._sessions.pop(session.id, None) is None:
                return
        for model in session.models.values():
            close = getattr(model, "close", None)
            if close is not None:
                close()
        session.models.clear()
        shutil.rmtree(session.sandbox.root, ignore_errors=True)
        log.info("session %s closed", session.id)

"""sha256 of files, and a cache of them by (size, mtime_ns) so a file that has not changed is
not read again: the cluster's data sync and the dataset versions of the registry both hash a
project's data, and one cache serves both (``.workbench/data-hashes.json``).

The cache is plain JSON; a damaged one is treated as empty (everything is hashed again), never
as an error. Qt-free, stdlib only.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Callable

from workbench.platform.atomic_files import write_text_atomically

log = logging.getLogger(__name__)

_FORMAT = 1
_READ_CHUNK = 1 << 20


class HashCache:
    """sha256 of local files by (path, size, mtime_ns), kept between syncs in the project's state."""

    def __init__(self, file: Path | None, prepare_folder: Callable[[], object] | None = None):
        self.file = file
        # Makes the cache's folder before a save (a project's state folder has its own
        # .gitignore to write first).
        self._prepare_folder = prepare_folder
        self._entries: dict[str, tuple[int, int, str]] = {}
        self._changed = False
        if file is not None:
            self._load(file)

    def lookup(self, path: str, size: int, mtime_ns: int) -> str | None:
        """The cached hash when the file still has this size and modification time."""
        entry = self._entries.get(path)
        if entry is not None and entry[0] == size and entry[1] == mtime_ns:
            return entry[2]
        return None

    def record(self, path: str, size: int, mtime_ns: int, sha256: str) -> None:
        if self._entries.get(path) != (size, mtime_ns, sha256):
            self._entries[path] = (size, mtime_ns, sha256)
            self._changed = True

    def keep_only(self, paths: set[str]) -> None:
        """Forget files that are no longer part of the data."""
        gone = [path for path in self._entries if path not in paths]
        for path in gone:
            del self._entries[path]
        self._changed = self._changed or bool(gone)

    def save(self) -> None:
        """Write the cache if it changed. A project folder Workbench cannot write to only costs
        re-hashing next time, so a failure is logged, not raised."""
        if self.file is None or not self._changed:
            return
        try:
            if self._prepare_folder is not None:
                self._prepare_folder()
            else:
                self.file.parent.mkdir(parents=True, exist_ok=True)
            files = {path: list(entry) for path, entry in sorted(self._entries.items())}
            write_text_atomically(self.file, json.dumps({"format": _FORMAT, "files": files},
                                                        separators=(",", ":")))
            self._changed = False
        except OSError as exc:
            log.warning("Could not save the file hash cache %s: %s", self.file, exc)

    def _load(self, file: Path) -> None:
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
            if data.get("format") == _FORMAT:
                self._entries = {str(path): (int(size), int(mtime), str(sha))
                                 for path, (size, mtime, sha) in data["files"].items()}
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("Ignoring the damaged file hash cache %s: %s", file, exc)
            self._entries = {}


def hash_file(path: Path | str, cancel=None) -> str:
    """sha256 of a file's contents, in hex; ``cancel`` (a CancelToken) is checked per chunk."""
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        while chunk := source.read(_READ_CHUNK):
            digest.update(chunk)
            if cancel is not None:
                cancel.raise_if_cancelled()
    return digest.hexdigest()

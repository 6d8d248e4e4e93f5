"""sha256 of files, and a cache of them by (size, mtime_ns) so a file that has not changed is
not read again: the cluster's data sync and the dataset versions of the registry both hash a
project's data, and one cache serves both (``.workbench/data-hashes.json``).

The cache is JSON in columns (keys, sizes, modification times, hashes), read and written with
orjson: a cut of a 100,000-file dataset loads and saves it once, and the standard library's json
took longer over that than hashing the files that changed. A damaged cache is treated as empty
(everything is hashed again), never as an error. Qt-free.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Callable

from workbench.platform.atomic_files import write_atomically

log = logging.getLogger(__name__)

_FORMAT = 2
_FORMAT_BY_PATH = 1   # {"files": {path: [size, mtime_ns, sha256]}}: read, never written
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

    @property
    def entries(self) -> dict[str, tuple[int, int, str]]:
        """``{path: (size, mtime_ns, sha256)}``, to read many at once without a call each
        (do not change it: ``record`` does)."""
        return self._entries

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
            import orjson

            keys = sorted(self._entries)
            entries = [self._entries[key] for key in keys]
            write_atomically(self.file, orjson.dumps({
                "format": _FORMAT, "keys": keys, "sizes": [entry[0] for entry in entries],
                "mtimes": [entry[1] for entry in entries], "hashes": [entry[2] for entry in entries]}))
            self._changed = False
        except OSError as exc:
            log.warning("Could not save the file hash cache %s: %s", self.file, exc)

    def _load(self, file: Path) -> None:
        import orjson

        try:
            data = orjson.loads(file.read_bytes())
            if data.get("format") == _FORMAT:
                keys, sizes, mtimes, hashes = data["keys"], data["sizes"], data["mtimes"], data["hashes"]
                if not len(keys) == len(sizes) == len(mtimes) == len(hashes):
                    raise ValueError("its columns differ in length")
                self._entries = dict(zip(keys, zip(sizes, mtimes, hashes)))
            elif data.get("format") == _FORMAT_BY_PATH:
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

"""The two records that make a data sync incremental.

- ``HashCache``: this machine's memory of each data file's sha256 by (size, mtime_ns), in
  ``.workbench/data-hashes.json``, so a file that has not changed is not read again.
- ``Manifest``: what the cluster holds, ``{path: (size, sha256)}``, kept at
  ``<data_root>/<project-key>/.manifest.json`` and replaced atomically after each sync. A file is
  unchanged when its size and hash match the manifest *and* the cluster's file still has the
  manifest's size (a cheap check that catches files removed or cut short on the cluster).

Both are plain JSON; a damaged one is treated as empty (everything is hashed or sent again),
never as an error. Qt-free, stdlib only.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

HASH_CACHE_FILE = "data-hashes.json"
_FORMAT = 1
_READ_CHUNK = 1 << 20


@dataclass(frozen=True)
class ManifestEntry:
    size: int
    sha256: str


class Manifest:
    """What the cluster's data folder holds, as the last sync left it."""

    def __init__(self, files: dict[str, ManifestEntry] | None = None):
        self.files: dict[str, ManifestEntry] = dict(files or {})

    def __len__(self) -> int:
        return len(self.files)

    def get(self, path: str) -> ManifestEntry | None:
        return self.files.get(path)

    def record(self, path: str, size: int, sha256: str) -> None:
        self.files[path] = ManifestEntry(size, sha256)

    def forget(self, path: str) -> None:
        self.files.pop(path, None)

    def to_json(self) -> str:
        files = {path: [entry.size, entry.sha256] for path, entry in sorted(self.files.items())}
        return json.dumps({"format": _FORMAT, "files": files}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> Manifest:
        """The manifest in ``text``; an empty one when it is damaged or of an unknown format."""
        try:
            data = json.loads(text)
            files = {str(path): ManifestEntry(int(size), str(sha)) for path, (size, sha) in data["files"].items()}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("The data manifest on the cluster is damaged (%s): every file is checked again.", exc)
            return cls()
        if data.get("format") != _FORMAT:
            return cls()
        return cls(files)


class HashCache:
    """sha256 of local files by (path, size, mtime_ns), kept between syncs in the project's state."""

    def __init__(self, file: Path | None):
        self.file = file
        self._entries: dict[str, tuple[int, int, str]] = {}
        self._changed = False
        if file is not None:
            self._load(file)

    @classmethod
    def for_project(cls, project_dir: Path | str) -> HashCache:
        from workbench.project.project_file import STATE_DIR

        return cls(Path(project_dir) / STATE_DIR / HASH_CACHE_FILE)

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
        from workbench.platform.atomic_files import write_text_atomically
        from workbench.project.project_file import ensure_state_dir

        try:
            ensure_state_dir(self.file.parent.parent)
            files = {path: list(entry) for path, entry in sorted(self._entries.items())}
            write_text_atomically(self.file, json.dumps({"format": _FORMAT, "files": files},
                                                        separators=(",", ":")))
            self._changed = False
        except OSError as exc:
            log.warning("Could not save the data hash cache %s: %s", self.file, exc)

    def _load(self, file: Path) -> None:
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
            if data.get("format") == _FORMAT:
                self._entries = {str(path): (int(size), int(mtime), str(sha))
                                 for path, (size, mtime, sha) in data["files"].items()}
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("Ignoring the damaged data hash cache %s: %s", file, exc)
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

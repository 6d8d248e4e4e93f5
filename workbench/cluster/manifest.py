"""The two records that make a data sync incremental.

- ``HashCache`` (workbench.platform.file_hashes): this machine's memory of each data file's
  sha256 by (size, mtime_ns), in ``.workbench/data-hashes.json``, so a file that has not changed
  is not read again.
- ``Manifest``: what the cluster holds, ``{path: (size, sha256)}``, kept at
  ``<data_root>/<project-key>/.manifest.json`` and replaced atomically after each sync. A file is
  unchanged when its size and hash match the manifest *and* the cluster's file still has the
  manifest's size (a cheap check that catches files removed or cut short on the cluster).

Both are plain JSON; a damaged one is treated as empty (everything is hashed or sent again),
never as an error. Qt-free, stdlib only.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from workbench.platform.file_hashes import HashCache, hash_file  # noqa: F401  (the sync's names)

log = logging.getLogger(__name__)

_FORMAT = 1


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

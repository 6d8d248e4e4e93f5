"""Unsaved buffers kept on disk so closing or crashing never loses typing ("hot exit").

One JSON file per document under ``<project>/.workbench/hot-exit/``, named by a hash of the
file's path relative to the project, written atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from workbench.platform.atomic_files import write_atomically

HOT_EXIT_FOLDER = Path(".workbench") / "hot-exit"


@dataclass
class HotExitEntry:
    """One unsaved buffer: its text, how to write it back, and what the file on disk was then.

    ``disk_sha256`` is the hash of the file when the buffer was loaded ("" for a file that did not
    exist), so recovery can tell whether the file changed on disk since. ``saved_at`` is a Unix
    time.
    """

    path: str
    text: str
    encoding: str = "utf-8"
    eol: str = "\n"
    has_bom: bool = False
    saved_at: float = 0.0
    disk_sha256: str = ""


class HotExitStore:
    """The hot-exit entries of one project. Safe to call from a worker thread."""

    def __init__(self, project_root: Path | str) -> None:
        self.project_root = Path(project_root).resolve()
        self.folder = self.project_root / HOT_EXIT_FOLDER
        self._lock = threading.Lock()
        self.available = self._prepare_folder()

    def save(
        self, path: Path | str, text: str, encoding: str = "utf-8", eol: str = "\n",
        has_bom: bool = False, disk_sha256: str = "",
    ) -> None:
        """Keep the unsaved ``text`` of ``path``; does nothing when the store is not available."""
        if not self.available:
            return
        entry = HotExitEntry(
            self._key_path(path), text, encoding, eol, has_bom, time.time(), disk_sha256
        )
        data = json.dumps(asdict(entry), ensure_ascii=False).encode("utf-8")
        with self._lock:
            try:
                write_atomically(self._entry_file(path), data)
            except OSError:
                # The folder went read-only or the disk is full: typing must go on regardless;
                # the next edit tries again.
                pass

    def load(self, path: Path | str) -> HotExitEntry | None:
        """The entry kept for ``path``, or None when there is none or it cannot be read."""
        return self._read(self._entry_file(path))

    def discard(self, path: Path | str) -> None:
        """Forget the entry for ``path`` (after a save, or when the user discards changes)."""
        with self._lock:
            try:
                self._entry_file(path).unlink()
            except OSError:
                pass

    def entries(self) -> list[HotExitEntry]:
        """Every kept entry, oldest first."""
        try:
            files = sorted(self.folder.glob("*.json"))
        except OSError:
            return []
        found = [entry for entry in map(self._read, files) if entry is not None]
        return sorted(found, key=lambda entry: entry.saved_at)

    def absolute_path(self, entry: HotExitEntry) -> Path:
        """The file an entry belongs to, as an absolute path."""
        return self.project_root / entry.path

    def _key_path(self, path: Path | str) -> str:
        resolved = Path(path).resolve()
        try:
            return resolved.relative_to(self.project_root).as_posix()
        except ValueError:
            # A file outside the project is still recoverable, keyed by its absolute path.
            return resolved.as_posix()

    def _entry_file(self, path: Path | str) -> Path:
        digest = hashlib.sha256(self._key_path(path).encode("utf-8")).hexdigest()[:24]
        return self.folder / f"{digest}.json"

    def _read(self, entry_file: Path) -> HotExitEntry | None:
        try:
            raw = json.loads(entry_file.read_text(encoding="utf-8"))
            return HotExitEntry(**raw)
        except (OSError, ValueError, TypeError):
            return None

    def _prepare_folder(self) -> bool:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            return False
        # Permission bits do not tell the whole story (read-only mounts, root): try a write.
        probe = self.folder / f".probe-{os.getpid()}-{threading.get_ident()}"
        try:
            probe.write_bytes(b"")
            probe.unlink()
        except OSError:
            return False
        return True

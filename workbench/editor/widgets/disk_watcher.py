"""Tells a tab when its file changed or vanished on disk, ignoring writes it made itself."""

from __future__ import annotations

import hashlib
from pathlib import Path

from PySide6.QtCore import QFileSystemWatcher, QObject, QTimer, Signal

# Programs write in bursts (truncate, write, chmod); waiting a moment avoids reading a half file.
SETTLE_MS = 100


class DiskWatcher(QObject):
    """Watches one file and reports real content changes.

    ``known_sha256`` is the hash of the content the tab last loaded or saved; a change event whose
    content has that hash (the tab's own save, a touch) is not reported.
    """

    sig_file_changed = Signal(bytes)
    """The file's content on disk changed to these bytes (not by the tab's own save)."""

    sig_file_deleted = Signal()
    """The file is gone from disk."""

    def __init__(self, path: Path, known_sha256: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.path = Path(path)
        self.known_sha256 = known_sha256
        self.is_deleted = False
        self._watcher = QFileSystemWatcher(self)
        self._watcher.fileChanged.connect(self._on_event)
        self._watcher.directoryChanged.connect(self._on_event)
        self._settle = QTimer(self, singleShot=True, interval=SETTLE_MS)
        self._settle.timeout.connect(self.check_now)
        self._watch()

    def _watch(self) -> None:
        # An atomic save replaces the file, and the watch on the old one dies with it; the folder
        # is watched too so a file that comes back is noticed.
        if self.path.exists() and str(self.path) not in self._watcher.files():
            self._watcher.addPath(str(self.path))
        if str(self.path.parent) not in self._watcher.directories() and self.path.parent.exists():
            self._watcher.addPath(str(self.path.parent))

    def rewatch(self) -> None:
        """Watch the file anew (after the tab replaced it with a save)."""
        if str(self.path) in self._watcher.files():
            self._watcher.removePath(str(self.path))
        self._watch()

    def _on_event(self, _path: str) -> None:
        self._settle.start()

    def check_now(self) -> None:
        """Compare the file on disk with what the tab knows and report a difference."""
        self._watch()
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            if not self.is_deleted:
                self.is_deleted = True
                self.sig_file_deleted.emit()
            return
        except OSError:
            return
        self.is_deleted = False
        digest = hashlib.sha256(data).hexdigest()
        if digest != self.known_sha256:
            self.known_sha256 = digest
            self.sig_file_changed.emit(data)

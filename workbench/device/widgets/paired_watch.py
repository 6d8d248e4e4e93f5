"""Notices when the paired devices change on disk: another window, the hub or the CLI paired
or forgot a device, so every window's device list follows without a Refresh."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QFileSystemWatcher, QObject, QTimer, Signal

SETTLE_MS = 250  # a pairing writes the file once, but a folder sees a burst of events for it


class PairedDevicesWatcher(QObject):
    """Watches ``devices.json`` and its folder (an atomic write replaces the file, and a
    watcher on the old file alone stops hearing), and says when what it lists changed."""

    sig_paired_devices_changed = Signal()
    """The paired devices (names, addresses, which is local) differ from those last noted."""

    def __init__(self, devices, parent: QObject | None = None):
        super().__init__(parent)
        self.devices = devices
        """The ``PairedDevices`` watched."""
        self._known = devices.fingerprint()
        self._watcher = QFileSystemWatcher(self)
        self._watcher.fileChanged.connect(self._changed)
        self._watcher.directoryChanged.connect(self._changed)
        self._settle = QTimer(self)
        self._settle.setSingleShot(True)
        self._settle.timeout.connect(self._check)
        self._watch()

    def watched(self) -> list[str]:
        return self._watcher.files() + self._watcher.directories()

    def note_current(self) -> None:
        """The list is being made from the file as it is now: only a later change is news."""
        self._known = self.devices.fingerprint()

    def stop(self) -> None:
        self._settle.stop()
        paths = self.watched()
        if paths:
            self._watcher.removePaths(paths)

    def _watch(self) -> None:
        folder = Path(self.devices.config_dir)
        # Until the config folder exists, its parent tells when it appears.
        wanted = [self.devices.file, folder] if folder.is_dir() else [folder.parent]
        new = [str(p) for p in wanted if p.exists() and str(p) not in self.watched()]
        if new:
            self._watcher.addPaths(new)

    def _changed(self, _path: str) -> None:
        self._settle.start(SETTLE_MS)

    def check_now(self) -> None:
        """Look at the file now, as a change reported would (a no-op when nothing changed)."""
        if not self._settle.isActive():
            self._check()

    def _check(self) -> None:
        self._watch()  # a replaced file is watched again, a new folder for the first time
        current = self.devices.fingerprint()
        if current != self._known:
            self._known = current
            self.sig_paired_devices_changed.emit()

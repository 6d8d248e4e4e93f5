"""The settings of a window process, read again whenever their files change, and the theme
that follows them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QFileSystemWatcher, QObject, QTimer

from workbench.qt.theme import apply_theme

if TYPE_CHECKING:
    # A project window loads the settings package after its first paint (see window_settings).
    from workbench.settings import Settings

THEME_KEY = "appearance.theme"

SETTLE_MS = 100
"""How long the settings files stay quiet before they are read again: one save is several
events (a temporary file written, renamed over the old one)."""


def window_settings(project_file: Path | None = None) -> Settings:
    """The settings of a window: the user's ``settings.toml``, and ``project_file`` when the
    window has a project."""
    from workbench.project import user_config_dir
    from workbench.settings import SETTINGS_FILE, Settings

    return Settings(user_config_dir() / SETTINGS_FILE, project_file)


def follow_theme_setting(settings: Settings) -> str:
    """Apply the theme ``settings`` name now and each time it changes; returns the theme in
    force."""
    settings.on_changed(lambda keys: apply_theme(settings.value(THEME_KEY)) if THEME_KEY in keys else None)
    return apply_theme(settings.value(THEME_KEY))


class SettingsFilesWatcher(QObject):
    """Reads ``settings`` again (``Settings.reload``, which tells its listeners what changed)
    a moment after one of its files changes on disk, whoever changed it: another window or
    process, or a hand edit.

    Each file's folder is watched, not only the file: a save replaces the file (a new file
    renamed over the old one), which ends a watch on the file itself. A folder that does not
    exist yet is watched through the nearest one that does, until it appears.
    """

    def __init__(self, settings: Settings, parent: QObject | None = None):
        super().__init__(parent)
        self.settings = settings
        self.reloads = 0
        """How many times the files were read again because they changed."""
        self._watcher = QFileSystemWatcher(self)
        self._watcher.fileChanged.connect(self._on_file_changed)
        self._watcher.directoryChanged.connect(self._on_folder_changed)
        self._settle = QTimer(self, singleShot=True, interval=SETTLE_MS)
        self._settle.timeout.connect(self._read_again)
        self._seen = self._signatures()
        self._file_written = False
        self._watch()

    def _watch(self) -> None:
        wanted = []
        for path in self.settings.files.values():
            if path.exists():
                wanted.append(str(path))
            folder = path.parent
            while not folder.is_dir() and folder != folder.parent:
                folder = folder.parent
            wanted.append(str(folder))
        watched = set(self._watcher.files()) | set(self._watcher.directories())
        missing = [path for path in dict.fromkeys(wanted) if path not in watched]
        if missing:
            self._watcher.addPaths(missing)

    def _on_file_changed(self, _path: str) -> None:
        self._file_written = True
        self._settle.start()

    def _on_folder_changed(self, _path: str) -> None:
        self._settle.start()

    def _read_again(self) -> None:
        # A replaced file is a new one to watch, and a folder made since is watched itself.
        self._watch()
        seen = self._signatures()
        # A file written in place within the clock's tick keeps its signature; its own event says it.
        if seen == self._seen and not self._file_written:
            return  # something else in the folder changed (a project folder is busy)
        self._seen = seen
        self._file_written = False
        self.reloads += 1
        self.settings.reload()

    def _signatures(self) -> tuple:
        signatures = []
        for path in self.settings.files.values():
            try:
                stat = os.stat(path)
            except OSError:
                signatures.append(None)
            else:
                signatures.append((stat.st_ino, stat.st_size, stat.st_mtime_ns))
        return tuple(signatures)


def follow_settings_files(settings: Settings, owner: QObject) -> SettingsFilesWatcher:
    """Keep ``settings`` as their files say while ``owner`` lives (a window, or the application
    for a process that has one settings object)."""
    return SettingsFilesWatcher(settings, owner)

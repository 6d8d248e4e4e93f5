"""The list of recently opened projects, kept in the user's config folder.

The hub and every project window may update it, so each change reads the file fresh, edits it
and writes it back atomically.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from workbench.platform.atomic_files import write_text_atomically

RECENT_FILE = "recent.json"
MAX_RECENT = 20
CONFIG_DIR_ENV = "WORKBENCH_CONFIG_DIR"


def user_config_dir() -> Path:
    """The folder for user-level settings: ``$WORKBENCH_CONFIG_DIR`` when set (tests set it),
    else the platform's config folder for "workbench"."""
    override = os.environ.get(CONFIG_DIR_ENV)
    if override:
        return Path(override)
    import platformdirs  # only needed when there is no override

    return Path(platformdirs.user_config_dir("workbench", appauthor=False))


@dataclass(frozen=True)
class RecentProject:
    """One entry of the recent list. ``exists`` is checked when the list is read, so the welcome
    window can grey out projects that were moved or deleted."""

    path: Path
    name: str
    last_opened: datetime
    exists: bool


class RecentProjects:
    """The recent projects stored in ``<config_dir>/recent.json``, most recent first."""

    def __init__(self, config_dir: Path | None = None):
        self.config_dir = Path(config_dir) if config_dir is not None else user_config_dir()
        self.file = self.config_dir / RECENT_FILE

    def list(self) -> list[RecentProject]:
        """The recent projects, most recently opened first."""
        return [self._entry(raw) for raw in self._read()]

    def add(self, path: Path | str, name: str | None = None) -> RecentProject:
        """Put the project at ``path`` at the top of the list (moving it if already there)."""
        path = Path(path).expanduser().resolve()
        raw = {"path": str(path), "name": name or path.name,
               "last_opened": datetime.now(timezone.utc).isoformat()}
        others = [r for r in self._read() if r["path"] != str(path)]
        self._write([raw, *others][:MAX_RECENT])
        return self._entry(raw)

    def remove(self, path: Path | str) -> None:
        """Take the project at ``path`` off the list; nothing happens when it is not there."""
        path = str(Path(path).expanduser().resolve())
        entries = self._read()
        kept = [r for r in entries if r["path"] != path]
        if len(kept) != len(entries):
            self._write(kept)

    def _read(self) -> list[dict]:
        try:
            text = self.file.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError):
            self._set_aside()
            return []
        try:
            data = json.loads(text)
            entries = data["projects"]
            if not isinstance(entries, list):
                raise TypeError("projects is not a list")
            return [e for e in entries if _is_valid(e)]
        except (ValueError, KeyError, TypeError):
            self._set_aside()
            return []

    def _write(self, entries: list[dict]) -> None:
        self.config_dir.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"version": 1, "projects": entries}, indent=2, ensure_ascii=False)
        write_text_atomically(self.file, text + "\n")

    def _set_aside(self) -> None:
        """Move a file we cannot read to ``recent.json.corrupt`` so the user can recover it;
        a fresh list then starts in its place."""
        target = self.file.with_name(RECENT_FILE + ".corrupt")
        number = 1
        while target.exists():  # never overwrite an earlier bad file either
            target = self.file.with_name(f"{RECENT_FILE}.corrupt.{number}")
            number += 1
        try:
            os.replace(self.file, target)
        except OSError:
            pass  # the list is only a convenience: an unmovable file must not stop the app

    @staticmethod
    def _entry(raw: dict) -> RecentProject:
        path = Path(raw["path"])
        try:
            when = datetime.fromisoformat(raw.get("last_opened", ""))
        except (TypeError, ValueError):
            when = datetime.fromtimestamp(0, timezone.utc)
        return RecentProject(path=path, name=raw.get("name") or path.name, last_opened=when,
                             exists=path.is_dir())


def _is_valid(entry: object) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("path"), str) and bool(entry["path"])

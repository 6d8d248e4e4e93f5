"""What a window's first paint needs of the settings, read with tomllib alone: the theme the
user chose and the editor's font.

The settings package (its declarations, checks and listeners) loads after the first paint. What
is read here keeps its rules, so the window does not change once it loads: a value of the wrong
type or out of range is not used, and the project's ``workbench.toml`` wins over the user's
``settings.toml``.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# workbench.settings.SETTINGS_FILE and the declarations' choices and bounds, named here:
# importing the settings package is what this read avoids (a test checks that both agree).
USER_SETTINGS_FILE = "settings.toml"
THEME_CHOICES = ("light", "dark", "system")
FONT_SIZES = range(6, 49)


@dataclass(frozen=True)
class FirstPaintSettings:
    """What the files say for the first paint; empty or None where they say nothing usable."""

    theme: str = ""
    """"light", "dark" or "system"; "" when no file names one (the default applies)."""
    font_family: str = ""
    font_size: int | None = None


def read_first_paint_settings(config_dir: Path, project_document: dict[str, Any] | None = None
                              ) -> FirstPaintSettings:
    """The first paint's settings from the user's ``settings.toml`` in ``config_dir`` and the
    project's parsed ``workbench.toml`` (``Project.settings``), the project's winning."""
    levels = [_read_user_file(config_dir / USER_SETTINGS_FILE), project_document or {}]
    theme = _last_valid(levels, "appearance", "theme", lambda v: isinstance(v, str) and v in THEME_CHOICES)
    family = _last_valid(levels, "editor", "font_family", lambda v: isinstance(v, str))
    size = _last_valid(levels, "editor", "font_size", lambda v: type(v) is int and v in FONT_SIZES)
    return FirstPaintSettings(theme=theme or "", font_family=family or "", font_size=size)


def _read_user_file(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as file:
            return tomllib.load(file)
    except (OSError, ValueError):
        return {}  # the settings package says what is wrong with it, after the first paint


def _last_valid(levels: list[dict[str, Any]], section: str, name: str, valid) -> Any:
    found = None
    for document in levels:
        table = document.get(section)
        if isinstance(table, dict) and name in table and valid(table[name]):
            found = table[name]
    return found

"""The settings of a window process and the theme that follows them."""

from __future__ import annotations

from pathlib import Path

from workbench.qt.theme import apply_theme
from workbench.settings import SETTINGS_FILE, Settings

THEME_KEY = "appearance.theme"


def window_settings(project_file: Path | None = None) -> Settings:
    """The settings of a window: the user's ``settings.toml``, and ``project_file`` when the
    window has a project."""
    from workbench.project import user_config_dir

    return Settings(user_config_dir() / SETTINGS_FILE, project_file)


def follow_theme_setting(settings: Settings) -> str:
    """Apply the theme ``settings`` name now and each time it changes; returns the theme in
    force."""
    settings.on_changed(lambda keys: apply_theme(settings.value(THEME_KEY)) if THEME_KEY in keys else None)
    return apply_theme(settings.value(THEME_KEY))

"""Settings declared once (``declarations.SETTINGS``) and read at two levels, the user's
``settings.toml`` and the project's ``workbench.toml`` (``store.Settings``). Qt-free, in the
foundation: every capability may read a setting."""

from workbench.settings.declarations import (
    LEVELS,
    PROJECT,
    SECTION_TITLES,
    SETTINGS,
    USER,
    Setting,
    setting,
)
from workbench.settings.store import SETTINGS_FILE, Settings, SettingsError

__all__ = ["LEVELS", "PROJECT", "SECTION_TITLES", "SETTINGS", "SETTINGS_FILE", "USER", "Setting",
           "Settings", "SettingsError", "setting"]

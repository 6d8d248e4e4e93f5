"""The values of the settings at their two levels, user (``settings.toml`` in the user's config
folder) and project (``workbench.toml``): reading them, writing one, and telling listeners what
changed. A project's value wins over the user's, the user's over the default.

Reading uses ``tomllib`` only (it runs as a window starts); ``tomlkit`` loads when a value is
written, so what the user wrote around it (comments, order) stays.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from workbench.platform.user_settings import SettingsFileError, line_of, read_settings_file, toml_text
from workbench.settings.declarations import LEVELS, PROJECT, SETTINGS, USER, Setting, setting

SETTINGS_FILE = "settings.toml"
"""The user's settings, in the user's config folder."""


class SettingsError(ValueError):
    """A value that cannot be written (wrong type, a level the setting does not have, a file
    that cannot be changed); the message says what to do."""


class Settings:
    """The settings as one window sees them.

    ``user_file`` is the user's ``settings.toml``; ``project_file`` the project's
    ``workbench.toml`` (None for a window with no project). A value a file gets wrong is left
    out (the default or the weaker level applies) and said once in ``problems``, naming the file,
    the line and the fix: a bad line never stops a window.
    """

    def __init__(self, user_file: Path | str, project_file: Path | str | None = None):
        self.files: dict[str, Path] = {USER: Path(user_file)}
        if project_file is not None:
            self.files[PROJECT] = Path(project_file)
        self._values: dict[str, dict[str, Any]] = {level: {} for level in LEVELS}
        self._listeners: list[Callable[[frozenset[str]], None]] = []
        self.problems: list[str] = []
        self.reload(notify=False)

    # Reading ---------------------------------------------------------------------------------

    def value(self, key: str) -> Any:
        """The value in force: the project's, else the user's, else the default."""
        declared = setting(key)
        for level in reversed(LEVELS):
            if key in self._values[level]:
                return self._values[level][key]
        return declared.default

    def level_value(self, key: str, level: str) -> Any | None:
        """What the file of ``level`` says for ``key`` (None when it does not set it)."""
        return self._values[level].get(key)

    def source(self, key: str) -> str:
        """Where the value in force comes from: "project", "user" or "default"."""
        for level in reversed(LEVELS):
            if key in self._values[level]:
                return level
        return "default"

    def has_level(self, level: str) -> bool:
        return level in self.files

    def reload(self, notify: bool = True) -> frozenset[str]:
        """Read both files again; returns (and tells listeners) the keys whose value changed."""
        before = {item.key: self.value(item.key) for item in SETTINGS}
        self.problems = []
        for level in LEVELS:
            self._values[level] = self._read_level(level) if level in self.files else {}
        changed = frozenset(key for key, old in before.items() if self.value(key) != old)
        if notify and changed:
            self._notify(changed)
        return changed

    def _read_level(self, level: str) -> dict[str, Any]:
        path = self.files[level]
        try:
            read = read_settings_file(path)
        except SettingsFileError as exc:
            self.problems.append(str(exc))
            return {}
        if read is None:
            return {}
        document, text = read
        values = {}
        for item in SETTINGS:
            table = document.get(item.section)
            if not isinstance(table, dict) or item.name not in table:
                continue
            where = f"{path}{line_of(text, item.section, item.name)}"
            if level not in item.levels:
                other = "the project's workbench.toml" if level == USER else f"your {SETTINGS_FILE}"
                self.problems.append(f"{where}: [{item.section}] {item.name} is not read here; "
                                     f"move it to {other}")
                continue
            try:
                values[item.key] = item.check(table[item.name])
            except ValueError:
                self.problems.append(
                    f"{where}: [{item.section}] {item.name} must be {item.kind()}, like "
                    f"{item.name} = {toml_text(_example(item))}, not {toml_text(table[item.name])}; "
                    f"fix it, or remove the line to use the default")
        return values

    # Writing ---------------------------------------------------------------------------------

    def set(self, key: str, value: Any, level: str = USER) -> None:
        """Write ``value`` for ``key`` in the file of ``level`` (keeping the rest of the file as
        it is written) and tell listeners when the value in force changed."""
        declared = self._writable(key, level)
        try:
            value = declared.check(value)
        except ValueError:
            raise SettingsError(f"{declared.label} must be {declared.kind()}, not "
                                f"{toml_text(value)}") from None
        self._write(declared, level, value)
        self._change(key, level, value)

    def reset(self, key: str, level: str = USER) -> None:
        """Remove ``key`` from the file of ``level``, so the weaker level or the default applies."""
        declared = self._writable(key, level)
        if key not in self._values[level]:
            return
        self._write(declared, level, None)
        self._change(key, level, None)

    def _writable(self, key: str, level: str) -> Setting:
        declared = setting(key)
        if level not in self.files:
            raise SettingsError(f"there is no {level} settings file here: open a project first")
        if level not in declared.levels:
            raise SettingsError(f"{declared.label} is a {' and '.join(declared.levels)} setting only")
        return declared

    def _write(self, declared: Setting, level: str, value: Any) -> None:
        from workbench.platform.toml_files import TomlFileError, editing

        path = self.files[level]
        try:
            with editing(path) as document:
                table = document.get(declared.section)
                if value is None:
                    if isinstance(table, dict) and declared.name in table:
                        del table[declared.name]
                        if not table:
                            del document[declared.section]
                    return
                if not isinstance(table, dict):
                    import tomlkit

                    table = document[declared.section] = tomlkit.table()
                table[declared.name] = value
        except (TomlFileError, OSError) as exc:
            raise SettingsError(f"cannot change {path}: {exc}; fix or move the file, then try again") from None

    def _change(self, key: str, level: str, value: Any) -> None:
        before = self.value(key)
        if value is None:
            self._values[level].pop(key, None)
        else:
            self._values[level][key] = value
        if self.value(key) != before:
            self._notify(frozenset({key}))

    # Listening -------------------------------------------------------------------------------

    def on_changed(self, listener: Callable[[frozenset[str]], None]) -> Callable[[], None]:
        """Call ``listener`` with the keys whose value in force changed, after each change;
        returns a function that stops it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _notify(self, keys: frozenset[str]) -> None:
        for listener in list(self._listeners):
            listener(keys)


def _example(item: Setting) -> Any:
    """A value to show in a message: the default, or a typical one when the default is empty."""
    if item.type == "ints" and not item.default:
        return [80, 100]
    return item.default

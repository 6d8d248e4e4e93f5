"""Settings the user writes by hand in a TOML file of their config folder (``settings.toml``):

    [devices]
    require_keyring = true

A missing file or key means the default; a file that cannot be read, or a value of the wrong kind,
is ``SettingsFileError`` saying which file, which line and what to write, never a silent default
(a user who turned a safety setting on must not find it off).
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

_KINDS = {bool: "true or false", int: "a whole number", float: "a number", str: "text in quotes",
          list: "a list", dict: "a table"}


class SettingsFileError(ValueError):
    """A settings file that cannot be used; the message says which file, what is wrong and the fix."""

    def __init__(self, path: Path, message: str):
        super().__init__(message)
        self.path = path


def read_setting(path: Path | str, section: str, key: str, default: T) -> T:
    """The value of ``key`` in the table ``[section]`` of the TOML file at ``path``; ``default``
    when the file, the table or the key is absent. SettingsFileError when the file cannot be read
    or parsed, or the value is not of ``default``'s type (an int is taken where a float is the
    default; a default of None accepts any value)."""
    path = Path(path)
    read = read_settings_file(path)
    if read is None:
        return default
    document, text = read
    table = document.get(section)
    if table is None:
        return default
    if not isinstance(table, dict):
        raise SettingsFileError(path, f"{path}{line_of(text, None, section)}: {section} must be a "
                                      f"table (a line [{section}] with its keys below), not "
                                      f"{toml_text(table)}")
    if key not in table:
        return default
    value = table[key]
    if default is None:
        return value
    if isinstance(default, float) and type(value) is int:
        return float(value)  # type: ignore[return-value]
    if type(value) is not type(default):
        kind = _KINDS.get(type(default), type(default).__name__)
        raise SettingsFileError(path, f"{path}{line_of(text, section, key)}: [{section}] {key} "
                                      f"must be {kind}, like {key} = {toml_text(default)}, not "
                                      f"{toml_text(value)}; fix it, or remove the line to use the default")
    return value


def read_settings_file(path: Path) -> tuple[dict, str] | None:
    """The parsed TOML file at ``path`` and its text; None when there is no such file.
    SettingsFileError when it cannot be read or parsed."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise SettingsFileError(path, f"{path} is not UTF-8 text (byte {exc.start}); save it as "
                                      "UTF-8") from None
    except OSError as exc:
        raise SettingsFileError(path, f"cannot read {path} ({exc.strerror or exc}); check its "
                                      "permissions") from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsFileError(path, f"{path} is not valid TOML: {exc}; fix that line, or move "
                                      "the file away to use the defaults") from None
    return document, text


def toml_text(value: Any) -> str:
    """``value`` as it would be written in TOML (near enough for a message)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return "a table"
    return repr(value)


def line_of(text: str, section: str | None, key: str) -> str:
    """", line N" where ``key = `` is written in ``[section]`` (top level when None); "" when it
    is written some other way (a dotted key, an inline table)."""
    pattern = re.compile(rf"\s*(?:{re.escape(key)}|\"{re.escape(key)}\"|'{re.escape(key)}')\s*=")
    current = None
    for number, line in enumerate(text.splitlines(), start=1):
        header = re.match(r"\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$", line)
        if header:
            current = header.group(1).strip("\"'")
        elif current == section and pattern.match(line):
            return f", line {number}"
    return ""

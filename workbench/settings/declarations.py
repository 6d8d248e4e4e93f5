"""Every setting, declared once: its key, type, default, help and allowed values. The Settings
window, the checks on what a file says and the code that reads a value all start from here, as
the model tools start from their ``Param`` declarations.

A key is ``section.name`` and is written as ``name`` in the ``[section]`` table of the file,
the same in the user's ``settings.toml`` and in a project's ``workbench.toml``; the tables the
capabilities already read (``[devices] require_keyring``, ``[python] interpreter``) are settings
of this kind, so one line reads the same in either file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# What a setting holds. "ints" is a list of whole numbers (rulers); "choice" one of ``choices``.
SETTING_TYPES = ("bool", "int", "str", "choice", "ints")

USER = "user"
PROJECT = "project"
LEVELS = (USER, PROJECT)
"""From the weakest to the strongest: a project's value wins over the user's."""

_KIND_WORDS = {"bool": "true or false", "int": "a whole number", "str": "text in quotes",
               "ints": "a list of whole numbers"}


@dataclass(frozen=True)
class Setting:
    """One setting. ``levels`` are the files it may be written in (a setting about this
    computer, such as where its keys go, is the user's alone; one naming a path inside the
    project is the project's). ``minimum``/``maximum`` bound an int (and each item of ints);
    ``title`` is its label in the Settings window (the name with spaces by default)."""

    key: str
    type: str
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None
    levels: tuple[str, ...] = LEVELS
    title: str = ""
    choice_titles: tuple[str, ...] = ()

    def __post_init__(self):
        if self.type not in SETTING_TYPES:
            raise ValueError(f"setting {self.key}: unknown type {self.type!r}")
        if self.key.count(".") != 1:
            raise ValueError(f"setting {self.key}: a key is section.name")
        if self.type == "choice" and self.default not in self.choices:
            raise ValueError(f"setting {self.key}: the default is not one of its choices")

    @property
    def section(self) -> str:
        return self.key.partition(".")[0]

    @property
    def name(self) -> str:
        return self.key.partition(".")[2]

    @property
    def label(self) -> str:
        return self.title or self.name.replace("_", " ").capitalize()

    def kind(self) -> str:
        """What a value must be, in words ("a whole number from 6 to 48")."""
        if self.type == "choice":
            return "one of " + ", ".join(f'"{choice}"' for choice in self.choices)
        words = _KIND_WORDS[self.type]
        if self.minimum is not None and self.maximum is not None:
            words += f" from {self.minimum} to {self.maximum}"
        elif self.minimum is not None:
            words += f" of at least {self.minimum}"
        return words

    def check(self, value: Any) -> Any:
        """``value`` as this setting holds it; ValueError (with no message: the caller names the
        file and the line) when it is of the wrong type or out of range."""
        if self.type == "bool":
            if type(value) is not bool:
                raise ValueError
            return value
        if self.type == "int":
            return self._check_int(value)
        if self.type == "ints":
            if not isinstance(value, list):
                raise ValueError
            return [self._check_int(item) for item in value]
        if not isinstance(value, str):
            raise ValueError
        if self.type == "choice" and value not in self.choices:
            raise ValueError
        return value

    def _check_int(self, value: Any) -> int:
        if type(value) is not int:
            raise ValueError
        if (self.minimum is not None and value < self.minimum) or (
                self.maximum is not None and value > self.maximum):
            raise ValueError
        return value

    def matches(self, words: str) -> bool:
        """True when every word of ``words`` is in the key, the label or the help."""
        text = f"{self.key} {self.label} {self.help} {' '.join(self.choices)}".lower()
        return all(word in text for word in words.lower().split())


SETTINGS: tuple[Setting, ...] = (
    Setting("appearance.theme", "choice", "system",
            "The colours of every window: light, dark, or the system's choice (where the system "
            "does not say, as on a display without a desktop, light).",
            choices=("light", "dark", "system"), choice_titles=("Light", "Dark", "Follow the system")),
    Setting("editor.font_family", "str", "",
            "The editor's font, such as \"DejaVu Sans Mono\"; empty for the system's fixed-width font.",
            title="Font family"),
    Setting("editor.font_size", "int", 10, "The editor's font size in points. Ctrl+= and Ctrl+- "
            "zoom every editor of the window for the moment; Ctrl+0 returns to this size.",
            minimum=6, maximum=48, title="Font size"),
    Setting("editor.tab_width", "int", 4, "Columns per indent level: what Tab inserts (as spaces) "
            "and how wide a tab character is drawn.", minimum=1, maximum=16),
    Setting("editor.rulers", "ints", [], "Columns at which to draw a vertical line, such as "
            "[80, 100]; none when empty.", minimum=1, maximum=1000),
    Setting("editor.word_wrap", "bool", False, "Wrap long lines at the window's edge instead of "
            "scrolling sideways."),
    Setting("editor.show_whitespace", "bool", False, "Draw spaces and tabs as visible marks.",
            title="Show whitespace"),
    Setting("editor.autosave", "choice", "off",
            "Save edited files by themselves: never, a moment after typing stops (see Autosave "
            "delay), or when the editor loses focus.",
            choices=("off", "after_delay", "on_focus_change"),
            choice_titles=("Off", "After a delay", "When focus leaves the editor")),
    Setting("editor.autosave_delay", "int", 1000, "Milliseconds after the last key before an "
            "edited file is saved, when Autosave is \"after a delay\".", minimum=100, maximum=60000,
            title="Autosave delay (ms)"),
    Setting("python.interpreter", "str", "",
            "The Python that runs the console, the debugger and the language server: a path "
            "relative to the project folder, an absolute path or a name on PATH; empty for "
            "Workbench's own Python. Taken at the next start or Restart of each.",
            levels=(PROJECT,)),
    Setting("lsp.max_line_length", "int", 100, "The line length the style checker allows. When "
            "not set, the project's own pycodestyle or flake8 configuration, else 100. Taken when "
            "the language server restarts.", minimum=1, maximum=1000, levels=(PROJECT,),
            title="Max line length"),
    Setting("devices.require_keyring", "bool", False,
            "Refuse to keep the debug link's keys and pins in a file when the system keyring "
            "cannot be used (they go to a file readable only by you otherwise). Taken when "
            "Workbench next starts.", levels=(USER,)),
)

SECTION_TITLES = {"appearance": "Appearance", "editor": "Editor", "python": "Python",
                  "lsp": "Code intelligence", "devices": "Devices"}

_BY_KEY = {setting.key: setting for setting in SETTINGS}


def setting(key: str) -> Setting:
    """The declaration of ``key``; KeyError naming the known keys when there is none."""
    try:
        return _BY_KEY[key]
    except KeyError:
        raise KeyError(f"there is no setting {key!r}; the settings are {', '.join(_BY_KEY)}") from None

"""What the settings say about how an editor looks and behaves, in one value the editor widgets
take (``EditorOptions``), read from ``workbench.settings``."""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.editor.line_edits import INDENT_WIDTH

EDITOR_KEYS = frozenset({"editor.font_family", "editor.font_size", "editor.tab_width", "editor.rulers",
                         "editor.word_wrap", "editor.show_whitespace", "editor.autosave",
                         "editor.autosave_delay"})
"""The settings an open editor follows as they change."""

MIN_FONT_SIZE = 6
MAX_FONT_SIZE = 48


@dataclass(frozen=True)
class EditorOptions:
    """How an editor shows its text and when it saves by itself."""

    font_family: str = ""
    font_size: int = 10
    tab_width: int = INDENT_WIDTH
    rulers: tuple[int, ...] = ()
    word_wrap: bool = False
    show_whitespace: bool = False
    autosave: str = "off"
    autosave_delay: int = 1000
    zoom: int = field(default=0, compare=True)
    """Points added to ``font_size`` by Ctrl+= / Ctrl+- for the moment (not a setting)."""

    @property
    def shown_font_size(self) -> int:
        """The font size with the zoom, kept within what can be read."""
        return max(MIN_FONT_SIZE, min(MAX_FONT_SIZE, self.font_size + self.zoom))


def editor_options(settings, zoom: int = 0) -> EditorOptions:
    """The options ``settings`` (a ``workbench.settings.Settings``) give, with ``zoom``."""
    value = settings.value
    return EditorOptions(font_family=value("editor.font_family"), font_size=value("editor.font_size"),
                         tab_width=value("editor.tab_width"), rulers=tuple(value("editor.rulers")),
                         word_wrap=value("editor.word_wrap"), show_whitespace=value("editor.show_whitespace"),
                         autosave=value("editor.autosave"), autosave_delay=value("editor.autosave_delay"),
                         zoom=zoom)

"""The colour themes, light and dark: the palette of every widget (Fusion style), the editor's
code colours (a Pygments style per theme), and the colours the editor, the diff panes and the
hex view share.

The shared colours are read as module attributes (``theme.BACKGROUND``) when a widget paints,
so they are the current theme's: ``apply_theme`` switches every one of them at once, and
widgets that keep something made from them (a style sheet, text formats) listen to
``theme_changes().sig_theme_changed``.
"""

from __future__ import annotations

import re
from functools import lru_cache

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QColor, QFont, QFontDatabase, QPalette, QTextCharFormat

LIGHT = "light"
DARK = "dark"
SYSTEM = "system"
THEMES = (LIGHT, DARK)

# Close to VS Code's "Light+" and "Dark Modern", so the colours feel familiar.
_COLOURS = {
    LIGHT: {
        "BACKGROUND": "#ffffff", "FOREGROUND": "#1f1f1f", "CURRENT_LINE": "#f2f6fc",
        "BRACKET_MATCH": "#c9e3ff", "BRACKET_UNMATCHED": "#ffd0d0", "FIND_MATCH": "#fde68a",
        "DIAGNOSTIC_ERROR": "#e51400", "DIAGNOSTIC_WARNING": "#d9a800",
        "GUTTER_BACKGROUND": "#f7f7f7", "GUTTER_NUMBER": "#9a9a9a", "GUTTER_CURRENT_NUMBER": "#1f1f1f",
        "RULER": "#e0e0e0",
        "MUTED_TEXT": "#6e6e6e", "ERROR_TEXT": "#c62828", "SUCCESS_TEXT": "#2e7d32",
        "INFO_BACKGROUND": "#e8f1fb", "INFO_BORDER": "#b6d3f2",
        "WARNING_BACKGROUND": "#fff4ce", "WARNING_BORDER": "#e8d48b",
        "SUCCESS_BACKGROUND": "#e6f4ea", "SUCCESS_BORDER": "#a8d5b5",
        "ERROR_BACKGROUND": "#fdecea", "ERROR_BORDER": "#f5b7b1", "WARNING_TEXT": "#5c4400",
        "PANEL_BACKGROUND": "#f4f6f9", "PANEL_BORDER": "#dde2ea",
        # GitHub's light diff colours.
        "DIFF_ADDED": "#e6ffec", "DIFF_REMOVED": "#ffebe9", "DIFF_HEADER": "#ddf4ff",
        "DIFF_FILLER": "#f6f8fa", "DIFF_ADDED_STRONG": "#abf2bc", "DIFF_REMOVED_STRONG": "#ffcecb",
        "DIFF_FILLER_HATCH": "#e1e4e8", "DIFF_HEADER_TEXT": "#57606a", "LINK": "#0969da",
        "DIFF_CURRENT_HEADER": "#b6e3ff", "DIFF_ADDED_SIGN": "#1a7f37", "DIFF_REMOVED_SIGN": "#cf222e",
        "CHART_BACKGROUND": "#ffffff", "CHART_FOREGROUND": "#404040", "GRAPH_BACKGROUND": "#fbfbfc",
    },
    DARK: {
        "BACKGROUND": "#1e1e1e", "FOREGROUND": "#d4d4d4", "CURRENT_LINE": "#2a2d2e",
        "BRACKET_MATCH": "#3b4f6b", "BRACKET_UNMATCHED": "#6b2a2a", "FIND_MATCH": "#7a4e12",
        "DIAGNOSTIC_ERROR": "#f14c4c", "DIAGNOSTIC_WARNING": "#cca700",
        "GUTTER_BACKGROUND": "#1e1e1e", "GUTTER_NUMBER": "#6e7681", "GUTTER_CURRENT_NUMBER": "#cccccc",
        "RULER": "#3a3a3a",
        "MUTED_TEXT": "#9d9d9d", "ERROR_TEXT": "#f48771", "SUCCESS_TEXT": "#89d185",
        "INFO_BACKGROUND": "#1f3047", "INFO_BORDER": "#2f5a8a",
        "WARNING_BACKGROUND": "#3d3413", "WARNING_BORDER": "#7a6a1e",
        "SUCCESS_BACKGROUND": "#1e3a26", "SUCCESS_BORDER": "#2f6b40",
        "ERROR_BACKGROUND": "#3f1f1f", "ERROR_BORDER": "#7a3030", "WARNING_TEXT": "#e2c08d",
        "PANEL_BACKGROUND": "#2a2d2e", "PANEL_BORDER": "#3c3c3c",
        # GitHub's dark diff colours.
        "DIFF_ADDED": "#1d3326", "DIFF_REMOVED": "#3d2024", "DIFF_HEADER": "#1c2a3a",
        "DIFF_FILLER": "#252526", "DIFF_ADDED_STRONG": "#2e6b3e", "DIFF_REMOVED_STRONG": "#7a2e35",
        "DIFF_FILLER_HATCH": "#3a3a3a", "DIFF_HEADER_TEXT": "#9da5b0", "LINK": "#4daafc",
        "DIFF_CURRENT_HEADER": "#264f78", "DIFF_ADDED_SIGN": "#3fb950", "DIFF_REMOVED_SIGN": "#f85149",
        "CHART_BACKGROUND": "#1e1e1e", "CHART_FOREGROUND": "#c8c8c8", "GRAPH_BACKGROUND": "#1b1b1c",
    },
}

PYGMENTS_STYLES = {LIGHT: "vs", DARK: "one-dark"}
"""The Pygments style that colours code in each theme."""

# Where the Pygments style leaves a kind of token plain (``vs`` has no colour for numbers or
# function names), the theme's own colour (VS Code's) fills in.
_FALLBACK_CODE_COLOURS = {
    LIGHT: {"keyword": "#0000ff", "string": "#a31515", "string.escape": "#ee0000",
            "comment": "#008000", "number": "#098658", "name.function": "#795e26",
            "name.class": "#267f99", "decorator": "#af00db", "builtin": "#267f99",
            "operator": "#383838", "preprocessor": "#af00db", "error": "#cd3131"},
    DARK: {"keyword": "#569cd6", "string": "#ce9178", "string.escape": "#d7ba7d",
           "comment": "#6a9955", "number": "#b5cea8", "name.function": "#dcdcaa",
           "name.class": "#4ec9b0", "decorator": "#c586c0", "builtin": "#4ec9b0",
           "operator": "#d4d4d4", "preprocessor": "#c586c0", "error": "#f44747"},
}

_current = LIGHT


def __getattr__(name: str) -> str:
    """The current theme's colour called ``name`` (``theme.BACKGROUND``)."""
    try:
        return _COLOURS[_current][name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def current_theme() -> str:
    """"light" or "dark": the theme in force."""
    return _current


def colour(name: str, theme: str | None = None) -> str:
    """The colour ``name`` of ``theme`` (the current one by default)."""
    return _COLOURS[theme or _current][name]


class ThemeChanges(QObject):
    """Tells widgets that the theme changed (they re-make what they made from its colours)."""

    sig_theme_changed = Signal(str)
    """The theme in force is now this one ("light" or "dark")."""


@lru_cache(maxsize=1)
def theme_changes() -> ThemeChanges:
    """The one ThemeChanges of this process (the theme, like the application palette, is the
    whole process's)."""
    return ThemeChanges()


def resolve_theme(choice: str, app=None) -> str:
    """"light" or "dark" for a choice of "light", "dark" or "system". The system's choice comes
    from Qt's style hints; where it is unknown (offscreen, a desktop that does not say) it is
    light."""
    if choice in THEMES:
        return choice
    if choice != SYSTEM:
        raise ValueError(f"unknown theme {choice!r}: use light, dark or system")
    from PySide6.QtWidgets import QApplication

    app = app or QApplication.instance()
    if app is None:
        return LIGHT
    # By name: the hub applies the theme before its first paint, which touches nothing of the
    # Qt namespace (its enums cost start-up time).
    return DARK if app.styleHints().colorScheme().name == "Dark" else LIGHT


def apply_theme(choice: str) -> str:
    """Make ``choice`` ("light", "dark" or "system") the theme of the whole application: the
    Fusion style with the theme's palette, and the shared colours; tells widgets when the theme
    in force changed. Returns the theme in force. "system" follows the system's later changes."""
    global _current
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    resolved = resolve_theme(choice, app)
    if app is not None:
        if app.property("workbench_theme_choice") is None:
            # Fusion draws every widget from the palette, so a dark palette darkens everything
            # (the platform styles keep some of their own light colours).
            app.setStyle("Fusion")
            app.styleHints().colorSchemeChanged.connect(lambda _scheme: _follow_system(app))
        app.setProperty("workbench_theme_choice", choice)
        app.setPalette(palette(resolved))
    changed = resolved != _current
    _current = resolved
    if changed:
        theme_changes().sig_theme_changed.emit(resolved)
    return resolved


def _follow_system(app) -> None:
    if app.property("workbench_theme_choice") == SYSTEM:
        apply_theme(SYSTEM)


def palette(theme: str) -> QPalette:
    """The application palette of ``theme``."""
    if theme == LIGHT:
        from PySide6.QtWidgets import QApplication, QStyleFactory

        app = QApplication.instance()
        fusion = app is not None and app.style().name().lower() == "fusion"
        light = (app.style() if fusion else QStyleFactory.create("Fusion")).standardPalette()
        light.setColor(QPalette.ColorRole.PlaceholderText, QColor(_COLOURS[LIGHT]["MUTED_TEXT"]))
        light.setColor(QPalette.ColorRole.Link, QColor(_COLOURS[LIGHT]["LINK"]))
        return light
    roles = QPalette.ColorRole
    colours = {
        roles.Window: "#252526", roles.WindowText: "#cccccc", roles.Base: "#1e1e1e",
        roles.AlternateBase: "#2a2a2b", roles.ToolTipBase: "#252526", roles.ToolTipText: "#cccccc",
        roles.Text: "#d4d4d4", roles.Button: "#333333", roles.ButtonText: "#cccccc",
        roles.BrightText: "#ffffff", roles.Highlight: "#264f78", roles.HighlightedText: "#ffffff",
        roles.Link: _COLOURS[DARK]["LINK"], roles.LinkVisited: "#c586c0",
        roles.Light: "#4a4a4a", roles.Midlight: "#3c3c3c", roles.Mid: "#2d2d2d",
        roles.Dark: "#1a1a1a", roles.Shadow: "#0f0f0f",
        roles.PlaceholderText: _COLOURS[DARK]["MUTED_TEXT"], roles.Accent: "#0e639c",
    }
    dark = QPalette()
    for role, value in colours.items():
        dark.setColor(role, QColor(value))
    disabled = QPalette.ColorGroup.Disabled
    for role in (roles.WindowText, roles.Text, roles.ButtonText):
        dark.setColor(disabled, role, QColor("#6b6b6b"))
    dark.setColor(disabled, roles.Highlight, QColor("#3a3a3a"))
    return dark


def text_formats() -> dict[str, QTextCharFormat]:
    """A QTextCharFormat for each highlighting format name, in the current theme's Pygments
    style."""
    return dict(_text_formats(_current))


@lru_cache(maxsize=len(THEMES))
def _text_formats(theme: str) -> dict[str, QTextCharFormat]:
    from pygments.styles import get_style_by_name
    from pygments.token import Token

    tokens = {"keyword": Token.Keyword, "string": Token.Literal.String,
              "string.escape": Token.Literal.String.Escape, "comment": Token.Comment,
              "number": Token.Literal.Number, "name.function": Token.Name.Function,
              "name.class": Token.Name.Class, "decorator": Token.Name.Decorator,
              "builtin": Token.Name.Builtin, "operator": Token.Operator,
              "preprocessor": Token.Comment.Preproc, "error": Token.Error}
    style = get_style_by_name(PYGMENTS_STYLES[theme])
    formats = {}
    for name, token in tokens.items():
        found = style.style_for_token(token)
        char_format = QTextCharFormat()
        char_format.setForeground(QColor(f"#{found['color']}" if found["color"]
                                         else _FALLBACK_CODE_COLOURS[theme][name]))
        if found["bold"]:
            char_format.setFontWeight(QFont.Weight.Bold)
        if found["italic"]:
            char_format.setFontItalic(True)
        formats[name] = char_format
    return formats


def editor_font(family: str = "", size: float = 0) -> QFont:
    """The editor's font: ``family`` at ``size`` points, or the system's fixed-pitch font at a
    comfortable size for what is not given."""
    font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    if family:
        font.setFamily(family)
    font.setStyleHint(QFont.StyleHint.Monospace)
    font.setFixedPitch(True)
    if size:
        font.setPointSizeF(size)
    elif font.pointSizeF() < 10:
        font.setPointSizeF(10)
    return font


def editor_style_sheet() -> str:
    """The style sheet of a code view (the editor, the hex view) in the current theme."""
    return f"QPlainTextEdit {{ background: {__getattr__('BACKGROUND')}; color: {__getattr__('FOREGROUND')}; }}"


_ROLE = re.compile(r"@([A-Z_]+)")


def themed(template: str) -> str:
    """``template`` with each ``@ROLE`` (``@MUTED_TEXT``) replaced by the current theme's colour."""
    return _ROLE.sub(lambda match: _COLOURS[_current][match.group(1)], template)


class _ThemedStyleSheet(QObject):
    """Keeps a widget's style sheet in the current theme's colours (a child of the widget, so
    it goes with it)."""

    def __init__(self, widget, template: str):
        super().__init__(widget)
        self.setObjectName("themed-style-sheet")
        self.template = template
        theme_changes().sig_theme_changed.connect(self.restyle)

    def restyle(self, _theme: str = "") -> None:
        self.parent().setStyleSheet(themed(self.template))


def set_themed_style_sheet(widget, template: str) -> None:
    """Give ``widget`` the style sheet ``template`` with its ``@ROLE`` colours (``"color:
    @ERROR_TEXT;"``), again whenever the theme changes; "" takes the style sheet away."""
    # Kept on the widget, not looked up with findChild: its options are a Qt enum, and the
    # first use of the Qt namespace costs a window tens of milliseconds before its first paint.
    keeper = getattr(widget, "_workbench_themed_style_sheet", None)
    if keeper is None:
        keeper = _ThemedStyleSheet(widget, template)
        widget._workbench_themed_style_sheet = keeper
    keeper.template = template
    keeper.restyle()

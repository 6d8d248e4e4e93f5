"""The light colour theme of every window: one text format per highlighting format name, and the
colours the editor, the diff panes and the hex view share."""

from __future__ import annotations

from PySide6.QtGui import QColor, QFont, QFontDatabase, QTextCharFormat

# Close to VS Code's "Light+" so the colours feel familiar.
COLOURS = {
    "keyword": ("#0000ff", False, False),
    "string": ("#a31515", False, False),
    "string.escape": ("#ee0000", False, False),
    "comment": ("#008000", False, True),
    "number": ("#098658", False, False),
    "name.function": ("#795e26", False, False),
    "name.class": ("#267f99", False, False),
    "decorator": ("#af00db", False, False),
    "builtin": ("#267f99", False, False),
    "operator": ("#383838", False, False),
    "preprocessor": ("#af00db", False, False),
    "error": ("#cd3131", False, False),
}

BACKGROUND = "#ffffff"
FOREGROUND = "#1f1f1f"
CURRENT_LINE = "#f2f6fc"
BRACKET_MATCH = "#c9e3ff"
BRACKET_UNMATCHED = "#ffd0d0"
FIND_MATCH = "#fde68a"
DIAGNOSTIC_ERROR = "#e51400"
DIAGNOSTIC_WARNING = "#d9a800"
GUTTER_BACKGROUND = "#f7f7f7"
GUTTER_NUMBER = "#9a9a9a"
GUTTER_CURRENT_NUMBER = "#1f1f1f"


def text_formats() -> dict[str, QTextCharFormat]:
    """A QTextCharFormat for each format name in the theme."""
    formats = {}
    for name, (colour, bold, italic) in COLOURS.items():
        char_format = QTextCharFormat()
        char_format.setForeground(QColor(colour))
        if bold:
            char_format.setFontWeight(QFont.Weight.Bold)
        if italic:
            char_format.setFontItalic(True)
        formats[name] = char_format
    return formats


def editor_font() -> QFont:
    """The system's fixed-pitch font at a comfortable size."""
    font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    font.setStyleHint(QFont.StyleHint.Monospace)
    font.setFixedPitch(True)
    if font.pointSizeF() < 10:
        font.setPointSizeF(10)
    return font

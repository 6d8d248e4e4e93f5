"""Icons drawn from two of the icon fonts the ``qtawesome`` package ships: VS Code's codicons
(``msc.``) and Material Design (``mdi6.``), without importing qtawesome itself.

Importing qtawesome costs about a second and 24 MB in every window process (it imports all of
PySide6 through qtpy), and its first icon loads all twelve of its fonts (19 MB more) where
Workbench uses two. So this module reads those two font files from qtawesome's folder, loads
each when its first icon is made, and draws a glyph as qtawesome does: 7/8 of the icon's
height, centred, in one colour (another when disabled).
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontDatabase, QIcon, QIconEngine, QPainter, QPixmap

# prefix → (font file, charmap file) patterns in qtawesome's fonts folder (the versions vary).
FONT_FILES = {
    "msc": ("codicon-*.ttf", "codicon-charmap-*.json"),
    "mdi6": ("materialdesignicons6-webfont-*.ttf", "materialdesignicons6-webfont-charmap-*.json"),
}
GLYPH_SHARE = 0.875


@dataclass(frozen=True)
class _Font:
    family: str
    glyphs: dict[str, str]


_fonts: dict[str, _Font | None] = {}


def fonts_folder() -> Path | None:
    """qtawesome's fonts folder, found without importing the package; None without it."""
    spec = importlib.util.find_spec("qtawesome")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "fonts"
    return folder if folder.is_dir() else None


def loaded_fonts() -> list[str]:
    """The prefixes whose fonts this process has loaded so far."""
    return [prefix for prefix, font in _fonts.items() if font is not None]


def has_icon(name: str) -> bool:
    """Whether ``name`` ("msc.play", "mdi6.folder") is a glyph of a font there is."""
    prefix, _, glyph = name.partition(".")
    font = _font(prefix)
    return font is not None and glyph in font.glyphs


def icon(name: str, colour: str, disabled_colour: str | None = None) -> QIcon:
    """The icon ``name`` ("msc.play", "mdi6.folder") in ``colour``; an empty icon when the font
    or the glyph is not there."""
    prefix, _, glyph = name.partition(".")
    font = _font(prefix)
    if font is None or glyph not in font.glyphs:
        return QIcon()
    return QIcon(_GlyphEngine(font.family, font.glyphs[glyph], QColor(colour), QColor(disabled_colour or colour)))


def _font(prefix: str) -> _Font | None:
    if prefix not in _fonts:
        _fonts[prefix] = _load(prefix)
    return _fonts[prefix]


def _load(prefix: str) -> _Font | None:
    folder = fonts_folder()
    if folder is None or prefix not in FONT_FILES:
        return None
    font_pattern, charmap_pattern = FONT_FILES[prefix]
    font_files, charmaps = sorted(folder.glob(font_pattern)), sorted(folder.glob(charmap_pattern))
    if not font_files or not charmaps:
        return None
    families = QFontDatabase.applicationFontFamilies(QFontDatabase.addApplicationFont(str(font_files[-1])))
    if not families:
        return None
    codes = json.loads(charmaps[-1].read_text(encoding="utf-8"))
    return _Font(families[0], {name: chr(int(code, 16)) for name, code in codes.items()})


class _GlyphEngine(QIconEngine):
    """One glyph of an icon font, drawn at any size."""

    def __init__(self, family: str, glyph: str, colour: QColor, disabled_colour: QColor):
        super().__init__()
        self._family, self._glyph = family, glyph
        self._colour, self._disabled_colour = colour, disabled_colour

    def paint(self, painter: QPainter, rect: QRect, mode: QIcon.Mode, state: QIcon.State) -> None:
        font = QFont(self._family)
        font.setPixelSize(max(1, round(GLYPH_SHARE * rect.height())))
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setFont(font)
        painter.setPen(self._disabled_colour if mode == QIcon.Mode.Disabled else self._colour)
        painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, self._glyph)
        painter.restore()

    def pixmap(self, size: QSize, mode: QIcon.Mode, state: QIcon.State) -> QPixmap:
        pixmap = QPixmap(size)
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        self.paint(painter, QRect(QPoint(0, 0), size), mode, state)
        painter.end()
        return pixmap

    def clone(self) -> QIconEngine:
        return _GlyphEngine(self._family, self._glyph, self._colour, self._disabled_colour)

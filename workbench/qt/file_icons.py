"""File-type icons from the Material Design set that ``qtawesome`` carries (drawn by
``icon_font``, which loads that one font without importing qtawesome), one per kind of file,
shared by every list of files: Quick Open, the Explorer, the editor tabs, the Models panel.

Without the font the platform's file icons are used instead. Icons are made once per kind.
"""

from __future__ import annotations

from PySide6.QtGui import QIcon

# (icon name, colour) per suffix; the colours read on light and dark backgrounds alike.
BY_SUFFIX: dict[str, tuple[str, str]] = {
    "py": ("mdi6.language-python", "#3776ab"), "pyi": ("mdi6.language-python", "#3776ab"),
    "ipynb": ("mdi6.notebook-outline", "#f37626"),
    "md": ("mdi6.language-markdown-outline", "#519aba"), "rst": ("mdi6.file-document-outline", "#519aba"),
    "txt": ("mdi6.file-document-outline", "#8a8a8a"),
    "json": ("mdi6.code-json", "#cb8a1d"), "toml": ("mdi6.cog-outline", "#9c6b30"),
    "yaml": ("mdi6.cog-outline", "#a074c4"), "yml": ("mdi6.cog-outline", "#a074c4"),
    "cfg": ("mdi6.cog-outline", "#8a8a8a"), "ini": ("mdi6.cog-outline", "#8a8a8a"),
    "csv": ("mdi6.file-delimited-outline", "#3c9a5f"), "tsv": ("mdi6.file-delimited-outline", "#3c9a5f"),
    "onnx": ("mdi6.cube-outline", "#5c6bc0"), "pt": ("mdi6.cube-outline", "#ee4c2c"),
    "pth": ("mdi6.cube-outline", "#ee4c2c"), "tflite": ("mdi6.cube-outline", "#f9a825"),
    "mnn": ("mdi6.cube-outline", "#26a69a"), "hparams": ("mdi6.tune-variant", "#7e57c2"),
    "png": ("mdi6.image-outline", "#26a69a"), "jpg": ("mdi6.image-outline", "#26a69a"),
    "jpeg": ("mdi6.image-outline", "#26a69a"), "svg": ("mdi6.image-outline", "#26a69a"),
    "sh": ("mdi6.console", "#4caf50"), "c": ("mdi6.language-c", "#5c6bc0"),
    "h": ("mdi6.language-c", "#8e24aa"), "cpp": ("mdi6.language-cpp", "#5c6bc0"),
    "js": ("mdi6.language-javascript", "#cbb91d"), "ts": ("mdi6.language-typescript", "#3178c6"),
    "rs": ("mdi6.language-rust", "#b7410e"), "go": ("mdi6.language-go", "#00add8"),
    "java": ("mdi6.language-java", "#b07219"), "html": ("mdi6.language-html5", "#e44d26"),
    "css": ("mdi6.language-css3", "#1572b6"), "zip": ("mdi6.zip-box-outline", "#8a8a8a"),
    "gz": ("mdi6.zip-box-outline", "#8a8a8a"), "pdf": ("mdi6.file-pdf-box", "#d32f2f"),
}
BY_NAME: dict[str, tuple[str, str]] = {
    ".gitignore": ("mdi6.git", "#f05133"), ".gitattributes": ("mdi6.git", "#f05133"),
    "workbench.toml": ("mdi6.cog-outline", "#5c6bc0"), "Dockerfile": ("mdi6.docker", "#2496ed"),
}
OTHER = ("mdi6.file-outline", "#8a8a8a")


class FileIcons:
    """The icon of each kind of file, made on first use."""

    def __init__(self):
        self._made: dict[tuple[str, str], QIcon] = {}
        self._platform = None

    def icon_for(self, name: str) -> QIcon:
        """The icon of a file called ``name`` (a path's last part, or the whole path)."""
        name = name.rpartition("/")[2]
        kind = BY_NAME.get(name) or BY_SUFFIX.get(name.rpartition(".")[2].lower() if "." in name else "", OTHER)
        icon = self._made.get(kind)
        if icon is None:
            icon = self._made[kind] = self._make(kind, name)
        return icon

    def _make(self, kind: tuple[str, str], name: str) -> QIcon:
        from workbench.qt import icon_font  # the font loads with the first icon shown

        if not icon_font.has_icon(OTHER[0]):
            return self._platform_icon(name)
        if not icon_font.has_icon(kind[0]):  # a name this version of the font lacks
            kind = OTHER
        return icon_font.icon(*kind)

    def _platform_icon(self, name: str) -> QIcon:
        from PySide6.QtCore import QFileInfo
        from PySide6.QtWidgets import QFileIconProvider

        if self._platform is None:
            self._platform = QFileIconProvider()
        return self._platform.icon(QFileInfo(name))

"""The icons Workbench shows, by the names it uses, from the icon fonts ``qtawesome`` ships
(VS Code's codicons, ``msc.``, and Material Design, ``mdi6.``; see ``icon_font``), drawn in the
palette's colours.

Loading a font takes a moment, so nothing here runs before a window's first paint: windows call
``ThemedIcons.set`` from their after-first-paint hooks. An icon made from the palette keeps the
colour it was made with, which is why ``ThemedIcons`` makes its icons again when the
application's palette changes (a theme switched live). Without the fonts, widgets simply keep
no icon.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QIcon, QPalette
from PySide6.QtWidgets import (
    QApplication,
    QToolButton,
    QTreeWidget,
    QTreeWidgetItem,
    QTreeWidgetItemIterator,
    QWidget,
)

from workbench.qt import icon_font
from workbench.qt.file_icons import FileIcons

# The name Workbench uses → the font's icon. Codicons where VS Code has one, so the window reads
# as VS Code's does; Material Design for what codicons lack.
NAMES: dict[str, str] = {
    # docks
    "explorer": "msc.files", "search": "msc.search", "source-control": "msc.source-control",
    "outline": "msc.list-tree", "problems": "msc.warning", "references": "msc.references",
    "runs": "msc.graph-line", "models": "mdi6.cube-outline", "devices": "msc.device-mobile",
    "console": "msc.terminal", "debug": "msc.debug-alt",
    # actions
    "run": "msc.play", "stop": "msc.debug-stop", "pause": "msc.debug-pause",
    "continue": "msc.debug-continue", "step-over": "msc.debug-step-over",
    "step-into": "msc.debug-step-into", "step-out": "msc.debug-step-out",
    "restart": "msc.debug-restart", "terminate": "msc.close", "refresh": "msc.refresh", "add": "msc.add",
    "remove": "msc.trash", "clear": "msc.clear-all", "settings": "msc.settings-gear",
    "link": "msc.link", "upload": "msc.cloud-upload", "download": "msc.cloud-download",
    "open": "msc.folder-opened", "save": "msc.save", "compare": "msc.diff",
    "inspect": "msc.inspect", "convert": "msc.arrow-swap", "quantize": "mdi6.tune-variant",
    "sparsify": "mdi6.grid-off", "chip": "msc.circuit-board", "cluster": "msc.server",
    "undo": "mdi6.undo", "redo": "mdi6.redo", "cut": "mdi6.content-cut", "copy": "msc.copy",
    "paste": "mdi6.content-paste", "layout": "msc.layout",
    # files
    "folder": "mdi6.folder", "folder-open": "mdi6.folder-open",
}


def icon(name: str, role: QPalette.ColorRole = QPalette.ColorRole.WindowText,
         colour: str | None = None) -> QIcon:
    """The icon ``name`` (a key of ``NAMES``, or a qtawesome name such as ``"mdi6.chip"``) in the
    palette's ``role`` colour as it is now (greyed as the palette greys disabled text), or in
    ``colour``. An empty icon without the fonts."""
    palette = QApplication.palette()
    colour = colour or palette.color(QPalette.ColorGroup.Active, role).name()
    return icon_font.icon(NAMES.get(name, name), colour, palette.color(QPalette.ColorGroup.Disabled, role).name())


class ThemedIcons(QObject):
    """Icons set on widgets and actions and made again when the application palette changes.

    One per window (``window``, whose palette-change events it watches: a filter on the
    application would see every event of the process); ``set`` gives a button, an action or a
    dock (its tab when tabbed) an icon, ``set_with`` any target through a function of the icon
    (a tab of a tab bar)."""

    def __init__(self, window: QWidget):
        super().__init__(window)
        self._uses: list[tuple[Callable[[QIcon], None], Callable[[], QIcon]]] = []
        self.files = FileIcons()
        self._folder: QIcon | None = None
        self._refresh_due = False
        window.installEventFilter(self)

    def set(self, target, name: str, role: QPalette.ColorRole = QPalette.ColorRole.WindowText) -> None:
        """Give ``target`` (anything with ``setIcon``, or a dock's ``setWindowIcon``) the icon
        ``name``, in the palette's colours from now on."""
        setter = target.setIcon if hasattr(target, "setIcon") else target.setWindowIcon
        self.set_with(setter, lambda: icon(name, role))

    def set_with(self, setter: Callable[[QIcon], None], make: Callable[[], QIcon]) -> None:
        """Call ``setter`` with ``make()`` now and whenever the palette changes."""
        setter(make())
        self._uses.append((setter, make))

    def file_icon(self, path: Path | str, is_folder: bool = False) -> QIcon:
        """The icon of a file by its name (file-type colours read on light and dark alike), or
        of a folder in the palette's colour."""
        if is_folder:
            if self._folder is None:
                self._folder = icon("folder")
            return self._folder
        return self.files.icon_for(str(path))

    def refresh(self) -> None:
        """Make every icon again from the palette as it is now."""
        self._folder = None
        alive = []
        for setter, make in self._uses:
            try:
                setter(make())
            except RuntimeError:  # its widget is gone
                continue
            alive.append((setter, make))
        self._uses = alive

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt override)
        if event.type() in (QEvent.Type.ApplicationPaletteChange, QEvent.Type.PaletteChange) \
                and not self._refresh_due:
            # Both events come for one change: the icons are made again once, after them.
            self._refresh_due = True
            QTimer.singleShot(0, self, self._refresh_once)
        return False

    def _refresh_once(self) -> None:
        self._refresh_due = False
        self.refresh()


TAB_ICON_PROPERTY = "workbenchTabIcon"


def name_tab_icon(widget: QWidget, name: str) -> None:
    """The icon ``name`` for ``widget`` when a window shows it as a document tab (a diff, a
    history): the window's icons are loaded after its first paint, so the widget only names it."""
    widget.setProperty(TAB_ICON_PROPERTY, name)


def decorate_button(icons: ThemedIcons, button, name: str) -> None:
    """Give a tool bar button the icon ``name`` beside its text, and drop from the text the sign
    that stood for an icon until now ("▶ Train" becomes "Train")."""
    sign, _, rest = button.text().partition(" ")
    if rest and sign and not sign[0].isalnum():
        button.setText(rest)
    if isinstance(button, QToolButton):
        button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
    icons.set(button, name)


def show_file_icons(tree: QTreeWidget, icons: ThemedIcons, is_file: Callable[[QTreeWidgetItem], bool]) -> None:
    """Keep a file-type icon on each item of ``tree`` that ``is_file`` (its first column's text
    is the file's name), for the items it has and those it gets."""
    due = []

    def decorate() -> None:
        due.clear()
        iterator = QTreeWidgetItemIterator(tree)
        while (item := iterator.value()) is not None:
            if item.icon(0).isNull() and is_file(item):
                item.setIcon(0, icons.file_icon(item.text(0)))
            iterator += 1

    def soon(*_args) -> None:
        if not due:  # one walk for a whole refresh's rows
            due.append(True)
            QTimer.singleShot(0, tree, decorate)

    tree.model().rowsInserted.connect(soon)
    decorate()

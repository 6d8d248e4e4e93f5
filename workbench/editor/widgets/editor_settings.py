"""The settings of a window's editors, applied to every open one as they change: font and size,
tab width, rulers, wrap, whitespace, the zoom of Ctrl+= / Ctrl+- / Ctrl+0, and autosave. The hex
and large-file views take the font, its size and the zoom.

The zoom is the window's own and lasts while it is open (points added to the font size
setting, every editor at once, as VS Code's zoom is the window's); the setting keeps the size
the user chose, and Ctrl+0 returns to it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QApplication, QWidget

from workbench.editor.options import EDITOR_KEYS, MAX_FONT_SIZE, MIN_FONT_SIZE, EditorOptions, editor_options
from workbench.editor.widgets.editor_tab import NOTICE_CHANGED_ON_DISK, NOTICE_DELETED, EditorTab

ZOOM_STEP = 1


class EditorSettingsFollower(QObject):
    """Keeps the editors ``editors()`` returns as ``settings`` say, and saves them by
    themselves through ``save(tab)`` when autosave is on.

    With ``settings`` None, the editors take ``options`` (the defaults when None) until
    ``follow(settings)``: a window's first editor paints with the font read cheaply before the
    settings load, and takes the rest of them just after."""

    def __init__(self, settings, editors: Callable[[], list[EditorTab]],
                 save: Callable[[EditorTab], bool], parent: QObject | None = None,
                 options: EditorOptions | None = None):
        super().__init__(parent)
        self.settings = None
        self._editors = editors
        self._save = save
        self.zoom = 0
        self.options: EditorOptions = options or EditorOptions()
        self._timers: dict[int, QTimer] = {}
        if settings is not None:
            self.follow(settings)

    def follow(self, settings) -> None:
        """Show the editors as ``settings`` say, now and as they change, and start autosave."""
        if self.settings is not None:
            return
        self.settings = settings
        settings.on_changed(self._on_settings_changed)
        QApplication.instance().focusChanged.connect(self._on_focus_changed)
        self._apply()

    def attach(self, tab: EditorTab) -> None:
        """Apply the options to a newly opened tab and watch its edits for autosave."""
        _show_with(tab, self.options)
        if tab.editor is None:
            return  # the hex and large-file views have no text to save
        timer = QTimer(tab, singleShot=True)
        timer.timeout.connect(lambda t=tab: self._autosave(t))
        self._timers[id(tab)] = timer
        tab.destroyed.connect(lambda _obj=None, key=id(tab): self._timers.pop(key, None))
        tab.editor.document().contentsChanged.connect(lambda t=tab: self._on_edited(t))

    # Zoom ------------------------------------------------------------------------------------

    def zoom_in(self) -> None:
        self._set_zoom(self.zoom + ZOOM_STEP)

    def zoom_out(self) -> None:
        self._set_zoom(self.zoom - ZOOM_STEP)

    def reset_zoom(self) -> None:
        self._set_zoom(0)

    def _set_zoom(self, zoom: int) -> None:
        size = self.options.font_size
        self.zoom = max(MIN_FONT_SIZE - size, min(MAX_FONT_SIZE - size, zoom))
        self._apply()

    # Following the settings ------------------------------------------------------------------

    def _on_settings_changed(self, keys: frozenset[str]) -> None:
        if keys & EDITOR_KEYS:
            self._apply()

    def _apply(self) -> None:
        if self.settings is None:
            options = replace(self.options, zoom=self.zoom)
        else:
            options = editor_options(self.settings, self.zoom)
        if options == self.options:
            return
        self.options = options
        for tab in self._editors():
            _show_with(tab, options)
        if options.autosave != "after_delay":
            for timer in self._timers.values():
                timer.stop()

    # Autosave --------------------------------------------------------------------------------

    def _on_edited(self, tab: EditorTab) -> None:
        if self.options.autosave == "after_delay" and tab.is_modified():
            timer = self._timers.get(id(tab))
            if timer is not None:
                timer.start(self.options.autosave_delay)

    def _on_focus_changed(self, old: QWidget | None, new: QWidget | None) -> None:
        if self.options.autosave != "on_focus_change" or old is None:
            return
        for tab in self._editors():
            if tab.editor is not None and (old is tab.editor or tab.editor.isAncestorOf(old)):
                if new is None or not tab.isAncestorOf(new):
                    self._autosave(tab)
                return

    def _autosave(self, tab: EditorTab) -> None:
        # A file changed on disk waits for the user's choice: saving would overwrite the
        # other program's change without asking.
        # A deleted file stays deleted until the user saves it again.
        waiting = any(tab.notices.notice(topic) is not None for topic in (NOTICE_CHANGED_ON_DISK, NOTICE_DELETED))
        if tab.is_modified() and not tab.is_read_only() and not waiting:
            self._save(tab)


def _show_with(tab: EditorTab, options: EditorOptions) -> None:
    """Show ``tab`` as ``options`` say, whichever view it has (code editor, hex, large file)."""
    for view in (tab.editor, tab.hex_view, tab.large_view):
        if view is not None:
            view.set_options(options)

"""The project window: explorer, tabbed editors, status bar, docks, menus and command palette.

Capabilities plug in through ``commands`` (actions in menus, palette and context menus),
``add_dock`` (their panels), ``diagnostics``, ``completions`` and ``hovers`` (checkers,
completions and hover help for the files they understand) and ``on_event`` (events other
windows broadcast).
"""

from __future__ import annotations

import base64
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from PySide6.QtCore import QByteArray, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QPalette
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QInputDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QStackedWidget,
    QTabWidget,
    QWidget,
)

from workbench import __version__
from workbench.editor import EditorError, HotExitStore
from workbench.editor.assist import CompletionProviders, HoverProviders
from workbench.editor.diagnostics import DiagnosticsProviders
from workbench.editor.widgets import EditorCommands, EditorTab, open_editor_tab
from workbench.editor.options import EditorOptions
from workbench.editor.widgets.editor_settings import EditorSettingsFollower
from workbench.ipc import messages
from workbench.ipc.errors import RpcError
from workbench.project import (
    OpenFile,
    Project,
    ProjectError,
    WindowState,
    WindowStateStore,
    create_file,
    user_config_dir,
)
from workbench.project.widgets import ProjectTree
from workbench.qt.paint import after_first_paint
from workbench.qt.theme import DARK, SYSTEM, apply_theme, resolve_theme
from workbench.qt.tasks import TaskRunner
from workbench.ui.capabilities import install_capabilities
from workbench.ui.command_palette import CommandPalette
from workbench.ui.commands import CommandRegistry, add_quit_command
from workbench.ui.dock_layout import DockLayout, toggle_dock
from workbench.ui.edit_commands import FocusedWidgetCommands, group_edit_menu
from workbench.ui.appearance import follow_settings_files, follow_theme_setting, window_settings
from workbench.ui.first_paint_settings import read_first_paint_settings
from workbench.ui.menus import MenuBuilder

if TYPE_CHECKING:
    from workbench.settings import Settings

STATE_SAVE_DELAY_MS = 1000

log = logging.getLogger(__name__)
# Tabs of capabilities that are still getting ready (Git reading its repository) are tried again
# this often, for at most this many times.
REOPEN_RETRY_MS = 200
REOPEN_ATTEMPTS = 50



# A project window opened for the first time takes this share of the screen (VS Code and
# Spyder open near-maximised): at 1200×780 the editor showed 24 lines.
FIRST_OPEN_SHARE = (0.8, 0.85)
FIRST_OPEN_SMALLEST = QSize(1200, 780)
FIRST_OPEN_LARGEST = QSize(2200, 1400)


def first_open_size(available: QSize | None) -> QSize:
    """The size of a project window with no saved geometry on a screen whose available area is
    ``available``: a large share of it, never below 1200×780 (the window manager fits a window
    to a smaller screen)."""
    if available is None or available.isEmpty():
        return QSize(FIRST_OPEN_SMALLEST)
    width = min(max(int(available.width() * FIRST_OPEN_SHARE[0]), FIRST_OPEN_SMALLEST.width()),
                FIRST_OPEN_LARGEST.width())
    height = min(max(int(available.height() * FIRST_OPEN_SHARE[1]), FIRST_OPEN_SMALLEST.height()),
                 FIRST_OPEN_LARGEST.height())
    return QSize(width, height)


class ProjectWindow(QMainWindow):
    """One open project."""

    sig_closed = Signal()
    """The window has closed (its state and unsaved buffers are on disk)."""

    sig_broadcast = Signal(str, object)
    """An event (name, JSON-able data) for every other Workbench window."""

    sig_capabilities_installed = Signal()
    """The capabilities' docks and commands are in place (just after the first paint)."""

    sig_editor_opened = Signal(object)
    """A file was opened in a new editor tab (the ``EditorTab``), its providers attached."""

    def __init__(self, project: Project, parent: QWidget | None = None, settings: Settings | None = None):
        super().__init__(parent)
        self.project = project
        self._settings = settings
        self._settings_followed = False
        self.editor_settings = EditorSettingsFollower(None, self.editors, self._save, self,
                                                      self._before_first_paint())
        if settings is not None:
            self.follow_settings()
        self._settings_window = None
        self._documents_to_reopen: list[dict] = []
        self._front_document: QWidget | None = None
        self.commands = CommandRegistry()
        self.discard_changes_on_close = False
        self.hot_exit = HotExitStore(project.root)
        self._state_store = WindowStateStore(project)
        self._event_handlers: dict[str, list[Callable[[object], None]]] = {}
        self.hub_requester: Callable[..., None] | None = None
        """Set by the window's process: ``(method, params, on_result, on_error)`` to the hub."""
        self.diagnostics = DiagnosticsProviders()
        self.diagnostics.on_registered(self._attach_diagnostics)
        self.completions = CompletionProviders()
        self.completions.on_registered(self._attach_completions)
        self.hovers = HoverProviders()
        self.hovers.on_registered(self._attach_hover)
        self._diagnostic_shown = ""
        self.dock_layout = DockLayout(self)
        self.icons = None
        """The window's ``ThemedIcons`` once the icon font is loaded (after the first paint)."""
        self.setWindowTitle(f"{project.name} — Workbench")
        self.setObjectName("project-window")

        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.setTabsClosable(True)
        self.tabs.setMovable(True)
        self.tabs.tabCloseRequested.connect(self.close_tab)
        self.tabs.currentChanged.connect(self._on_current_tab_changed)
        empty = QLabel("Open a file from the Explorer, or press Ctrl+Shift+P for all commands.")
        empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        empty.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self._center = QStackedWidget()
        self._center.addWidget(empty)
        self._center.addWidget(self.tabs)
        self.setCentralWidget(self._center)

        self._register_commands()
        self.tree = ProjectTree(project.root, self.commands)
        self.tree.sig_file_activated.connect(self.open_file)
        self.tree.sig_path_renamed.connect(self._follow_rename)
        self.tree.sig_path_deleted.connect(self._close_deleted)
        self.explorer = self.add_dock("explorer", "Explorer", self.tree, Qt.DockWidgetArea.LeftDockWidgetArea,
                                      shortcut="Ctrl+Shift+E")

        self._status_position = QLabel()
        self._status_encoding = QLabel()
        self._status_eol = QLabel()
        self._status_language = QLabel()
        for label in (self._status_position, self._status_encoding, self._status_eol, self._status_language):
            label.setContentsMargins(8, 0, 8, 0)
            self.statusBar().addPermanentWidget(label)
        if not project.writable:
            self.statusBar().addWidget(QLabel("Read-only folder: edits cannot be saved here"))

        self.menus = MenuBuilder(self, self.commands, self.show_error)
        self.menus.add_separator("File")
        add_quit_command(self.commands, self.quit_workbench)
        self.menus.prune_empty()
        self.palette = CommandPalette(self.commands, self)
        self.palette.sig_command_chosen.connect(self.menus.run)

        self._progress_text = ""
        self.tasks = TaskRunner(self)
        self.tasks.sig_progress.connect(self._show_progress)
        self.capabilities_installed = False
        after_first_paint(self, self.install_capabilities)

        self._state_timer = QTimer(self)
        self._state_timer.setSingleShot(True)
        self._state_timer.timeout.connect(self.save_state)
        self._restore_state()
        self._update_status()

    # --- extension points ---------------------------------------------------------------------

    def add_dock(self, dock_id: str, title: str, widget: QWidget,
                 area: Qt.DockWidgetArea = Qt.DockWidgetArea.RightDockWidgetArea,
                 shortcut: str | None = None) -> QDockWidget:
        """Add a capability's panel; its place and visibility are saved with the window."""
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock-{dock_id}")
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        dock.show()  # a dock added to a window already on screen starts hidden otherwise
        if self.dock_layout.restored:
            # Added after the saved layout came back: the best Qt can do for one dock alone.
            self.restoreDockWidget(dock)
        self.commands.add(f"view.toggle.{dock_id}", f"Toggle {title}", lambda: toggle_dock(dock),
                          category="View", menu="View", shortcut=shortcut, checked=lambda: not dock.isHidden())
        return dock

    def add_status_widget(self, widget: QWidget, left: bool = False) -> None:
        """Put a capability's widget in the status bar's permanent area (``left``: first in it).

        Only permanent widgets: Qt draws temporary messages over the others."""
        if left:
            self.statusBar().insertPermanentWidget(0, widget)
        else:
            self.statusBar().addPermanentWidget(widget)

    def add_tab(self, widget: QWidget, title: str, tooltip: str = "") -> None:
        """Show a capability's document (a diff, a history) as a tab beside the editors."""
        index = self.tabs.indexOf(widget)
        if index < 0:
            index = self.tabs.addTab(widget, title)
            self.tabs.setTabToolTip(index, tooltip or title)
        self.tabs.setCurrentIndex(index)
        self._center.setCurrentWidget(self.tabs)

    @property
    def settings(self) -> Settings:
        """The user's and the project's settings (``workbench.settings``); the editors and the
        theme follow them, and they are read again when their files change (another window or
        process, a hand edit). Loaded just after the first paint, or when first asked for."""
        if not self._settings_followed:
            self.follow_settings()
        return self._settings

    def _before_first_paint(self) -> EditorOptions:
        """What the first paint needs of the settings, read cheaply: the dark theme when the user
        chose it (or the system's choice is dark), so the window never flashes light; the
        options the first editors paint with (the font; the rest comes with the settings)."""
        if self._settings is not None:
            return EditorOptions()  # the settings given are followed at once
        chosen = read_first_paint_settings(user_config_dir(), self.project.settings)
        if resolve_theme(chosen.theme or SYSTEM) == DARK:
            apply_theme(chosen.theme or SYSTEM)
        font = {"font_family": chosen.font_family}
        if chosen.font_size is not None:
            font["font_size"] = chosen.font_size
        return EditorOptions(**font)

    def follow_settings(self) -> None:
        """Load the settings and follow them: their files, the theme (the light one is the
        platform's look until now), every editor setting. The window does it just after its
        first paint; a spare window does it while it waits."""
        if self._settings_followed:
            return
        self._settings_followed = True
        if self._settings is None:
            self._settings = window_settings(self.project.project_file)
        follow_settings_files(self._settings, self)
        follow_theme_setting(self._settings)
        self.editor_settings.follow(self._settings)

    def install_capabilities(self, entries: tuple[str, ...] | None = None) -> None:
        if self.capabilities_installed:
            return
        self.capabilities_installed = True
        # The settings come first: the theme styles the docks as they are made.
        self.follow_settings()
        # Qt widens a shown window for the moment a new dock stands beside the others: the
        # window keeps the size the user (or the screenshot) gave it.
        size = self.size()
        self.dock_layout.place_as_on_first_open()
        install_capabilities(self, entries)
        # The icon font loads here, after the first paint; the view menu's Reset Layout needs
        # every dock in.
        from workbench.ui.view_menu import install_view_menu
        from workbench.ui.window_icons import install_window_icons

        install_view_menu(self)
        group_edit_menu(self.menus)
        self.icons = install_window_icons(self)
        if self.isVisible():
            self.layout().activate()
            self.resize(size)
        self.dock_layout.restore_all()
        if getattr(self, "_restored_geometry", False) and self.screen() is not None:  # saved on a larger screen
            fits = self.size().boundedTo(self.screen().availableGeometry().size()).expandedTo(self.minimumSizeHint())
            if fits != self.size():
                self.resize(fits)
        self.menus.prune_empty()
        if self.settings.problems:
            # After the first paint, as one message: a bad line in a settings file never stops
            # the window, and the defaults apply until it is fixed.
            self.show_error("Some settings were not used:\n\n" + "\n\n".join(self.settings.problems))
        self._reopen_documents()
        self.sig_capabilities_installed.emit()

    def _show_progress(self, text: str) -> None:
        if text:
            self.statusBar().showMessage(text)
            self._progress_text = text
        elif self.statusBar().currentMessage() == self._progress_text:
            # Only our own progress line goes; an error shown since stays for the user to read.
            self.statusBar().clearMessage()

    def on_event(self, event: str, handler: Callable[[object], None]) -> None:
        """Call ``handler(data)`` when another window broadcasts ``event``."""
        self._event_handlers.setdefault(event, []).append(handler)

    def handle_event(self, event: str, data: object) -> None:
        for handler in self._event_handlers.get(event, []):
            handler(data)

    def request_hub(self, method: str, params: dict | None = None,
                    on_result: Callable[[object], None] | None = None,
                    on_error: Callable[[Exception], None] | None = None) -> None:
        """Ask the hub (``hub.open_tool``, ...) through the window's process; the answer comes
        to ``on_result`` later, and ``on_error`` gets an error with a ``message`` when there is
        no hub (the process may serve some requests itself then) or it refuses."""
        if self.hub_requester is not None:
            self.hub_requester(method, params or {}, on_result, on_error)
        elif on_error is not None:
            error = RpcError(RpcError.TIMEOUT, "This window is not linked to a Workbench hub.")
            error.no_hub = True  # type: ignore[attr-defined]
            on_error(error)

    def quit_workbench(self) -> None:
        """Close every Workbench window, each as its user would, and end Workbench (the hub
        does it); with no hub, close this window. Runs go on: they outlive windows."""

        def failed(error) -> None:
            if getattr(error, "no_hub", False):
                self.close()
            elif error.code != RpcError.TIMEOUT:  # a late answer says nothing about the quit
                self.show_error(f"Workbench could not quit: {error.message}")

        self.request_hub(messages.HUB_QUIT_ALL, {}, on_error=failed)

    # --- editors ------------------------------------------------------------------------------

    def editors(self) -> list[EditorTab]:
        tabs = (self.tabs.widget(i) for i in range(self.tabs.count()))
        return [tab for tab in tabs if isinstance(tab, EditorTab)]

    def current_editor(self) -> EditorTab | None:
        tab = self.tabs.currentWidget()
        return tab if isinstance(tab, EditorTab) else None

    def open_file(self, path: Path | str, line: int | None = None, column: int = 1) -> EditorTab | None:
        """Show ``path`` in a tab (the existing one if it is open); None when it cannot be opened."""
        path = Path(path)
        if not path.is_absolute():
            path = self.project.root / path
        path = path.resolve()
        for index, tab in enumerate(self.editors()):
            if tab.path == path:
                self.tabs.setCurrentIndex(index)
                if line:
                    tab.set_cursor_position(line, column)
                tab.focus_body()
                return tab
        try:
            tab = open_editor_tab(path, self.hot_exit if self.project.writable else None, self)
        except EditorError as exc:
            self.show_error(str(exc))
            return None
        self.editor_settings.attach(tab)
        tab.sig_modified_changed.connect(lambda _modified, t=tab: self._update_tab_title(t))
        tab.sig_cursor_moved.connect(lambda _line, _col: self._on_cursor_moved())
        tab.sig_diagnostics_changed.connect(self._update_status)
        provider = self.diagnostics.provider_for(path)
        if provider is not None:
            tab.attach_diagnostics(provider)
        completion = self.completions.provider_for(path)
        if completion is not None:
            tab.attach_completions(completion)
        hover = self.hovers.provider_for(path)
        if hover is not None:
            tab.attach_hover(hover)
        index = self.tabs.addTab(tab, path.name)
        self.tabs.setTabToolTip(index, str(path))
        self._update_tab_title(tab)
        self.tabs.setCurrentIndex(index)
        self._center.setCurrentWidget(self.tabs)
        if line:
            tab.set_cursor_position(line, column)
        tab.focus_body()
        self._schedule_state_save()
        self.sig_editor_opened.emit(tab)
        return tab

    def close_tab(self, index: int) -> bool:
        """Close the tab at ``index``; asks first when it has unsaved edits. False if kept."""
        tab = self.tabs.widget(index)
        if tab is None:
            return False
        if isinstance(tab, EditorTab) and tab.is_modified():
            answer = self.ask_save_changes(tab)
            if answer == "cancel":
                return False
            if answer == "save" and not self._save(tab):
                return False
            if answer == "discard":
                self.hot_exit.discard(tab.path)
        self.tabs.removeTab(index)
        tab.deleteLater()
        if not self.tabs.count():
            self._center.setCurrentIndex(0)
        self._schedule_state_save()
        return True

    def ask_save_changes(self, tab: EditorTab) -> str:
        """'save', 'discard' or 'cancel' for closing a modified tab (replaceable in tests)."""
        box = QMessageBox(QMessageBox.Icon.Question, "Unsaved changes",
                          f"Save the changes to {tab.path.name} before closing it?",
                          QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
                          | QMessageBox.StandardButton.Cancel, self)
        answer = box.exec()
        return {QMessageBox.StandardButton.Save: "save",
                QMessageBox.StandardButton.Discard: "discard"}.get(QMessageBox.StandardButton(answer), "cancel")

    def _save(self, tab: EditorTab) -> bool:
        if not tab.is_modified():
            # Rewriting an unchanged file would only wake every watcher of it (and git's index).
            self.statusBar().showMessage(f"{tab.path.name} has no unsaved changes", 3000)
            return True
        try:
            tab.save()
        except EditorError as exc:
            self.show_error(str(exc))
            return False
        self.statusBar().showMessage(f"Saved {tab.path.name}", 3000)
        return True

    def save_as(self, path: str | None = None) -> str | None:
        """Write the current tab to another file and continue there; the old file is untouched."""
        tab = self.current_editor()
        if path is None:
            path, _ = QFileDialog.getSaveFileName(self, "Save As", str(tab.path))
            if not path:
                return None
        target = Path(path).resolve()
        if target == tab.path:
            return str(target) if self._save(tab) else None
        try:
            tab.save_copy(target)
        except EditorError as exc:
            self.show_error(str(exc))
            return None
        line, column = tab.cursor_position()
        index = self.tabs.indexOf(tab)
        tab.discard_hot_exit()
        self.tabs.removeTab(index)
        tab.deleteLater()
        replacement = self.open_file(target, line, column)
        if replacement is not None:
            self.tabs.tabBar().moveTab(self.tabs.indexOf(replacement), index)
        return str(target)

    def save_all(self) -> int:
        saved = 0
        for tab in self.editors():
            if tab.is_modified() and not tab.is_read_only() and self._save(tab):
                saved += 1
        return saved

    def _tabs_under(self, path: Path) -> list[EditorTab]:
        path = path.resolve()
        return [tab for tab in self.editors() if tab.path == path or path in tab.path.parents]

    def _follow_rename(self, old: Path, new: Path) -> None:
        """Tabs of a renamed file or folder move to the new path, unsaved edits included."""
        for tab in self._tabs_under(old):
            moved = new.resolve() / tab.path.relative_to(old.resolve())
            index = self.tabs.indexOf(tab)
            line, column = tab.cursor_position()
            edited = tab.text() if tab.is_modified() else None
            tab.discard_hot_exit()
            self.tabs.removeTab(index)
            tab.deleteLater()
            replacement = self.open_file(moved, line, column)
            if replacement is None:
                continue
            self.tabs.tabBar().moveTab(self.tabs.indexOf(replacement), index)
            if edited is not None:
                replacement.editor.selectAll()
                replacement.editor.insertPlainText(edited)
                replacement.set_cursor_position(line, column)

    def _close_deleted(self, path: Path) -> None:
        """Tabs of a deleted file close, unless they hold unsaved edits (those stay, to save)."""
        for tab in self._tabs_under(path):
            if not tab.is_modified():
                self.close_tab(self.tabs.indexOf(tab))

    def _update_tab_title(self, tab: EditorTab) -> None:
        index = self.tabs.indexOf(tab)
        if index >= 0:
            self.tabs.setTabText(index, f"{tab.path.name} ●" if tab.is_modified() else tab.path.name)
        if tab is self.current_editor():
            self._update_title()
        self._schedule_state_save()

    def _on_cursor_moved(self) -> None:
        self._update_status()
        self._schedule_state_save()  # so a crash still brings the cursor back where it was

    def _on_current_tab_changed(self, _index: int) -> None:
        self._update_status()
        self._update_title()
        self._schedule_state_save()

    def _update_title(self) -> None:
        tab = self.current_editor()
        prefix = f"{tab.path.name}{' ●' if tab.is_modified() else ''} — " if tab is not None else ""
        self.setWindowTitle(f"{prefix}{self.project.name} — Workbench")

    def _attach_diagnostics(self, pattern: str, provider) -> None:
        for tab in self.editors():
            if self.diagnostics.matches(pattern, tab.path):
                tab.attach_diagnostics(provider)

    def _attach_completions(self, pattern: str, provider) -> None:
        for tab in self.editors():
            if self.completions.matches(pattern, tab.path):
                tab.attach_completions(provider)

    def _attach_hover(self, pattern: str, provider) -> None:
        for tab in self.editors():
            if self.hovers.matches(pattern, tab.path):
                tab.attach_hover(provider)

    def _show_diagnostic(self, tab: EditorTab | None) -> None:
        """The problem on the cursor's line goes to the status bar (and away when it is fixed)."""
        message = tab.diagnostic_message() if tab is not None else ""
        if message:
            self.statusBar().showMessage(message)
        elif self._diagnostic_shown and self.statusBar().currentMessage() == self._diagnostic_shown:
            self.statusBar().clearMessage()
        self._diagnostic_shown = message

    def _update_status(self) -> None:
        tab = self.current_editor()
        self._show_diagnostic(tab)
        if tab is None:
            for label in (self._status_position, self._status_encoding, self._status_eol, self._status_language):
                label.clear()
            return
        line, column = tab.cursor_position()
        status = tab.status()
        self._status_position.setText(f"Ln {line}, Col {column}")
        self._status_encoding.setText(str(status.get("encoding", "")).upper())
        self._status_eol.setText(str(status.get("eol", "")))
        language = str(status.get("language", ""))
        self._status_language.setText(f"{language} (read-only)" if status.get("read_only") else language)

    # --- commands -----------------------------------------------------------------------------

    def _register_commands(self) -> None:
        add = self.commands.add
        editor_commands = EditorCommands(self.current_editor)
        has_editor, writable_editor = editor_commands.has_editor, editor_commands.has_writable_editor
        add("workbench.showCommands", "Show All Commands", self.show_command_palette,
            category="View", menu="View", shortcut="Ctrl+Shift+P")
        add("file.newFile", "New File…", self.new_file, category="File", menu="File", shortcut="Ctrl+N")
        add("file.open", "Open File…", self._open_file_command, category="File", menu="File", shortcut="Ctrl+O")
        add("file.save", "Save", lambda: self._save(self.current_editor()), category="File", menu="File",
            shortcut="Ctrl+S", enabled=writable_editor)
        add("file.saveAs", "Save As…", self.save_as, category="File", menu="File",
            shortcut="Ctrl+Shift+S", enabled=has_editor)
        add("file.saveAll", "Save All", self.save_all, category="File", menu="File", shortcut="Ctrl+Alt+S")
        add("file.closeEditor", "Close Editor", lambda: self.close_tab(self.tabs.currentIndex()),
            category="File", menu="File", shortcut="Ctrl+W", enabled=has_editor)
        add("file.closeWindow", "Close Window", self.close, category="File", menu="File", shortcut="Ctrl+Shift+W")
        self.focused_edits = FocusedWidgetCommands(self)
        self.focused_edits.register(self.commands)
        editor_commands.register(self.commands)
        add("workbench.settings", "Settings…", self.show_settings, category="Preferences",
            menu="File/Preferences", shortcut="Ctrl+,")
        for choice, title in (("light", "Light"), ("dark", "Dark"), ("system", "Follow the System")):
            add(f"workbench.theme.{choice}", f"Color Theme: {title}",
                lambda c=choice: self.set_setting("appearance.theme", c),
                category="Preferences", menu="File/Preferences")
        follower = self.editor_settings
        add("view.zoomIn", "Zoom In Editors", follower.zoom_in, category="View", menu="View", shortcut="Ctrl+=")
        add("view.zoomOut", "Zoom Out Editors", follower.zoom_out, category="View", menu="View", shortcut="Ctrl+-")
        add("view.resetZoom", "Reset Editor Zoom", follower.reset_zoom, category="View", menu="View",
            shortcut="Ctrl+0")
        add("go.nextEditor", "Next Editor", lambda: self._cycle_tab(1), category="Go", menu="Go",
            shortcut="Ctrl+PgDown", enabled=has_editor)
        add("go.previousEditor", "Previous Editor", lambda: self._cycle_tab(-1), category="Go", menu="Go",
            shortcut="Ctrl+PgUp", enabled=has_editor)
        add("help.about", "About Workbench", self._about, category="Help", menu="Help")

    def set_setting(self, key: str, value) -> None:
        """Write ``value`` for ``key`` in the user's settings (a file that cannot be changed is
        said, not raised)."""
        from workbench.settings import SettingsError

        try:
            self.settings.set(key, value)
        except SettingsError as exc:
            self.show_error(str(exc))

    def show_settings(self) -> None:
        """Open the Settings window (or raise the open one)."""
        from workbench.ui.settings_window import SettingsWindow  # not needed to start a window

        if self._settings_window is None:
            self._settings_window = SettingsWindow(self.settings, self)
            self._settings_window.destroyed.connect(lambda: setattr(self, "_settings_window", None))
        self._settings_window.show()
        self._settings_window.raise_()
        self._settings_window.activateWindow()

    def show_command_palette(self) -> None:
        self.palette.open()

    def new_file(self, name: str | None = None) -> EditorTab | None:
        if name is None:
            name, ok = QInputDialog.getText(self, "New File", f"File name in {self.project.name}:")
            if not ok or not name:
                return None
        try:
            path = create_file(self.project.root, name)
        except ProjectError as exc:
            self.show_error(str(exc))
            return None
        return self.open_file(path)

    def _open_file_command(self, path: str | None = None, line: int | None = None) -> str | None:
        if path is None:
            path, _ = QFileDialog.getOpenFileName(self, "Open File", str(self.project.root))
            if not path:
                return None
        tab = self.open_file(Path(path), line)
        return str(tab.path) if tab else None

    def _cycle_tab(self, step: int) -> None:
        if self.tabs.count():
            self.tabs.setCurrentIndex((self.tabs.currentIndex() + step) % self.tabs.count())

    def _about(self) -> None:
        QMessageBox.about(self, "About Workbench", f"Workbench {__version__}")

    def show_error(self, message: str, details: str = "") -> None:
        """Tell the user without blocking the window (the message also goes to the status bar);
        ``details`` (a tool's own output, say) sits behind the box's "Show Details…" button."""
        self.statusBar().showMessage(message, 10_000)
        box = QMessageBox(QMessageBox.Icon.Warning, "Workbench", message, QMessageBox.StandardButton.Ok, self)
        if details.strip():
            box.setDetailedText(details)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()

    def describe(self) -> dict:
        current = self.current_editor()
        return {
            "project": str(self.project.root),
            "title": self.windowTitle(),
            "open_files": [str(tab.path) for tab in self.editors()],
            "modified": [str(tab.path) for tab in self.editors() if tab.is_modified()],
            "current_file": str(current.path) if current else None,
        }

    # --- window state -------------------------------------------------------------------------

    def _schedule_state_save(self) -> None:
        self._state_timer.start(STATE_SAVE_DELAY_MS)

    def save_state(self) -> None:
        open_files = []
        for tab in self.editors():
            line, column = tab.cursor_position()
            open_files.append(OpenFile(self._relative(tab.path), line, column))
        current = self.current_editor()
        first_open_b64, first_open_fronts = self.dock_layout.first_open_b64()
        state = WindowState(
            geometry_b64=base64.b64encode(bytes(self.saveGeometry().data())).decode("ascii"),
            dock_state_b64=self.dock_layout.state_b64(),
            open_files=open_files,
            current_file=self._relative(current.path) if current else None,
            tree_expanded=self.tree.expanded_paths(),
            front_docks=self.dock_layout.front_docks(),
            first_open_dock_state_b64=first_open_b64,
            first_open_front_docks=first_open_fronts,
            documents=self._documents(),
        )
        self._state_store.save(state)

    def _documents(self) -> list[dict]:
        """The tabs that are not editors and say how to open them again (``workbench.qt.reopen``)."""
        from workbench.qt.reopen import reopen_spec

        documents = []
        for index in range(self.tabs.count()):
            widget = self.tabs.widget(index)
            spec = reopen_spec(widget) if widget is not None else None
            if spec is not None:
                documents.append({"command": spec[0], "args": spec[1],
                                  "current": widget is self.tabs.currentWidget()})
        return documents

    def _reopen_documents(self, attempts_left: int = REOPEN_ATTEMPTS) -> None:
        """Open again the diffs and histories the window had. A command not enabled yet (the
        Git capability still reading the repository) is tried again a little later; one that
        fails (a file gone) is left out quietly."""
        waiting = []
        if self._front_document is None and not any(d.get("current") for d in self._documents_to_reopen):
            self._front_document = self.tabs.currentWidget()  # an editor was in front: it stays there
        for document in self._documents_to_reopen:
            command = document["command"]
            if command not in self.commands:
                continue
            if not self.commands.get(command).is_enabled():
                waiting.append(document)
                continue
            try:
                widget = self.commands.execute(command, **document["args"])
            except Exception as exc:  # noqa: BLE001 - a tab that cannot come back is only left out
                log.info("The tab %s %s was not reopened: %s", command, document["args"], exc)
                continue
            if document.get("current") and isinstance(widget, QWidget):
                self._front_document = widget
        # Each tab opened comes to the front: the one that was in front goes there once all are in.
        front = self._front_document
        if front is not None and self.tabs.indexOf(front) >= 0:
            self.tabs.setCurrentWidget(front)
        self._documents_to_reopen = waiting
        if waiting and attempts_left > 0:
            QTimer.singleShot(REOPEN_RETRY_MS, lambda: self._reopen_documents(attempts_left - 1))

    def _relative(self, path: Path) -> str:
        try:
            return path.relative_to(self.project.root).as_posix()
        except ValueError:
            return str(path)

    def _restore_state(self) -> None:
        state = self._state_store.load()
        self._restored_geometry = bool(state.geometry_b64) and self.restoreGeometry(
            QByteArray(base64.b64decode(state.geometry_b64)))
        if not self._restored_geometry:
            self.resize(first_open_size(self.screen().availableGeometry().size()
                                        if self.screen() is not None else None))
        # The docks there are now (the Explorer) take their places at once; the capabilities'
        # docks come after the first paint, and then the whole saved layout is restored.
        self.dock_layout.load(state.dock_state_b64, state.front_docks, state.first_open_dock_state_b64,
                              state.first_open_front_docks)
        wanted = [(f.path, f.line, f.column) for f in state.open_files]
        # Buffers with unsaved edits come back even if their tab was not saved in the state.
        for entry in self.hot_exit.entries():
            relative = self._relative(self.hot_exit.absolute_path(entry))
            if relative not in [w[0] for w in wanted]:
                wanted.append((relative, 1, 1))
        if not wanted and self.project.main_file is not None:
            wanted.append((self._relative(self.project.main_file), 1, 1))
        for relative, line, column in wanted:
            path = self.project.root / relative
            if path.is_file():
                self.open_file(path, line, column)
        current = self.project.root / state.current_file if state.current_file else None
        if current is not None and current.is_file():
            self.open_file(current)
        if state.tree_expanded:
            self.tree.restore_expanded(state.tree_expanded)
        self._documents_to_reopen = state.documents

    def closeEvent(self, event: QCloseEvent) -> None:
        if not self.discard_changes_on_close and not self._settle_edits_that_cannot_be_kept():
            event.ignore()
            return
        # Unsaved buffers are not lost on close: like VS Code's hot exit, they stay under
        # .workbench/ and come back with the window.
        for tab in self.editors():
            if tab.is_modified():
                tab.flush_hot_exit()
        self._state_timer.stop()
        self.save_state()
        self.tasks.cancel_all()
        event.accept()
        self.sig_closed.emit()

    def _settle_edits_that_cannot_be_kept(self) -> bool:
        """Before closing: unsaved edits that cannot be kept for the next window (a read-only
        project folder has nowhere to keep them) are saved or dropped as the user answers.
        False when the user cancels, or a save fails: the window stays open."""
        for tab in self.editors():
            if tab.is_modified() and (tab.hot_exit is None or not tab.hot_exit.available):
                self.tabs.setCurrentWidget(tab)
                answer = self.ask_save_changes(tab)
                if answer == "cancel" or (answer == "save" and not self._save(tab)):
                    return False
        return True

"""The hub's welcome window: recent projects, new project from a template, open a folder, and
the windows that are running (or crashed, with a way to reopen them)."""

from __future__ import annotations

import re

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtGui import QCloseEvent, QColor, QPalette
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from workbench import __version__
from workbench.ipc import messages
from workbench.project import RecentProjects
# Qt.ItemDataRole.UserRole and the next one, as numbers: loading the Qt namespace costs 35 ms,
# and this window must appear as fast as a bare Qt window does. The hub loads it after.
PATH_ROLE = 256
WINDOW_ROLE = 257
MISSING_COLOR = QColor("gray")
CRASHED_COLOR = QColor("darkred")


def _style(label: QLabel, pixel_size: int | None = None, bold: bool = False, color: str | None = None) -> None:
    """Fonts and colours through QFont and QPalette: a style sheet per label costs the window
    several milliseconds before it can first appear."""
    if pixel_size or bold:
        font = label.font()
        if pixel_size:
            font.setPixelSize(pixel_size)
        font.setBold(bold)
        label.setFont(font)
    if color:
        palette = label.palette()
        palette.setColor(QPalette.ColorRole.WindowText, QColor(color))
        label.setPalette(palette)


class WelcomeWindow(QMainWindow):
    """What ``workbench`` shows first."""

    sig_open_project = Signal(str)
    """The user asked to open the project folder at this path."""

    sig_reopen_window = Signal(str)
    """The user asked to reopen the crashed window with this id."""

    sig_closed = Signal()
    """The user closed the welcome window."""

    sig_quit_requested = Signal()
    """The user asked to quit Workbench (File ▸ Quit Workbench)."""

    def __init__(self, recent: RecentProjects, parent: QWidget | None = None):
        super().__init__(parent)
        self._recent = recent
        self.setWindowTitle("Welcome — Workbench")
        self.setObjectName("welcome-window")
        self.resize(860, 560)

        title = QLabel("Workbench")
        _style(title, pixel_size=26, bold=True)
        subtitle = QLabel("Write, train, convert and verify neural networks for devices, in one loop.")
        _style(subtitle, color="#666666")
        version = QLabel(f"version {__version__}")
        _style(version, color="#999999")

        self.new_button = QPushButton("New Project from Template…")
        self.open_button = QPushButton("Open Folder…")
        self.new_button.clicked.connect(self.new_project)
        self.open_button.clicked.connect(self.open_folder)
        start = QVBoxLayout()
        start.addWidget(self._heading("Start"))
        start.addWidget(self.new_button)
        start.addWidget(self.open_button)
        start.addStretch(1)

        self.recent_list = QListWidget()
        self.no_recent = QLabel("No recent projects yet. Create one from a template, or open a folder.")
        _style(self.no_recent, color="#888888")
        self.no_recent.setWordWrap(True)
        self.recent_list.itemActivated.connect(self._open_recent)
        self.windows_list = QListWidget()
        self.no_windows = QLabel("No project windows are open.")
        _style(self.no_windows, color="#888888")
        self.windows_list.itemActivated.connect(self._window_activated)
        self.reopen_button = QPushButton("Reopen")
        self.reopen_button.setEnabled(False)
        self.reopen_button.clicked.connect(self._reopen_selected)
        self.windows_list.currentItemChanged.connect(lambda *_: self._update_reopen_button())
        self.notice = QLabel()
        self.notice.setWordWrap(True)
        self.notice.hide()  # its colours are set when it first shows: the theme loads after the paint
        self._crashes: dict[str, dict] = {}
        """The crashed windows the notice tells of, by window id."""

        lists = QVBoxLayout()
        lists.addWidget(self.notice)
        lists.addWidget(self._heading("Recent"))
        lists.addWidget(self.recent_list, 3)
        lists.addWidget(self.no_recent)
        lists.addWidget(self._heading("Open windows"))
        lists.addWidget(self.windows_list, 2)
        lists.addWidget(self.no_windows)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.reopen_button)
        lists.addLayout(row)

        columns = QHBoxLayout()
        columns.addLayout(start, 1)
        columns.addSpacing(24)
        columns.addLayout(lists, 2)
        body = QVBoxLayout()
        body.setContentsMargins(32, 24, 32, 24)
        body.addWidget(title)
        body.addWidget(subtitle)
        body.addWidget(version)
        body.addSpacing(16)
        body.addLayout(columns, 1)
        central = QWidget()
        central.setLayout(body)
        self.setCentralWidget(central)
        # The menu's title is there from the first paint, so nothing moves when install_commands
        # fills the menu just after it (a process's first shortcut costs tens of milliseconds).
        self.menuBar().addMenu("File")
        self.commands = None
        self.menus = None
        self.refresh_recent()
        self.set_windows([])

    def install_commands(self) -> None:
        """Build the commands and the File menu (New Project, Open Folder, Quit Workbench)."""
        if self.commands is not None:
            return
        from workbench.ui.commands import CommandRegistry, add_quit_command
        from workbench.ui.menus import MenuBuilder

        self.commands = CommandRegistry()
        self.commands.add("file.newProject", "New Project from Template…", self.new_project, category="File",
                          menu="File")
        self.commands.add("file.openFolder", "Open Folder…", self.open_folder, category="File", menu="File",
                          shortcut="Ctrl+O")
        self.menus = MenuBuilder(self, self.commands, self.show_error)
        self.menus.add_separator("File")
        add_quit_command(self.commands, self.sig_quit_requested.emit)
        self.menus.prune_empty()

    @staticmethod
    def _heading(text: str) -> QLabel:
        label = QLabel(text)
        _style(label, pixel_size=15, bold=True)
        label.setContentsMargins(0, 6, 0, 0)
        return label

    def refresh_recent(self) -> None:
        self.recent_list.clear()
        for entry in self._recent.list():
            item = QListWidgetItem(f"{entry.name}    {entry.path}")
            item.setData(PATH_ROLE, str(entry.path))
            if not entry.exists:
                item.setText(f"{entry.name}    {entry.path}    (missing)")
                item.setForeground(MISSING_COLOR)
            self.recent_list.addItem(item)
        self.no_recent.setVisible(not self.recent_list.count())
        self.recent_list.setVisible(bool(self.recent_list.count()))

    def set_windows(self, windows: list[dict]) -> None:
        """Show the hub's registry entries (as ``WindowEntry.to_json`` gives them), grouped by
        project: a heading per project, then its project window and its tool windows by name."""
        self.windows_list.clear()
        for project, entries in _grouped_by_project(windows):
            self._add_heading_item(project)
            for entry in entries:
                state = entry.get("state", "")
                text = f"    {_window_name(entry)} · {state}"
                item = QListWidgetItem(text)
                title = entry.get("title") or _window_name(entry)
                item.setToolTip(f"{title}\n{entry.get('kind', 'window')} window, process {entry.get('pid')}")
                item.setData(WINDOW_ROLE, entry)
                if state == messages.STATE_CRASHED:
                    item.setForeground(CRASHED_COLOR)
                    item.setText(text + " (unsaved edits are kept: Reopen)")
                self.windows_list.addItem(item)
        self.windows_list.setVisible(bool(windows))
        self.no_windows.setVisible(not windows)
        # A crash stops being news once its entry is gone (its project was opened again) or is
        # no longer a crash.
        crashed = {e.get("window_id") for e in windows if e.get("state") == messages.STATE_CRASHED}
        self._crashes = {wid: e for wid, e in self._crashes.items() if wid in crashed}
        self._show_crashes()
        self.refresh_recent()
        self._update_reopen_button()

    def _add_heading_item(self, project: str | None) -> None:
        from PySide6.QtCore import Qt

        heading = QListWidgetItem(f"{Path(project).name} — {project}" if project else "Without a project")
        heading.setFlags(Qt.ItemFlag.NoItemFlags)  # a heading: not selectable, not a window
        font = heading.font()
        font.setBold(True)
        heading.setFont(font)
        self.windows_list.addItem(heading)

    def offer_reopen(self, entry: dict) -> None:
        """Say that a window ended without closing and select it, ready to reopen."""
        self._crashes[entry.get("window_id")] = entry
        self._show_crashes()
        for row in range(self.windows_list.count()):
            shown = self.windows_list.item(row).data(WINDOW_ROLE)
            if shown and shown.get("window_id") == entry.get("window_id"):
                self.windows_list.setCurrentRow(row)

    def _show_crashes(self) -> None:
        if not self._crashes:
            self.notice.hide()
            return
        from workbench.qt import theme

        theme.set_themed_style_sheet(self.notice, "background: @WARNING_BACKGROUND;"
                                                  " border: 1px solid @WARNING_BORDER; padding: 6px;")
        lines = []
        for entry in self._crashes.values():
            name = Path(entry["project"]).name if entry.get("project") else "A window"
            lines.append(f"{name} closed unexpectedly (pid {entry.get('pid')}).")
        if len(lines) == 1:
            lines.append("Its unsaved edits were kept. Select it below and press Reopen.")
        else:
            lines.append("Their unsaved edits were kept. Select one below and press Reopen.")
        self.notice.setText(" ".join(lines))
        self.notice.show()

    def describe(self) -> dict:
        """What the window shows: whether it is visible, the crash notice ("" when hidden) and
        the lines of the windows list."""
        return {
            "visible": self.isVisible(),
            "notice": self.notice.text() if not self.notice.isHidden() else "",
            "windows": [self.windows_list.item(row).text() for row in range(self.windows_list.count())],
        }

    def show_error(self, message: str) -> None:
        from PySide6.QtCore import Qt

        box = QMessageBox(QMessageBox.Icon.Warning, "Workbench", message, QMessageBox.StandardButton.Ok, self)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()

    def new_project(self) -> None:
        from workbench.ui.new_project_dialog import NewProjectDialog  # only when asked for

        dialog = NewProjectDialog(self)
        if dialog.exec() and dialog.created_project is not None:
            self.sig_open_project.emit(str(dialog.created_project))

    def open_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Open Folder", str(Path.home()))
        if folder:
            self.sig_open_project.emit(folder)

    def _open_recent(self, item: QListWidgetItem) -> None:
        path = item.data(PATH_ROLE)
        if path:
            self.sig_open_project.emit(path)

    def _selected_window(self) -> dict | None:
        item = self.windows_list.currentItem()
        return item.data(WINDOW_ROLE) if item is not None else None

    def _update_reopen_button(self) -> None:
        entry = self._selected_window()
        self.reopen_button.setEnabled(bool(entry) and entry.get("state") == messages.STATE_CRASHED)

    def _reopen_selected(self) -> None:
        entry = self._selected_window()
        if entry and entry.get("state") == messages.STATE_CRASHED:
            self._crashes.pop(entry["window_id"], None)
            self._show_crashes()
            self.sig_reopen_window.emit(entry["window_id"])

    def _window_activated(self, item: QListWidgetItem) -> None:
        entry = item.data(WINDOW_ROLE)
        if entry and entry.get("state") == messages.STATE_CRASHED:
            self.sig_reopen_window.emit(entry["window_id"])
        elif entry.get("project"):
            self.sig_open_project.emit(entry["project"])  # focuses the running window

    def closeEvent(self, event: QCloseEvent) -> None:
        event.accept()
        self.sig_closed.emit()


def _grouped_by_project(windows: list[dict]) -> list[tuple[str | None, list[dict]]]:
    """(project, its windows) by project name, windows without a project last; in each, the
    project window first, then the tool windows by name."""
    groups: dict[str | None, list[dict]] = {}
    for entry in windows:
        groups.setdefault(entry.get("project") or None, []).append(entry)
    ordered = sorted(groups.items(), key=lambda group: (group[0] is None, Path(group[0] or "").name.lower(),
                                                         group[0] or ""))
    return [(project, sorted(entries, key=lambda e: (e.get("kind") != messages.KIND_PROJECT,
                                                      _window_name(e).lower())))
            for project, entries in ordered]


def _window_name(entry: dict) -> str:
    """"Project window", or a tool window's tool and models by file name ("Quantize —
    model.onnx → model.int8.onnx" for "Quantize — runs/<id>/outputs/model.onnx → ..."): the
    group above already names the project, and the whole title is in the row's tooltip."""
    if entry.get("kind") == messages.KIND_PROJECT:
        return "Project window"
    title = entry.get("title") or f"{str(entry.get('kind', 'window')).capitalize()} window"
    tool, dash, models = title.partition(" — ")
    return tool + dash + re.sub(r"[^\s→]*/(?=[^\s/→])", "", models)

"""The project's file tree: browse, open, create, rename and delete files.

Folders load off the GUI thread (QFileSystemModel gathers them in its own thread), so a huge
project never freezes the window. File changes go through the Qt-free ``file_ops`` service.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable, Protocol

from PySide6.QtCore import QDir, QModelIndex, Qt, Signal
from PySide6.QtGui import QAction, QGuiApplication, QIcon, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileSystemModel,
    QInputDialog,
    QLineEdit,
    QMenu,
    QMessageBox,
    QTreeView,
    QWidget,
)

from workbench.project import file_ops
from workbench.project.errors import ProjectError
from workbench.project.widgets.project_filter import ProjectFilter

log = logging.getLogger(__name__)

EXPLORER_CONTEXT = "explorer"
# Plain values, not QKeySequence objects: those cannot be made before the QApplication exists.
RENAME_SHORTCUT = "F2"
DELETE_SHORTCUT = QKeySequence.StandardKey.Delete


class ExplorerCommands(Protocol):
    """What the tree needs of the window's command registry (``workbench.ui.commands``
    ``CommandRegistry`` fits). A protocol, because capabilities do not import the shell."""

    def for_context(self, context: str, path: Path) -> list[Any]: ...

    def execute(self, command_id: str, **args: Any) -> Any: ...


class ProjectTree(QTreeView):
    """The files of one project, with a context menu of file actions and explorer commands."""

    sig_file_activated = Signal(Path)
    """A file was opened by double-click or Enter, or was just created: ``(path)``."""

    sig_path_renamed = Signal(Path, Path)
    """A file or folder was renamed through the tree: ``(old_path, new_path)``."""

    sig_path_deleted = Signal(Path)
    """A file or folder was moved to the project's trash through the tree: ``(path)``."""

    def __init__(self, root: Path, commands: ExplorerCommands | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.root = Path(root).resolve()
        self.commands = commands

        self.fs_model = QFileSystemModel(self)
        # Dotfiles such as .gitignore are project files too; the filter hides the noisy ones.
        self.fs_model.setFilter(QDir.Filter.AllEntries | QDir.Filter.NoDotAndDotDot
                                | QDir.Filter.Hidden)
        self.fs_model.setRootPath(str(self.root))
        self.proxy = ProjectFilter(self.root, self)
        self.proxy.setSourceModel(self.fs_model)
        self.proxy.sort(0, Qt.SortOrder.AscendingOrder)
        self.setModel(self.proxy)
        self.setRootIndex(self.proxy.mapFromSource(self.fs_model.index(str(self.root))))

        for column in range(1, self.fs_model.columnCount()):
            self.hideColumn(column)
        self.setHeaderHidden(True)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setUniformRowHeights(True)  # cheap scrolling in big folders

        self.doubleClicked.connect(self._open_index)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._show_context_menu)
        self._add_shortcut(RENAME_SHORTCUT, lambda: self._on_current(self.rename_path))
        self._add_shortcut(DELETE_SHORTCUT, lambda: self._on_current(self.delete_path))

    # ----------------------------------------------------------------- paths and indexes

    def path_at(self, index: QModelIndex) -> Path | None:
        """The file or folder shown at a view ``index``; None for no item."""
        if not index.isValid():
            return None
        return Path(self.fs_model.filePath(self.proxy.mapToSource(index)))

    def index_of(self, path: Path | str) -> QModelIndex:
        """The view index of ``path`` (absolute or relative to the root); invalid when hidden or
        missing."""
        source = self.fs_model.index(str(self._absolute(path)))
        return self.proxy.mapFromSource(source) if source.isValid() else QModelIndex()

    def child_names(self, folder: Path | str | None = None) -> list[str]:
        """The names shown under ``folder`` (default the root), in display order, as loaded so
        far."""
        parent = self.rootIndex() if folder is None else self.index_of(folder)
        return [self.proxy.index(row, 0, parent).data()
                for row in range(self.proxy.rowCount(parent))]

    def select_path(self, path: Path | str) -> bool:
        """Select ``path``, expanding its folders and scrolling to it; False when not shown."""
        index = self.index_of(path)
        if not index.isValid():
            return False
        parent = index.parent()
        while parent.isValid() and parent != self.rootIndex():
            self.expand(parent)
            parent = parent.parent()
        self.setCurrentIndex(index)
        self.scrollTo(index)
        return True

    def selected_path(self) -> Path | None:
        """The selected file or folder, if any."""
        return self.path_at(self.currentIndex())

    def expanded_paths(self) -> list[str]:
        """The expanded folders, relative to the root with '/' separators (for WindowState)."""
        found: list[str] = []

        def walk(parent: QModelIndex) -> None:
            for row in range(self.proxy.rowCount(parent)):
                index = self.proxy.index(row, 0, parent)
                if self.isExpanded(index):
                    found.append(self.path_at(index).relative_to(self.root).as_posix())
                    walk(index)

        walk(self.rootIndex())
        return found

    def restore_expanded(self, paths: list[str]) -> None:
        """Expand the folders in ``paths`` (as from :meth:`expanded_paths`) that still exist."""
        for relative in paths:
            path = self._absolute(relative)
            if path.is_dir() and path.is_relative_to(self.root):
                index = self.index_of(path)
                if index.isValid():
                    self.expand(index)

    def set_icons(self, icon_for: Callable[[str, bool], QIcon]) -> None:
        """Show ``icon_for(name, is_folder)`` beside each file and folder (file-type icons, given
        after the window's first paint: the icon font is slow to load)."""
        self.proxy.set_icons(icon_for)
        self.viewport().update()  # the view asks the model for icons as it paints

    # ----------------------------------------------------------------- the context menu

    def context_menu_for(self, path: Path | None) -> QMenu:
        """The context menu for ``path`` (None: the empty area, meaning the project root).

        Actions have object names (``new_file``, ``new_folder``, ``rename``, ``delete``,
        ``reveal``, ``copy_path``, and the command id for explorer commands) so tests can find
        them.
        """
        path = Path(path) if path is not None else self.root
        folder = path if path.is_dir() else path.parent
        menu = QMenu(self)
        self._menu_action(menu, "new_file", "New File…", lambda: self.new_file(folder))
        self._menu_action(menu, "new_folder", "New Folder…", lambda: self.new_folder(folder))
        if path != self.root:
            self._menu_action(menu, "rename", "Rename…", lambda: self.rename_path(path),
                              RENAME_SHORTCUT)
            self._menu_action(menu, "delete", "Delete", lambda: self.delete_path(path),
                              DELETE_SHORTCUT)
        menu.addSeparator()
        self._menu_action(menu, "reveal", "Reveal in File Manager",
                          lambda: self.reveal_in_file_manager(path))
        self._menu_action(menu, "copy_path", "Copy Path", lambda: self.copy_path(path))

        commands = self.commands.for_context(EXPLORER_CONTEXT, path) if self.commands else []
        if commands:
            menu.addSeparator()
        for command in commands:
            action = self._menu_action(menu, command.id, command.title,
                                       lambda cid=command.id: self.run_command(cid, path))
            action.setEnabled(command.is_enabled())
        return menu

    def run_command(self, command_id: str, path: Path) -> None:
        """Run an explorer command on ``path``; its failure is shown, not raised into Qt."""
        try:
            self.commands.execute(command_id, path=path)
        except Exception as exc:  # a command is any capability's code: never crash the tree
            log.exception("Explorer command %s failed on %s", command_id, path)
            self.show_error(str(exc) or type(exc).__name__)

    # ----------------------------------------------------------------- file actions

    def new_file(self, folder: Path) -> Path | None:
        """Ask for a name and create an empty file in ``folder``; it is then opened."""
        name = self.ask_name("New File", f"Name of the new file in {self._shown(folder)}:")
        created = self._attempt(lambda: file_ops.create_file(folder, name)) if name else None
        if created:
            self.select_path(created)
            self.sig_file_activated.emit(created)
        return created

    def new_folder(self, folder: Path) -> Path | None:
        """Ask for a name and create a folder in ``folder``."""
        name = self.ask_name("New Folder", f"Name of the new folder in {self._shown(folder)}:")
        created = self._attempt(lambda: file_ops.create_folder(folder, name)) if name else None
        if created:
            self.select_path(created)
        return created

    def rename_path(self, path: Path) -> Path | None:
        """Ask for a new name for ``path`` and rename it."""
        if path == self.root:
            return None
        name = self.ask_name("Rename", f"New name for {path.name}:", path.name)
        if not name or name == path.name:
            return None
        renamed = self._attempt(lambda: file_ops.rename(path, name))
        if renamed:
            self.select_path(renamed)
            self.sig_path_renamed.emit(path, renamed)
        return renamed

    def delete_path(self, path: Path) -> Path | None:
        """After confirmation, move ``path`` to the project's trash; returns where it went."""
        if path == self.root or not self.confirm_delete(path):
            return None
        moved = self._attempt(lambda: file_ops.delete(path, root=self.root))
        if moved:
            self.sig_path_deleted.emit(path)
        return moved

    def reveal_in_file_manager(self, path: Path) -> None:
        """Open the folder holding ``path`` (or ``path`` itself, for a folder)."""
        from workbench.qt.notice import reveal_in_file_manager

        reveal_in_file_manager(path)

    def copy_path(self, path: Path) -> None:
        """Put the absolute path of ``path`` on the clipboard."""
        QGuiApplication.clipboard().setText(str(path))

    # ----------------------------------------------------------------- dialogs (tests replace)

    def ask_name(self, title: str, label: str, initial: str = "") -> str | None:
        """Ask the user for a name; None when cancelled."""
        text, ok = QInputDialog.getText(self, title, label, QLineEdit.EchoMode.Normal, initial)
        return text if ok else None

    def confirm_delete(self, path: Path) -> bool:
        """Ask whether to delete ``path``."""
        kind = "folder" if path.is_dir() else "file"
        answer = QMessageBox.question(
            self, "Delete",
            f"Delete the {kind} {self._shown(path)}?\n\nIt is moved to the project's "
            ".workbench/trash folder, so it can be recovered from there.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        return answer == QMessageBox.StandardButton.Yes

    def show_error(self, message: str) -> None:
        """Tell the user a file action failed."""
        QMessageBox.warning(self, "Workbench", message)

    # ----------------------------------------------------------------- internals

    def keyPressEvent(self, event) -> None:
        index = self.currentIndex()
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and index.isValid():
            path = self.path_at(index)
            if path.is_dir():
                self.setExpanded(index, not self.isExpanded(index))
            else:
                self.sig_file_activated.emit(path)
            return
        super().keyPressEvent(event)

    def _open_index(self, index: QModelIndex) -> None:
        # A double-clicked folder is expanded or collapsed by QTreeView itself.
        path = self.path_at(index)
        if path is not None and not path.is_dir():
            self.sig_file_activated.emit(path)

    def _show_context_menu(self, position) -> None:
        menu = self.context_menu_for(self.path_at(self.indexAt(position)))
        menu.exec(self.viewport().mapToGlobal(position))
        menu.deleteLater()

    def _menu_action(self, menu: QMenu, name: str, text: str, slot: Callable[[], object],
                     shortcut: str | QKeySequence.StandardKey | None = None) -> QAction:
        action = menu.addAction(text)
        action.setObjectName(name)
        if shortcut is not None:
            # Shown in the menu as a reminder; the tree's own actions handle the keys.
            action.setShortcut(QKeySequence(shortcut))
            action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        # Through a lambda so QAction's "checked" argument never reaches the slot.
        action.triggered.connect(lambda *_: slot())
        return action

    def _add_shortcut(self, keys: str | QKeySequence.StandardKey, slot: Callable[[], object]
                      ) -> None:
        action = QAction(self)
        action.setShortcut(QKeySequence(keys))
        action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        action.triggered.connect(slot)
        self.addAction(action)

    def _on_current(self, act: Callable[[Path], object]) -> None:
        path = self.selected_path()
        if path is not None:
            act(path)

    def _attempt(self, operation: Callable[[], Path]) -> Path | None:
        try:
            return operation()
        except ProjectError as exc:
            self.show_error(str(exc))
            return None

    def _absolute(self, path: Path | str) -> Path:
        path = Path(path)
        return path if path.is_absolute() else self.root / path

    def _shown(self, path: Path) -> str:
        """``path`` as the user thinks of it: relative to the project, or the project's name."""
        if path == self.root:
            return self.root.name
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

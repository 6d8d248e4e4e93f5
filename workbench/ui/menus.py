"""Builds QActions and the menu bar from the command registry, so each action is declared once.

Two commands may share a shortcut (F5 trains, and debugs the Python file being edited): the key
runs the one registered last that is enabled then, else the first. The first keeps the key on
its action; the others show it in their menus only.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QMenu

from workbench.ui.commands import Command, CommandError, CommandRegistry

# Menus appear in this order; a capability's own menu (e.g. "Run") lands before Help.
MENU_ORDER = ("File", "Edit", "View", "Go", "Git", "Run", "Models", "Devices", "Help")


class MenuBuilder:
    """Keeps one QAction per command, adds it to its menu, and refreshes enablement."""

    def __init__(self, window: QMainWindow, commands: CommandRegistry, on_error):
        self._window = window
        self._commands = commands
        self._on_error = on_error
        self._menus: dict[str, QMenu] = {}
        self.actions: dict[str, QAction] = {}
        self._by_shortcut: dict[str, list[str]] = {}
        for name in MENU_ORDER:
            self._menu(name)
        for command in commands.all():
            self._bind(command)
        commands.on_registered(self._bind)

    def _menu(self, path: str) -> QMenu:
        if path in self._menus:
            return self._menus[path]
        parent_path, _, name = path.rpartition("/")
        if parent_path:
            menu = self._menu(parent_path).addMenu(name)
        elif (existing := self._existing_menu(name)) is not None:
            menu = existing
        else:
            menu = QMenu(name, self._window)
            help_menu = self._menus.get("Help")
            if help_menu is not None:
                self._window.menuBar().insertMenu(help_menu.menuAction(), menu)
            else:
                self._window.menuBar().addMenu(menu)
        menu.aboutToShow.connect(lambda m=menu: self._refresh(m))
        self._menus[path] = menu
        return menu

    def _existing_menu(self, name: str) -> QMenu | None:
        """A top-level menu the window put in its menu bar before its commands were built (to
        take its place from the first paint)."""
        for action in self._window.menuBar().actions():
            if action.text() == name and isinstance(action.menu(), QMenu):
                return action.menu()
        return None

    def _bind(self, command: Command) -> None:
        action = _CommandAction(command.title, self._window, self)
        if command.shortcut:
            key = QKeySequence(command.shortcut).toString()
            sharing = self._by_shortcut.setdefault(key, [])
            sharing.append(command.id)
            if len(sharing) == 1:
                action.setShortcut(QKeySequence(command.shortcut))
            else:
                action.setText(f"{command.title}\t{QKeySequence(command.shortcut).toString(QKeySequence.SequenceFormat.NativeText)}")
        if command.checked is not None:
            action.setCheckable(True)
            action.setChecked(bool(command.checked()))
        action.triggered.connect(lambda _checked=False, cid=command.id: self.run(cid))
        self._window.addAction(action)  # shortcuts work even for commands with no menu
        self.actions[command.id] = action
        if command.menu:
            menu = self._menu(command.menu)
            menu.addAction(action)
            self._menus[command.menu.split("/")[0]].menuAction().setVisible(True)

    def run_shortcut(self, key: str) -> None:
        """Run the command that ``key`` stands for now (see the module's docstring)."""
        sharing = self._by_shortcut.get(key, [])
        chosen = next((cid for cid in reversed(sharing) if self._commands.get(cid).is_enabled()),
                      sharing[0] if sharing else None)
        if chosen is not None:
            self.run(chosen)

    def add_separator(self, menu: str) -> None:
        self._menu(menu).addSeparator()

    def add_separator_before(self, command_id: str) -> None:
        """A separator in the command's menu just above it (to group a menu's items)."""
        command, action = self._commands.get(command_id), self.actions[command_id]
        if command.menu:
            self._menu(command.menu).insertSeparator(action)

    def run(self, command_id: str) -> None:
        try:
            self._commands.execute(command_id)
        except CommandError as exc:
            self._on_error(str(exc))

    def _refresh(self, menu: QMenu) -> None:
        for command_id, action in self.actions.items():
            if action in menu.actions():
                command = self._commands.get(command_id)
                action.setEnabled(command.is_enabled())
                if command.checked is not None:
                    action.setChecked(bool(command.checked()))

    def prune_empty(self) -> None:
        """Hide top-level menus no capability has filled yet."""
        for name, menu in self._menus.items():
            if "/" not in name:
                menu.menuAction().setVisible(bool(menu.actions()))


class _CommandAction(QAction):
    """A command's action: its shortcut goes through the builder, which picks among the
    commands sharing it; a click in a menu runs this very command."""

    def __init__(self, title: str, parent, builder: MenuBuilder):
        super().__init__(title, parent)
        self._builder = builder

    def event(self, event: QEvent) -> bool:  # noqa: D102 (Qt override)
        if event.type() == QEvent.Type.Shortcut and not event.isAmbiguous():
            key = self.shortcut().toString()
            if len(self._builder._by_shortcut.get(key, ())) > 1:
                self._builder.run_shortcut(key)
                return True
        return super().event(event)

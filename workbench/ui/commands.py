"""The command registry: every user action declared once, with an id, a title and a shortcut.

Menus, the command palette, context menus and keyboard shortcuts are all built from it, and the
IPC ``window.run_command`` request runs the same commands, so a script or a test drives the
window exactly as a person does. Qt-free: the window binds commands to QActions.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from workbench.platform.fuzzy import match


QUIT_WORKBENCH = "workbench.quit"
"""The command every Workbench window has: close all the windows, then end Workbench."""


class CommandError(Exception):
    """A command that does not exist, is disabled, or got arguments it cannot use."""


@dataclass(frozen=True)
class Command:
    """One user action.

    ``menu`` is a slash path such as ``"File"`` or ``"Edit/Find"``; ``None`` keeps the command
    out of the menu bar (it is still in the palette). ``context`` names the context menus it
    appears in (``"explorer"`` for the file tree); such commands receive ``path=`` when run, and
    ``applies_to`` decides for which paths they are shown.
    """

    id: str
    title: str
    run: Callable[..., Any]
    category: str = ""
    shortcut: str | None = None
    menu: str | None = None
    enabled: Callable[[], bool] | None = None
    context: tuple[str, ...] = ()
    applies_to: Callable[[Path], bool] | None = None
    in_palette: bool = True
    checked: Callable[[], bool] | None = None
    """For a command that toggles something (a dock): whether it is on; its menu item is a
    check box."""

    @property
    def label(self) -> str:
        return f"{self.category}: {self.title}" if self.category else self.title

    def is_enabled(self) -> bool:
        return self.enabled is None or bool(self.enabled())


@dataclass
class CommandRegistry:
    """The commands of one window, in registration order."""

    _commands: dict[str, Command] = field(default_factory=dict)
    _listeners: list[Callable[[Command], None]] = field(default_factory=list)

    def register(self, command: Command) -> Command:
        if command.id in self._commands:
            raise CommandError(f"Command {command.id!r} is registered twice.")
        self._commands[command.id] = command
        for listener in self._listeners:
            listener(command)
        return command

    def add(self, id: str, title: str, run: Callable[..., Any], **options: Any) -> Command:
        return self.register(Command(id=id, title=title, run=run, **options))

    def on_registered(self, listener: Callable[[Command], None]) -> None:
        """Call ``listener`` for each command registered from now on (late capabilities)."""
        self._listeners.append(listener)

    def get(self, command_id: str) -> Command:
        try:
            return self._commands[command_id]
        except KeyError:
            raise CommandError(f"There is no command {command_id!r}.") from None

    def __contains__(self, command_id: str) -> bool:
        return command_id in self._commands

    def all(self) -> list[Command]:
        return list(self._commands.values())

    def for_context(self, context: str, path: Path) -> list[Command]:
        """The commands to offer in the ``context`` menu of ``path``."""
        return [
            c
            for c in self._commands.values()
            if context in c.context and (c.applies_to is None or c.applies_to(path))
        ]

    def execute(self, command_id: str, **args: Any) -> Any:
        command = self.get(command_id)
        if not command.is_enabled():
            raise CommandError(f"{command.label} is not available right now.")
        try:
            # Checked before the call, so a TypeError from inside the command stays a bug report.
            signature = inspect.signature(command.run)
        except ValueError:
            signature = None  # a Qt method: no Python signature to check against
        if signature is not None:
            try:
                signature.bind(**args)
            except TypeError as exc:
                raise CommandError(f"{command.label}: {exc}") from None
        return command.run(**args)


def add_quit_command(commands: CommandRegistry, run: Callable[[], Any]) -> Command:
    """Register File ▸ Quit Workbench (Ctrl+Q), the same in every kind of window."""
    return commands.add(QUIT_WORKBENCH, "Quit Workbench", run, category="File", menu="File", shortcut="Ctrl+Q")


def fuzzy_score(query: str, text: str) -> int | None:
    """Rank ``text`` for the palette with Quick Open's rules (``workbench.platform.fuzzy``): the
    query at the start of a word, then as pieces that each start a word ("gtl" or "gotoline"
    finds "Go to Line…"), then inside a word; None when it is in none of these (scattered
    letters are no match here, so "flow" does not find "Close Window")."""
    found = match(query, text, scattered=False)
    return None if found is None else found.score

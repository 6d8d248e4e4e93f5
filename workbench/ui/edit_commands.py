"""Edit ▸ Undo, Redo, Cut, Copy, Paste and Select All, on whatever text the user is in.

They act on the window's focused widget: the editor, a line edit, the console, a find bar. Qt
routes the keys themselves to a focused text widget before any window shortcut (it claims
them), so the window's shortcuts run only where the focused widget does not take the key (an
item view, the large-file view); there the command hands the key to that widget as if typed,
which does what the widget does with it (copy the current row, select all) or nothing.
From the menu or the palette the command goes to the widget that had the focus before.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QKeyEvent, QKeySequence
from PySide6.QtWidgets import QApplication, QWidget
from shiboken6 import isValid

# (command id, title, the widget method, its standard key, the shortcut shown and bound)
FOCUS_COMMANDS = (
    ("edit.undo", "Undo", "undo", QKeySequence.StandardKey.Undo, "Ctrl+Z"),
    ("edit.redo", "Redo", "redo", QKeySequence.StandardKey.Redo, "Ctrl+Shift+Z"),
    ("edit.cut", "Cut", "cut", QKeySequence.StandardKey.Cut, "Ctrl+X"),
    ("edit.copy", "Copy", "copy", QKeySequence.StandardKey.Copy, "Ctrl+C"),
    ("edit.paste", "Paste", "paste", QKeySequence.StandardKey.Paste, "Ctrl+V"),
    ("edit.selectAll", "Select All", "selectAll", QKeySequence.StandardKey.SelectAll, "Ctrl+A"),
)
# Ctrl+Y redoes too, as on Windows and in VS Code; a second command so each has one key.
REDO_ALTERNATIVE = ("edit.redoAlternative", "Redo", "Ctrl+Y")


class FocusedWidgetCommands(QObject):
    """The focus-following edit commands of one window."""

    def __init__(self, window: QWidget):
        super().__init__(window)  # its focus connection ends with the window
        self._window = window
        self._last_focused: QWidget | None = None
        QApplication.instance().focusChanged.connect(self._remember_focus)

    def register(self, commands) -> list[str]:
        """Add the commands to the window's registry (in Edit, in this order); returns the ids."""
        for command_id, title, method, key, shortcut in FOCUS_COMMANDS:
            commands.add(command_id, title, lambda m=method, k=key: self.run(m, k),
                         category="Edit", menu="Edit", shortcut=shortcut)
        command_id, title, shortcut = REDO_ALTERNATIVE
        commands.add(command_id, title, lambda: self.run("redo", QKeySequence.StandardKey.Redo),
                     category="Edit", shortcut=shortcut, in_palette=False)
        return [entry[0] for entry in FOCUS_COMMANDS] + [command_id]

    def target(self) -> QWidget | None:
        """The widget the commands act on: the focused one in this window, else the one that
        had the focus last (a menu or the palette has it now)."""
        focused = QApplication.focusWidget()
        if focused is not None and focused.window() is self._window:
            return focused
        if self._last_focused is not None and isValid(self._last_focused) and self._last_focused.isVisible():
            return self._last_focused
        return None

    def run(self, method: str, key: QKeySequence.StandardKey) -> None:
        target = self.target()
        if target is None:
            return
        action = getattr(target, method, None)
        if callable(action) and hasattr(target, "undo"):  # a text widget: its own slot
            action()
            return
        sequence = QKeySequence(key)
        if sequence.isEmpty():
            return
        combined = sequence[0]
        # Sent, not posted through the window system: a sent key goes to the widget alone and
        # cannot come back to this shortcut.
        QApplication.sendEvent(target, QKeyEvent(QEvent.Type.KeyPress, combined.key(), combined.keyboardModifiers()))

    def _remember_focus(self, _old: QWidget | None, new: QWidget | None) -> None:
        if new is not None and isValid(new) and new.window() is self._window:
            self._last_focused = new


def group_edit_menu(menus) -> None:
    """Separators in Edit between undoing, the clipboard, finding, the line commands, the
    language server's and Find in Files."""
    for command_id in ("edit.cut", "edit.find", "edit.indent", "lsp.rename", "search.find_in_files"):
        if command_id in menus.actions:
            menus.add_separator_before(command_id)

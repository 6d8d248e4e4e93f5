"""The editor's commands: find and replace, indenting, comments, duplicating and moving lines,
Go to Line, and the two a script or a test uses to type into the current editor and read it back.

They act on the window's current editor tab and are disabled while there is none (the ones that
change text also while it is read-only). Every command takes keyword arguments, so
``commands.execute("editor.insertText", text="x")`` types exactly what a person would.
"""

from __future__ import annotations

from typing import Callable

from workbench.editor.widgets.editor_tab import EditorTab


class EditorCommands:
    """Declares the editor commands of one window and runs them on its current editor tab."""

    def __init__(self, current_editor: Callable[[], EditorTab | None]):
        self.current_editor = current_editor

    def register(self, commands) -> list[str]:
        """Add every command to ``commands`` (the window's command registry); returns their ids."""
        has_editor = self.has_editor
        writable = self.has_writable_editor
        entries = [
            ("edit.find", "Find", lambda: self.current_editor().show_find(),
             dict(category="Edit", menu="Edit", shortcut="Ctrl+F", enabled=has_editor)),
            ("edit.replace", "Replace", lambda: self.current_editor().show_find(replace=True),
             dict(category="Edit", menu="Edit", shortcut="Ctrl+H", enabled=writable)),
            ("edit.indent", "Indent Lines", lambda: self.current_editor().indent(),
             dict(category="Edit", menu="Edit", shortcut="Ctrl+]", enabled=writable)),
            ("edit.dedent", "Dedent Lines", lambda: self.current_editor().dedent(),
             dict(category="Edit", menu="Edit", shortcut="Ctrl+[", enabled=writable)),
            ("edit.toggleComment", "Toggle Line Comment", lambda: self.current_editor().toggle_comment(),
             dict(category="Edit", menu="Edit", shortcut="Ctrl+/", enabled=writable)),
            ("edit.duplicateLine", "Duplicate Line", lambda: self.current_editor().editor.duplicate_lines(),
             dict(category="Edit", menu="Edit", shortcut="Shift+Alt+Down", enabled=writable)),
            ("edit.moveLineUp", "Move Line Up", lambda: self.current_editor().editor.move_lines(-1),
             dict(category="Edit", menu="Edit", shortcut="Alt+Up", enabled=writable)),
            ("edit.moveLineDown", "Move Line Down", lambda: self.current_editor().editor.move_lines(1),
             dict(category="Edit", menu="Edit", shortcut="Alt+Down", enabled=writable)),
            ("editor.insertText", "Type Text", lambda text: self.current_editor().insert_text(text),
             dict(category="Editor", enabled=writable, in_palette=False)),
            ("editor.describe", "Describe Editor", self.describe,
             dict(category="Editor", enabled=has_editor, in_palette=False)),
            ("go.line", "Go to Line…", lambda: self.current_editor().show_go_to_line(),
             dict(category="Go", menu="Go", shortcut="Ctrl+G", enabled=has_editor)),
        ]
        for command_id, title, run, options in entries:
            commands.add(command_id, title, run, **options)
        return [entry[0] for entry in entries]

    def has_editor(self) -> bool:
        """True when the current tab is an editor."""
        return self.current_editor() is not None

    def has_writable_editor(self) -> bool:
        """True when the current tab is an editor whose text may be changed."""
        tab = self.current_editor()
        return tab is not None and not tab.is_read_only()

    def describe(self) -> dict:
        """The current editor as a script reads it: path, text, cursor, modified, and its status
        (encoding, line endings, language, read-only)."""
        tab = self.current_editor()
        line, column = tab.cursor_position()
        return {"path": str(tab.path), "modified": tab.is_modified(), "line": line, "column": column,
                "text": tab.text(), "recovered": tab.recovered_from_hot_exit, **tab.status()}

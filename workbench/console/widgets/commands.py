"""The console's commands: the editor's Run File / Run Selection or Current Line (F9) / Run Cell
(Ctrl+Enter) in Console, and New Console, Interrupt, Restart, Clear; in the Run menu and the
palette.

Every command takes keyword arguments, so a script or a test runs it as a person would:
``commands.execute("console.runSelection")`` acts on the current editor, and
``commands.execute("console.execute", code="x = 1")`` types into the current console.
"""

from __future__ import annotations

from pathlib import Path

from workbench.console.run_code import cell_at, code_of_selection, line_after_cell, run_file_code
from workbench.editor import EditorError

CATEGORY = "Console"
MENU = "Run"
RUNNABLE_SUFFIXES = (".py", ".ipy", ".pyw")


class ConsoleCommands:
    """Declares the console commands of one window and runs them on its current editor and its
    current console."""

    def __init__(self, window, panel, dock):
        self.window = window
        self.panel = panel
        self.dock = dock

    def register(self) -> list[str]:
        """Add every command to the window's registry; returns their ids."""
        has_python = self.has_python_editor
        has_editor = self.has_editor
        has_console = lambda: self.panel.current() is not None  # noqa: E731
        run_entries = [
            ("console.runFile", "Run File in Console", self.run_file, dict(enabled=has_python)),
            ("console.runSelection", "Run Selection or Current Line in Console", self.run_selection,
             dict(shortcut="F9", enabled=has_editor)),
            ("console.runCell", "Run Cell in Console", self.run_cell,
             dict(shortcut="Ctrl+Return", enabled=has_editor)),
            # Shift+Enter, Spyder's key for this, is the editor's own (a new line), so no key here.
            ("console.runCellAndAdvance", "Run Cell in Console and Go to the Next", self.run_cell_and_advance,
             dict(enabled=has_editor)),
        ]
        console_entries = [
            ("console.show", "Show Console", self.show, {}),
            ("console.new", "New Console", self.new_console, {}),
            ("console.interrupt", "Interrupt Console", self.interrupt, dict(enabled=has_console)),
            ("console.restart", "Restart Console", self.restart, dict(enabled=has_console)),
            ("console.clear", "Clear Console", self.clear, dict(enabled=has_console)),
            ("console.close", "Close Console", self.close_console, dict(enabled=has_console)),
        ]
        add = self.window.commands.add
        menus = getattr(self.window, "menus", None)
        for group in (run_entries, console_entries):
            if menus is not None:
                menus.add_separator(MENU)
            for command_id, title, run, options in group:
                add(command_id, title, run, category=CATEGORY, menu=MENU, **options)
        self._keys_in_editors_only(("console.runSelection", "console.runCell"))
        add("console.execute", "Execute in Console", self.execute, category=CATEGORY, in_palette=False)
        add("console.describe", "Describe Console", self.describe, category=CATEGORY, in_palette=False)
        add("console.evaluate", "Evaluate in Console", self.evaluate, category=CATEGORY, in_palette=False)
        return ([entry[0] for entry in run_entries + console_entries]
                + ["console.execute", "console.describe", "console.evaluate"])

    def _keys_in_editors_only(self, command_ids) -> None:
        """F9 and Ctrl+Enter act in the editors only (as in Spyder): elsewhere Ctrl+Enter is the
        focused widget's own (commit in Source Control, execute now in the console). The menu
        items still show and run them."""
        from PySide6.QtCore import Qt

        actions = getattr(getattr(self.window, "menus", None), "actions", {})
        editors = getattr(self.window, "tabs", None)
        if editors is None:
            return
        for command_id in command_ids:
            action = actions.get(command_id)
            if action is not None:
                self.window.removeAction(action)
                editors.addAction(action)
                action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)

    # --- conditions ---------------------------------------------------------------------------

    def _editor(self):
        return self.window.current_editor()

    def has_editor(self) -> bool:
        tab = self._editor()
        return tab is not None and tab.editor is not None

    def has_python_editor(self) -> bool:
        tab = self._editor()
        return tab is not None and tab.editor is not None and tab.path.suffix.lower() in RUNNABLE_SUFFIXES

    # --- the console --------------------------------------------------------------------------

    def show(self):
        """Show the Console dock in front and its current console (started)."""
        self.dock.show()
        self.dock.raise_()
        return self.panel.ensure_console()

    def new_console(self):
        self.dock.show()
        self.dock.raise_()
        return self.panel.new_console()

    def interrupt(self) -> None:
        console = self.panel.current()
        if console is not None:
            console.interrupt()

    def restart(self) -> None:
        console = self.panel.current()
        if console is not None:
            console.restart()

    def clear(self) -> None:
        console = self.panel.current()
        if console is not None:
            console.clear()

    def close_console(self) -> None:
        self.panel.close_console()

    def execute(self, code: str, on_done=None) -> None:
        """Run ``code`` in the current console as if typed there (``on_done(status)`` once it
        ran: "ok", "error" or "aborted")."""
        self.show().execute(code, on_done)

    def evaluate(self, code: str, expression: str, on_done, on_error) -> None:
        """Run ``code`` silently in the current console (started first when needed), then give
        ``on_done`` the repr of ``expression``, or ``on_error`` a message (for another
        capability: the debugger prepares the console's kernel this way)."""
        self.panel.ensure_console().evaluate(code, expression, on_done, on_error)

    def describe(self) -> dict:
        """The consoles as a script reads them: title and state of each, the current one's index,
        and its variables by name (type, size, value)."""
        current = self.panel.current()
        return {
            "consoles": [{"title": c.title, "state": c.state, "message": c.message} for c in self.panel.consoles()],
            "current": self.panel.tabs.currentIndex(),
            "variables": {v.name: {"type": v.type, "size": v.size, "value": v.summary}
                          for v in (current.variables if current is not None else [])},
        }

    # --- the editor's Run commands ------------------------------------------------------------

    def run_file(self) -> str | None:
        """Run the current file in the console with ``%run`` (saved first when it has unsaved
        edits, as Spyder does); its variables stay in the console. Returns the code sent."""
        tab = self._editor()
        if tab.is_modified() and not tab.is_read_only():
            try:
                tab.save()
            except EditorError as exc:
                self.window.show_error(f"{exc} The file was not run.")
                return None
        code = run_file_code(Path(tab.path))
        self.execute(code)
        return code

    def run_selection(self) -> str:
        """Run the selected text, or the cursor's line and go to the next line (F9). Returns the
        code sent (empty for a blank line, which is only stepped over)."""
        tab = self._editor()
        cursor = tab.editor.textCursor()
        if cursor.hasSelection():
            code = code_of_selection(cursor.selectedText())
        else:
            line, _column = tab.cursor_position()
            code = cursor.block().text().strip()
            tab.set_cursor_position(line + 1, 1)
        if code:
            self.execute(code)
        return code

    def run_cell(self, advance: bool = False) -> str:
        """Run the ``# %%`` cell around the cursor (Ctrl+Enter); with ``advance`` go to the next
        cell. Returns the code sent."""
        tab = self._editor()
        text = tab.text()
        cell = cell_at(text, tab.cursor_position()[0])
        if cell.code.strip():
            self.execute(cell.code)
        if advance:
            tab.set_cursor_position(line_after_cell(text, cell), 1)
        return cell.code

    def run_cell_and_advance(self) -> str:
        return self.run_cell(advance=True)

"""The language server's commands in the window: go to definition (F12), find references
(Shift+F12), rename (F2), go to a symbol (Ctrl+Shift+O), format the document or the selection,
and restart the server. Each acts on the current Python editor and takes keyword arguments, so
``commands.execute("lsp.rename", new_name="make")`` does what the dialog would.
"""

from __future__ import annotations

import keyword

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QInputDialog

from workbench.lsp.editor_answers import is_python, name_at
from workbench.lsp.errors import LanguageServerError
from workbench.lsp.files import DiskChange, apply_to_disk, is_installed_file
from workbench.lsp.results import FileEdit, Location, Span
from workbench.lsp.session import RequestFailed
from workbench.lsp.text_sync import apply_edits
from workbench.lsp.widgets.document_edits import replace_text

CATEGORY = "Code"
MESSAGE_MS = 6000
INSTALLED_NOTICE = "installed-package"


class LanguageCommands:
    """The commands of one window (``controller`` is its ``LanguageController``)."""

    def __init__(self, window, controller, show_outline, show_references):
        self.window = window
        self.controller = controller
        self.show_outline = show_outline
        self.show_references = show_references
        self.last_disk_change: DiskChange | None = None

    def register(self) -> None:
        add = self.window.commands.add
        python = self.has_python_editor
        writable = self.has_writable_python_editor
        add("lsp.goToDefinition", "Go to Definition", self.go_to_definition, category=CATEGORY, menu="Go",
            shortcut="F12", enabled=python)
        add("lsp.findReferences", "Find References", self.find_references, category=CATEGORY, menu="Go",
            shortcut="Shift+F12", enabled=python)
        add("lsp.goToSymbol", "Go to Symbol in File…", self.go_to_symbol, category=CATEGORY, menu="Go",
            shortcut="Ctrl+Shift+O")
        add("lsp.rename", "Rename Symbol…", self.rename, category=CATEGORY, menu="Edit", shortcut="F2",
            enabled=writable)
        add("lsp.formatDocument", "Format Document", self.format_document, category=CATEGORY, menu="Edit",
            shortcut="Ctrl+Shift+I", enabled=writable)
        add("lsp.formatSelection", "Format Selection", self.format_selection, category=CATEGORY, menu="Edit",
            shortcut="Ctrl+K, Ctrl+F", enabled=writable)
        add("lsp.undoRenameOnDisk", "Undo Rename in Unopened Files", self.undo_rename_on_disk, category=CATEGORY,
            enabled=lambda: self.last_disk_change is not None)
        add("lsp.restart", "Restart Language Server", self.controller.restart, category=CATEGORY)
        actions = getattr(getattr(self.window, "menus", None), "actions", {})
        if "lsp.rename" in actions:
            # The menu shows F2, but the key is the editor's own (each Python editor has it): the
            # Explorer's F2 renames files, and two window-wide F2s would cancel each other.
            actions["lsp.rename"].setShortcutContext(Qt.ShortcutContext.WidgetShortcut)

    # --- where ----------------------------------------------------------------------------------

    def current(self):
        """The current editor tab when it shows a Python file linked to the server, else None."""
        tab = self.window.current_editor()
        if tab is None or tab.editor is None or not is_python(tab.path):
            return None
        return tab if self.controller.link_for(tab.path) is not None else None

    def has_python_editor(self) -> bool:
        return self.current() is not None

    def has_writable_python_editor(self) -> bool:
        tab = self.current()
        return tab is not None and not tab.is_read_only()

    def _caret(self, tab) -> tuple[int, int, str]:
        cursor = tab.editor.textCursor()
        return cursor.blockNumber() + 1, cursor.positionInBlock(), cursor.block().text()

    def _say(self, message: str) -> None:
        self.window.statusBar().showMessage(message, MESSAGE_MS)

    def _working(self, message: str):
        """Show ``message`` until the returned function is called (the answer came): a
        server still reading torch takes seconds over its first question."""
        bar = self.window.statusBar()
        bar.showMessage(message)

        def done() -> None:
            if bar.currentMessage() == message:
                bar.clearMessage()

        return done

    # --- navigation -------------------------------------------------------------------------------

    def go_to_definition(self) -> None:
        tab = self.current()
        if tab is None:
            return
        line, column, text = self._caret(tab)
        name = _name(text, column)
        done = self._working(f"Looking for the definition of {name or 'the text at the caret'}…")

        def handle(result) -> None:
            done()
            if isinstance(result, RequestFailed):
                self._say(result.message)
            elif not result:
                self._say(f"No definition found for {name or 'the text at the caret'}.")
            else:
                self.open_location(result[0])

        self.controller.ask("definition", tab.path, line, column, handle=handle)

    def open_location(self, location: Location):
        """Open the file of ``location`` at its place; a file of an installed package opens
        read-only."""
        tab = self.window.open_file(location.path, location.span.line, location.span.column + 1)
        if tab is None or tab.editor is None:
            return tab
        if is_installed_file(location.path, self.window.project.root) and not tab.editor.isReadOnly():
            tab.editor.setReadOnly(True)
            tab.notices.show_notice(INSTALLED_NOTICE, f"{location.path.name} belongs to an installed package "
                                    f"({location.path.parent}), so it is open read-only.")
        return tab

    def find_references(self) -> None:
        tab = self.current()
        if tab is None:
            return
        line, column, text = self._caret(tab)
        name = _name(text, column) or "this"
        done = self._working(f"Finding the references to {name}…")

        def handle(result) -> None:
            done()
            if isinstance(result, RequestFailed):
                self._say(result.message)
                return
            self.show_references(name, result)

        self.controller.ask("references", tab.path, line, column, handle=handle)

    def go_to_symbol(self) -> None:
        self.show_outline()

    # --- changes ----------------------------------------------------------------------------------

    def rename(self, new_name: str | None = None) -> None:
        tab = self.current()
        if tab is None or tab.is_read_only():
            return
        line, column, text = self._caret(tab)
        name = _name(text, column)
        if name is None:
            self._say("Put the caret on a name to rename it.")
            return
        if new_name is None:
            new_name, ok = QInputDialog.getText(self.window, "Rename Symbol", f"Rename {name} to:", text=name)
            if not ok:
                return
        new_name = new_name.strip()
        if not new_name.isidentifier() or keyword.iskeyword(new_name):
            self.window.show_error(f"{new_name!r} is not a valid Python name: use letters, digits and _, "
                                   "not starting with a digit, and not a keyword.")
            return
        if new_name == name:
            return

        def handle(result) -> None:
            if isinstance(result, RequestFailed):
                self.window.show_error(f"Could not rename {name}: {result.message}")
            elif not result:
                self._say(f"The language server found nothing to rename for {name}.")
            else:
                self.apply_edits(result, f"Renamed {name} to {new_name}")

        self.controller.ask("rename", tab.path, line, column, new_name, handle=handle)

    def apply_edits(self, file_edits: list[FileEdit], done: str) -> None:
        """Apply a workspace edit: open editors change in one undo step each, files no editor
        has open change on disk (Undo Rename in Unopened Files puts them back)."""
        open_tabs = {tab.path: tab for tab in self.window.editors() if tab.editor is not None}
        in_editors = []
        try:
            for file_edit in file_edits:
                tab = open_tabs.get(file_edit.path)
                if tab is None:
                    continue
                if tab.is_read_only():
                    raise LanguageServerError(f"Nothing was changed: {file_edit.path.name} is open read-only.")
                try:
                    in_editors.append((tab, apply_edits(tab.text(), file_edit.edits)))
                except ValueError as exc:
                    raise LanguageServerError(f"Nothing was changed: {exc}") from None
            on_disk = apply_to_disk([edit for edit in file_edits if edit.path not in open_tabs])
        except LanguageServerError as exc:
            self.window.show_error(str(exc))
            return
        for tab, new_text in in_editors:
            replace_text(tab.editor.document(), new_text)
        changed = len(in_editors) + len(on_disk.files)
        message = f"{done} in {changed} file{'s' if changed != 1 else ''}"
        if on_disk.files:
            self.last_disk_change = on_disk
            names = ", ".join(path.name for path, _, _ in on_disk.files)
            message += f" ({names} saved on disk: Undo Rename in Unopened Files puts them back)"
        self._say(message + ".")

    def undo_rename_on_disk(self) -> None:
        change, self.last_disk_change = self.last_disk_change, None
        if change is None:
            return
        problems = change.undo()
        if problems:
            self.window.show_error(" ".join(problems))
        else:
            self._say(f"Put back {len(change.files)} file{'s' if len(change.files) != 1 else ''} as before the rename.")

    def format_document(self) -> None:
        self._format(selection=False)

    def format_selection(self) -> None:
        self._format(selection=True)

    def _format(self, selection: bool) -> None:
        tab = self.current()
        if tab is None or tab.is_read_only():
            return
        span = None
        if selection:
            cursor = tab.editor.textCursor()
            document = tab.editor.document()
            first = document.findBlock(cursor.selectionStart()).blockNumber() + 1
            last = document.findBlock(cursor.selectionEnd()).blockNumber() + 1
            if cursor.hasSelection() and last > first and cursor.selectionEnd() == document.findBlockByNumber(
                    last - 1).position():
                last -= 1  # a selection of whole lines ends at the start of the next one
            span = Span(first, 0, last + 1, 0)
        what = "the selection" if selection else tab.path.name

        def handle(result) -> None:
            if isinstance(result, RequestFailed):
                self._say(f"Could not format {what}: {result.message}")
                return
            try:
                new_text = apply_edits(tab.text(), result)
            except ValueError as exc:
                self._say(f"Could not format {what}: {exc}")
                return
            if replace_text(tab.editor.document(), new_text):
                self._say(f"Formatted {what}.")
            else:
                self._say(f"{what[0].upper() + what[1:]} is already formatted.")

        self.controller.ask("format", tab.path, handle=handle, span=span)


def _name(line_text: str, column: int) -> str | None:
    found = name_at(line_text, column)
    return line_text[found[0]:found[1]] if found else None

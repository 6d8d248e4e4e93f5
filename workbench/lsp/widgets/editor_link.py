"""One Python editor tab linked to the language server: its text goes to the server as it is
typed, saved and closed; the server's problems are underlined in it; ``(``, ``,`` and ``)``
ask for the signature of the call around the caret.

The text is handed over whole on every change (the session works out the incremental change
on its own thread), so a keystroke costs the GUI thread one copy of the text and no waiting.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence

from workbench.lsp.editor_answers import editor_diagnostics
from workbench.lsp.files import is_installed_file
from workbench.lsp.results import SignatureHelp

SIGNATURE_KEYS = "(,)"
# While the signature shows, other keys ask again once typing pauses this long: the answer to
# a "," comes after the space typed behind it and is dropped, so the bold parameter would stay.
SIGNATURE_PAUSE_MS = 150
EDIT_LOG_KEPT = 512


class EditorLink(QObject):
    """The link of ``tab`` (a Python file in the code editor) to ``controller``'s server."""

    def __init__(self, controller, tab):
        super().__init__(tab)
        self.controller = controller
        self.tab = tab
        self.path = tab.path
        self.editor = tab.editor
        self.installed = is_installed_file(tab.path, controller.window.project.root)
        """A file of an installed package: read, navigated, never linted."""
        self.edit_count = 0
        self._edit_lines: list[int] = []  # the line of each of the last edits (0: several lines)
        self.signature_popup = None
        self._signature_place: tuple[int, int] | None = None
        self._signature_timer = QTimer(self, singleShot=True, interval=SIGNATURE_PAUSE_MS)
        self._signature_timer.timeout.connect(self._ask_again_if_shown)
        document = self.editor.document()
        controller.open_document(self.path, self.editor.toPlainText(), check=not self.installed)
        document.contentsChange.connect(self._note_edit)
        document.contentsChanged.connect(self._send_text)
        tab.sig_modified_changed.connect(self._on_modified_changed)
        self.editor.installEventFilter(self)
        self.editor.cursorPositionChanged.connect(self._follow_caret)
        rename = QAction("Rename Symbol", self.editor)
        rename.setShortcut(QKeySequence("F2"))
        # Only while this editor has the focus: the Explorer's F2 renames files.
        rename.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        rename.triggered.connect(lambda *_: controller.run_command("lsp.rename"))
        self.editor.addAction(rename)

    # --- text to the server -------------------------------------------------------------------

    def _send_text(self) -> None:
        self.controller.change_document(self.path, self.editor.toPlainText())
        self.controller.sig_symbols_stale.emit(self.path)

    def _note_edit(self, position: int, removed: int, added: int) -> None:
        document = self.editor.document()
        block = document.findBlock(position)
        end_block = document.findBlock(position + added)
        self.edit_count += 1
        self._edit_lines.append(block.blockNumber() + 1 if block == end_block and removed <= added + 1 else 0)
        if len(self._edit_lines) > EDIT_LOG_KEPT:
            del self._edit_lines[: len(self._edit_lines) - EDIT_LOG_KEPT]

    def edits_since(self, count: int) -> set[int]:
        """The lines edited since ``edit_count`` was ``count`` (0 stands for an edit of several
        lines, or one too old to know)."""
        missed = self.edit_count - count
        if missed <= 0:
            return set()
        if missed > len(self._edit_lines):
            return {0}
        return set(self._edit_lines[-missed:])

    def _on_modified_changed(self, modified: bool) -> None:
        if not modified:  # saved (or reloaded from disk)
            self.controller.save_document(self.path, self.editor.toPlainText())

    # --- problems -----------------------------------------------------------------------------

    def show_problems(self, problems) -> None:
        if not self.installed:
            document = self.editor.document()
            self.tab.set_diagnostics(editor_diagnostics(
                problems, lambda line: document.findBlockByNumber(line - 1).text()))

    # --- signature help -----------------------------------------------------------------------

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt override)
        kind = event.type()
        if kind == QEvent.Type.KeyPress:
            text = event.text()
            if text and text in SIGNATURE_KEYS:
                QTimer.singleShot(0, self, self.request_signature)
            elif event.key() == Qt.Key.Key_Escape:
                self.hide_signature()
            elif event.key() == Qt.Key.Key_Backspace and self.signature_shown():
                QTimer.singleShot(0, self, self.request_signature)
            elif text and text.isprintable() and self.signature_shown():
                self._signature_timer.start()
        elif kind == QEvent.Type.FocusOut:
            self.hide_signature()
        return False

    def request_signature(self) -> None:
        """Ask for the signature of the call around the caret, shown above it."""
        cursor = self.editor.textCursor()
        line, column = cursor.blockNumber() + 1, cursor.positionInBlock()
        self._signature_place = (line, column)

        def handle(result) -> None:
            if self._signature_place != (line, column) or self._caret() != (line, column):
                return  # the caret moved on: a newer question is on its way, or none is wanted
            if isinstance(result, SignatureHelp) and result.active is not None:
                self._show_signature(result)
            else:
                self.hide_signature()

        self.controller.ask("signature_help", self.path, line, column, handle=handle)

    def _ask_again_if_shown(self) -> None:
        if self.signature_shown():
            self.request_signature()

    def signature_shown(self) -> bool:
        return self.signature_popup is not None and self.signature_popup.isVisible()

    def hide_signature(self) -> None:
        self._signature_place = None
        if self.signature_popup is not None:
            self.signature_popup.hide()

    def _show_signature(self, help: SignatureHelp) -> None:
        if self.signature_popup is None:
            from workbench.lsp.widgets.signature_popup import SignaturePopup

            self.signature_popup = SignaturePopup(self.editor)
        self.signature_popup.show_help(help, self.editor)

    def _caret(self) -> tuple[int, int]:
        cursor = self.editor.textCursor()
        return cursor.blockNumber() + 1, cursor.positionInBlock()

    def _follow_caret(self) -> None:
        if self.signature_shown() and self.signature_popup.line != self.editor.textCursor().blockNumber() + 1:
            self.hide_signature()

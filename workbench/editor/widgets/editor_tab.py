"""One open file in the project window: the editor (or a read-only view), its bars and notices.

The tab owns the file's round trip: it reads it, keeps encoding, line ending and BOM for the
save, watches the file on disk, and keeps unsaved typing in the project's hot-exit store.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QVBoxLayout, QWidget

from workbench.editor.assist import CompletionProvider, HoverProvider
from workbench.editor.diagnostics import (
    DiagnosticsProvider,
    EditorDiagnostic,
    diagnostic_at,
    run_provider,
)
from workbench.editor.errors import EditorError
from workbench.editor.hex_dump import HEX_PREVIEW_BYTES, format_byte_size
from workbench.editor.highlighting import LineLexer, lexer_for_path
from workbench.editor.hot_exit import HotExitStore
from workbench.editor.line_index import LARGE_FILE_BYTES
from workbench.editor.textfile import (
    EOL_NAMES,
    TextFile,
    decode_text,
    detect_eol,
    looks_binary,
    read_text_file,
    write_text_file,
)
from workbench.editor.widgets.code_editor import CodeEditor
from workbench.editor.widgets.disk_watcher import DiskWatcher
from workbench.editor.widgets.find_bar import FindBar
from workbench.editor.widgets.go_to_line_bar import GoToLineBar
from workbench.editor.widgets.hex_view import HexView
from workbench.editor.widgets.notice_bar import NoticeArea
from workbench.editor.widgets.syntax_highlighter import SyntaxHighlighter

if TYPE_CHECKING:
    from workbench.editor.widgets.large_find_bar import LargeFindBar
    from workbench.editor.widgets.large_file_view import LargeFileView

# Within a second of the last keystroke the buffer is on disk, without writing on every key.
HOT_EXIT_DELAY_MS = 500
# Problems are looked for once typing pauses this long, not on every key.
DIAGNOSTICS_DELAY_MS = 300

# Notice topics, one bar each.
NOTICE_CHANGED_ON_DISK = "changed-on-disk"
NOTICE_DELETED = "deleted"
NOTICE_READ_ONLY = "read-only"
NOTICE_RECOVERED = "recovered"
NOTICE_NOT_WRITABLE = "not-writable"
NOTICE_HOT_EXIT_OFF = "hot-exit-unavailable"


class EditorTab(QWidget):
    """An editor for one file: a code editor, a hex view for binary files, or a read-only
    view for huge files. ``body`` is whichever of them is shown."""

    sig_modified_changed = Signal(bool)
    """The buffer became modified (True) or matches the file on disk again (False)."""

    sig_cursor_moved = Signal(int, int)
    """The cursor moved to this 1-based (line, column)."""

    sig_diagnostics_changed = Signal()
    """New diagnostics are shown (see ``diagnostics``)."""

    _sig_checked = Signal(int, object)  # (generation, diagnostics) from the worker thread

    def __init__(
        self, path: Path, hot_exit: HotExitStore | None = None, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.path = Path(path)
        self.hot_exit = hot_exit
        self._recovered = False
        self._loading = False
        self._executor: ThreadPoolExecutor | None = None
        self.editor: CodeEditor | None = None
        self.large_view: "LargeFileView | None" = None
        self.hex_view: HexView | None = None
        self.find_bar: "FindBar | LargeFindBar"
        self.highlighter: SyntaxHighlighter | None = None
        self.disk_watcher: DiskWatcher | None = None
        self._diagnostics_provider: DiagnosticsProvider | None = None
        self._diagnostics_generation = 0

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        self.notices = NoticeArea(self)
        layout.addWidget(self.notices)

        size = self._file_size()
        head = self._read_head()
        if looks_binary(head):
            self._open_binary(head, size)
        elif size > LARGE_FILE_BYTES:
            self._open_large(size, head)
        else:
            file = read_text_file(self.path)
            if file.is_text:
                self._open_text(file)
            else:
                self._open_binary(head, size)
        self.go_to_line_bar = GoToLineBar(
            self.set_cursor_position, lambda: self.cursor_position()[0], self._line_count, self
        )
        self.go_to_line_bar.sig_closed.connect(self.focus_body)
        self.find_bar.sig_closed.connect(self.focus_body)
        layout.insertWidget(1, self.go_to_line_bar)
        layout.insertWidget(1, self.find_bar)
        layout.addWidget(self.body, 1)
        self.setFocusProxy(self.body)
        self.destroyed.connect(_make_closer(self._executor_holder))

    # Opening ----------------------------------------------------------------------------

    def _file_size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            raise EditorError(
                f"{self.path} does not exist. It may have been moved or deleted."
            ) from None
        except OSError as exc:
            raise EditorError(f"Cannot open {self.path}: {exc.strerror or exc}.") from None

    def _read_head(self) -> bytes:
        try:
            with open(self.path, "rb") as handle:
                return handle.read(HEX_PREVIEW_BYTES)
        except IsADirectoryError:
            raise EditorError(f"{self.path} is a folder, not a file; open a file inside it.") from None
        except PermissionError:
            raise EditorError(
                f"You do not have permission to read {self.path}. Check the file's permissions."
            ) from None
        except OSError as exc:
            raise EditorError(f"Cannot read {self.path}: {exc.strerror or exc}.") from None

    def _open_large(self, size: int, head: bytes) -> None:
        # Leave these imports here: the large-file view brings numpy, which only huge files need.
        from workbench.editor.widgets.large_file_view import LargeFileView
        from workbench.editor.widgets.large_find_bar import LargeFindBar

        self.large_view = LargeFileView(self.path, self)
        self.body = self.large_view
        self.find_bar = LargeFindBar(self.large_view, self)
        self._executor_holder: list[ThreadPoolExecutor] = []
        self._file = TextFile("", "utf-8", detect_eol(head.decode("utf-8", "replace")), False, True)
        self.language = "Plain text"
        self.notices.show_notice(
            NOTICE_READ_ONLY,
            f"This file is large ({size / 2**20:,.0f} MiB), so it is opened read-only. "
            "Open it in another program to edit it.",
        )
        self._connect_body(self.large_view)
        self.large_view.sig_cursor_moved.connect(lambda line: self.sig_cursor_moved.emit(line, 1))

    def _open_binary(self, head: bytes, size: int) -> None:
        self._executor_holder = []
        self._file = TextFile("", "binary", "", False, False)
        self.language = "Binary"
        self.hex_view = HexView(head[:HEX_PREVIEW_BYTES], self)
        self.body = self.hex_view
        self.find_bar = FindBar(self.hex_view, self)
        self._connect_body(self.hex_view)
        self.hex_view.cursorPositionChanged.connect(
            lambda: self.sig_cursor_moved.emit(*self.cursor_position())
        )
        message = "This is not a text file (it holds binary data), so it is shown read-only in hex."
        if size > HEX_PREVIEW_BYTES:
            message += (
                f" Showing the first {format_byte_size(HEX_PREVIEW_BYTES)} of "
                f"{format_byte_size(size)}."
            )
        self.notices.show_notice(NOTICE_READ_ONLY, message, kind="warning")

    def _connect_body(self, body) -> None:
        body.sig_find_next_requested.connect(self._find_next)
        body.sig_find_previous_requested.connect(self._find_previous)
        body.sig_escape_pressed.connect(self._close_bars)

    def _open_text(self, file: TextFile) -> None:
        self._file = file
        self._executor_holder = []
        line_lexer = LineLexer(lexer_for_path(self.path))
        self.language = line_lexer.language
        self.editor = CodeEditor(self, language=self.language)
        self.editor.path = self.path
        self.body = self.editor
        self.find_bar = FindBar(self.editor, self)
        self._connect_body(self.editor)
        self.editor.setPlainText(file.text)
        document = self.editor.document()
        document.setModified(False)
        document.modificationChanged.connect(self.sig_modified_changed)
        document.modificationChanged.connect(self._on_modification_changed)
        document.contentsChange.connect(self._on_contents_change)
        self.editor.cursorPositionChanged.connect(
            lambda: self.sig_cursor_moved.emit(*self.cursor_position())
        )
        self._hot_exit_timer = QTimer(self, singleShot=True, interval=HOT_EXIT_DELAY_MS)
        self._hot_exit_timer.timeout.connect(self._write_hot_exit)
        self.disk_watcher = DiskWatcher(self.path, file.disk_sha256, self)
        self.disk_watcher.sig_file_changed.connect(self._on_disk_changed)
        self.disk_watcher.sig_file_deleted.connect(self._on_disk_deleted)
        self._base_sha256 = file.disk_sha256
        self._check_writable()
        self._restore_hot_exit()
        # Attached last, so recovered text is not highlighted twice. It colours the first screen
        # now and the rest of the file in the background.
        self.highlighter = SyntaxHighlighter(document, line_lexer)

    def _check_writable(self) -> None:
        if not os.access(self.path.parent, os.W_OK):
            self.notices.show_notice(
                NOTICE_NOT_WRITABLE,
                f"The folder {self.path.parent} is not writable: changes cannot be saved here.",
                kind="warning",
            )
        if self.hot_exit is not None and not self.hot_exit.available:
            self.notices.show_notice(
                NOTICE_HOT_EXIT_OFF,
                "The project folder is not writable: unsaved changes cannot be kept for "
                "recovery if Workbench closes. Save often.",
                kind="warning",
            )

    def _restore_hot_exit(self) -> None:
        if self.hot_exit is None or not self.hot_exit.available:
            return
        entry = self.hot_exit.load(self.path)
        if entry is None:
            return
        if entry.text == self._file.text:
            self.hot_exit.discard(self.path)
            return
        self._loading = True
        try:
            self.editor.setPlainText(entry.text)
        finally:
            self._loading = False
        self._file = TextFile(entry.text, entry.encoding, entry.eol, entry.has_bom, True,
                              self._file.disk_sha256)
        self._base_sha256 = entry.disk_sha256
        self.editor.document().setModified(True)
        self._recovered = True
        when = datetime.fromtimestamp(entry.saved_at).strftime("%Y-%m-%d %H:%M")
        message = f"Recovered unsaved changes from {when}."
        if entry.disk_sha256 and entry.disk_sha256 != self._file.disk_sha256:
            message += " The file has also changed on disk since then; check before saving."
        self.notices.show_notice(
            NOTICE_RECOVERED, message, [("Discard", self._discard_recovered)]
        )

    def _discard_recovered(self) -> None:
        self.reload()

    # The interface the project window uses ----------------------------------------------

    @property
    def recovered_from_hot_exit(self) -> bool:
        """True when the buffer was restored from unsaved changes kept by hot exit."""
        return self._recovered

    def is_modified(self) -> bool:
        """True when the buffer differs from the file as last loaded or saved."""
        return self.editor is not None and self.editor.document().isModified()

    def is_read_only(self) -> bool:
        """True for the hex view of binary files and the large-file view."""
        return self.editor is None or self.editor.isReadOnly()

    def text(self) -> str:
        """The buffer's text with "\\n" line ends ("" in the hex and large-file views)."""
        return self.editor.toPlainText() if self.editor is not None else ""

    def save(self) -> None:
        """Write the buffer to its file with the encoding, line ending and BOM it was read with.

        Raises EditorError (read-only view, unencodable character, no permission, ...).
        """
        if self.is_read_only():
            raise EditorError(
                f"{self.path.name} is open read-only and cannot be saved from Workbench."
            )
        sha = write_text_file(
            self.path, self.text(), self._file.encoding, self._file.eol, self._file.has_bom
        )
        self.disk_watcher.known_sha256 = sha
        self.disk_watcher.is_deleted = False
        self.disk_watcher.rewatch()
        self._file.disk_sha256 = self._base_sha256 = sha
        self._hot_exit_timer.stop()
        self.editor.document().setModified(False)
        self.discard_hot_exit()
        for topic in (NOTICE_CHANGED_ON_DISK, NOTICE_DELETED, NOTICE_RECOVERED):
            self.notices.hide_notice(topic)

    def save_copy(self, path: Path) -> None:
        """Write the buffer to another file, in this file's encoding, line ending and BOM.

        The tab stays on its own file (the window opens the copy); raises EditorError.
        """
        if self.large_view is not None:
            raise EditorError(f"{self.path.name} is too large to copy from the editor; copy the file instead.")
        if self.hex_view is not None:
            raise EditorError(f"{self.path.name} is a binary file; copy the file instead.")
        write_text_file(Path(path), self.text(), self._file.encoding, self._file.eol, self._file.has_bom)

    def reload(self) -> None:
        """Replace the buffer with the file on disk, keeping the cursor; drops unsaved changes.

        Does nothing in the hex and large-file views, which have no buffer."""
        if self.editor is None:
            return
        file = read_text_file(self.path)
        if not file.is_text:
            raise EditorError(f"{self.path.name} is no longer a text file; close and reopen it.")
        self._load(file)
        self.discard_hot_exit()
        self._recovered = False
        for topic in (NOTICE_CHANGED_ON_DISK, NOTICE_DELETED, NOTICE_RECOVERED):
            self.notices.hide_notice(topic)

    def status(self) -> dict:
        """What the status bar shows: encoding, eol ("LF"/"CRLF"/"CR"), language, read_only.

        A binary file has encoding "binary", eol "" and language "Binary".
        """
        if self.hex_view is not None:
            return {"encoding": "binary", "eol": "", "language": "Binary", "read_only": True}
        encoding = self._file.encoding.upper()
        if self._file.has_bom:
            encoding += " with BOM"
        return {
            "encoding": encoding,
            "eol": EOL_NAMES[self._file.eol],
            "language": self.language,
            "read_only": self.is_read_only(),
        }

    def cursor_position(self) -> tuple[int, int]:
        """The cursor as a 1-based (line, column); column 1 in the large-file view, and the
        row and column of the dump in the hex view."""
        if self.large_view is not None:
            return self.large_view.cursor_line() + 1, 1
        return self.body.cursor_position()

    def set_cursor_position(self, line: int, column: int = 1) -> None:
        """Move the cursor to 1-based (line, column), clamped into the file, and show it.

        In the large-file view the column is ignored; a line not indexed yet is reached once
        it is (so "Go to line 99999999" ends on the true last line)."""
        if self.large_view is not None:
            self.large_view.go_to_line(line)
        else:
            self.body.set_cursor_position(line, column)

    def insert_text(self, text: str) -> None:
        """Insert ``text`` at the cursor as if typed (it starts the hot-exit timer like typing)."""
        if self.is_read_only():
            raise EditorError(f"{self.path.name} is open read-only; it cannot be edited.")
        cursor = self.editor.textCursor()
        cursor.insertText(text)
        self.editor.setTextCursor(cursor)

    def show_find(self, replace: bool = False) -> None:
        """Open the find bar, with the replace row when ``replace`` and the file is writable."""
        self.go_to_line_bar.hide()
        self.find_bar.open(replace=replace and not self.is_read_only())

    def show_go_to_line(self) -> None:
        """Open the "Go to line" bar."""
        self.find_bar.hide()
        self.go_to_line_bar.open()

    def indent(self) -> None:
        """Indent the selected lines by one level."""
        if self.editor is not None:
            self.editor.indent()

    def dedent(self) -> None:
        """Dedent the selected lines by one level."""
        if self.editor is not None:
            self.editor.dedent()

    def toggle_comment(self) -> None:
        """Comment or uncomment the selected lines."""
        if self.editor is not None:
            self.editor.toggle_comment()

    def attach_diagnostics(self, provider: DiagnosticsProvider) -> None:
        """Check the buffer with ``provider(text, path)`` now and each time typing pauses; the
        check runs in a worker thread and a late answer for older text is dropped. Only the code
        editor shows diagnostics (not the hex or large-file views)."""
        if self.editor is None:
            return
        if not hasattr(self, "_diagnostics_timer"):
            self._diagnostics_timer = QTimer(self, singleShot=True, interval=DIAGNOSTICS_DELAY_MS)
            self._diagnostics_timer.timeout.connect(self._check_diagnostics)
            self.editor.document().contentsChanged.connect(self._diagnostics_timer.start)
            self._sig_checked.connect(self._on_checked)
        self._diagnostics_provider = provider
        self._check_diagnostics()

    def attach_completions(self, provider: CompletionProvider) -> None:
        """Offer ``provider``'s completions on Ctrl+Space and as the user types (code editor
        only; the provider is told this tab's path)."""
        if self.editor is not None:
            self.editor.set_completion_provider(provider)

    def attach_hover(self, provider: HoverProvider) -> None:
        """Show ``provider``'s help when the mouse rests on the text (code editor only)."""
        if self.editor is not None:
            self.editor.set_hover_provider(provider)

    def set_diagnostics(self, diagnostics: list[EditorDiagnostic]) -> None:
        """Show these problems as underlines (a provider's answer, or a caller's own)."""
        if self.editor is None:
            return
        self.editor.set_diagnostics(diagnostics)
        self.sig_diagnostics_changed.emit()

    def diagnostics(self) -> list[EditorDiagnostic]:
        """The problems shown now."""
        return list(self.editor.diagnostics) if self.editor is not None else []

    def diagnostic_message(self, line: int | None = None) -> str:
        """The message of the problem on 1-based ``line`` (the cursor's by default), or ""."""
        if line is None:
            line = self.cursor_position()[0]
        found = diagnostic_at(self.diagnostics(), line)
        return found.message if found is not None else ""

    def _check_diagnostics(self) -> None:
        if self._diagnostics_provider is None:
            return
        self._diagnostics_generation += 1
        # The text is taken now, on the GUI thread; the checking happens on the worker.
        self._submit(self._check_in_worker, self._diagnostics_provider, self._diagnostics_generation,
                     self.text())

    def _check_in_worker(self, provider: DiagnosticsProvider, generation: int, text: str) -> None:
        found = run_provider(provider, text, self.path)
        try:
            self._sig_checked.emit(generation, found)
        except RuntimeError:
            pass  # the tab closed while its text was being checked

    def _on_checked(self, generation: int, diagnostics: list[EditorDiagnostic]) -> None:
        if generation == self._diagnostics_generation:
            self.set_diagnostics(diagnostics)

    def flush_hot_exit(self) -> None:
        """Write the unsaved buffer to the hot-exit store now (call before the window quits)."""
        if self.editor is None or self.hot_exit is None:
            return
        self._hot_exit_timer.stop()
        self._write_hot_exit()
        if self._executor is not None:
            self._executor.submit(lambda: None).result()

    def discard_hot_exit(self) -> None:
        """Forget the kept unsaved buffer (after a save, or when the user closes without saving)."""
        if self.hot_exit is not None:
            self._submit(self.hot_exit.discard, self.path)

    # Inside -----------------------------------------------------------------------------

    def _line_count(self) -> int:
        if self.large_view is not None:
            return self.large_view.line_count
        return self.body.document().blockCount()

    def _load(self, file: TextFile) -> None:
        line, column = self.cursor_position()
        scroll = self.editor.verticalScrollBar().value()
        self._loading = True
        try:
            # Replacing the text through a cursor keeps the undo history, so an external change
            # that was picked up silently can still be undone.
            cursor = QTextCursor(self.editor.document())
            cursor.select(QTextCursor.SelectionType.Document)
            cursor.insertText(file.text)
        finally:
            self._loading = False
        self._file = file
        self._base_sha256 = file.disk_sha256
        self.disk_watcher.known_sha256 = file.disk_sha256
        self._hot_exit_timer.stop()
        self.editor.document().setModified(False)
        self.editor.set_cursor_position(line, column)
        self.editor.verticalScrollBar().setValue(scroll)

    def _on_modification_changed(self, modified: bool) -> None:
        # Back to the file's text (undone to it, saved): the copy kept of an earlier unsaved
        # buffer goes now, not at the next debounce, which a window closing at once never sees.
        if not modified:
            self._hot_exit_timer.stop()
            self.discard_hot_exit()

    def _on_contents_change(self, _position: int, _removed: int, _added: int) -> None:
        if not self._loading:
            self._hot_exit_timer.start()

    def _write_hot_exit(self) -> None:
        if self.hot_exit is None or not self.hot_exit.available:
            return
        if not self.is_modified():
            self.discard_hot_exit()
            return
        # The text is taken now, on the GUI thread; only the writing happens on the worker.
        self._submit(
            self.hot_exit.save, self.path, self.text(), self._file.encoding, self._file.eol,
            self._file.has_bom, self._base_sha256,
        )

    def _submit(self, function, *args) -> None:
        if self._executor is None:
            # One worker, so writes and discards land in the order they were asked for.
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hot-exit")
            self._executor_holder.append(self._executor)
        self._executor.submit(function, *args)

    def _on_disk_changed(self, data: bytes) -> None:
        self.notices.hide_notice(NOTICE_DELETED)
        if not self.is_modified():
            file = decode_text(data)
            if file.is_text:
                self._load(file)
                return
        self.notices.show_notice(
            NOTICE_CHANGED_ON_DISK,
            f"{self.path.name} changed on disk, and you have unsaved changes.",
            [("Reload", self.reload), ("Keep my changes", self._keep_my_changes)],
            kind="warning",
        )

    def _keep_my_changes(self) -> None:
        # The watcher already counts the new disk content as known, so the same change is not
        # reported again; saving will overwrite it.
        self.notices.hide_notice(NOTICE_CHANGED_ON_DISK)

    def _on_disk_deleted(self) -> None:
        self.notices.show_notice(
            NOTICE_DELETED,
            f"{self.path.name} was deleted on disk. Your text is kept; save to write it again.",
            kind="warning",
        )

    def _find_next(self) -> None:
        if not self.find_bar.isVisible() or not self.find_bar.find_edit.text():
            self.show_find()
        else:
            self.find_bar.find_next()

    def _find_previous(self) -> None:
        if not self.find_bar.isVisible() or not self.find_bar.find_edit.text():
            self.show_find()
        else:
            self.find_bar.find_previous()

    def _close_bars(self) -> None:
        if self.find_bar.isVisible():
            self.find_bar.close_bar()
        self.go_to_line_bar.hide()

    def focus_body(self) -> None:
        """Give the keyboard focus to the text (or the hex or large-file view).

        The window calls it after adding the tab, and the find and "Go to line" bars call it
        when they close.
        """
        self.body.setFocus(Qt.FocusReason.OtherFocusReason)


def _make_closer(executors: list[ThreadPoolExecutor]):
    # Runs when the tab is destroyed; it must not touch the tab itself. Pending hot-exit writes
    # still finish, so nothing typed is lost.
    def close() -> None:
        for executor in executors:
            executor.shutdown(wait=False)

    return close


def open_editor_tab(
    path: Path, hot_exit: HotExitStore | None, parent: QWidget | None = None
) -> EditorTab:
    """An EditorTab for ``path``: the code editor for text, a read-only view for binary files and
    for files above LARGE_FILE_BYTES. Raises EditorError when the file cannot be opened."""
    return EditorTab(Path(path), hot_exit, parent)


__all__ = ["EditorTab", "open_editor_tab"]

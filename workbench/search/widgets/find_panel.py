"""The Search dock: Find in Files and Replace in Files.

Results stream in a file at a time, grouped by file, the matched text highlighted; a click opens
the file at the match. A search runs on the window's task runner and can be cancelled; a newer
search replaces a running one. Replace first shows every change (each can be unticked), then
writes the files that are still as they were, and can be undone.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Callable

import shiboken6
from PySide6.QtCore import QObject, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAbstractTextDocumentLayout, QFontDatabase, QPalette, QTextDocument
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QStackedWidget,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.qt import theme
from workbench.search.replace import (
    FileUndo,
    ReplaceError,
    ReplaceOutcome,
    ReplacePlan,
    UndoOutcome,
    apply_replacement,
    plan_replacement,
    undo_replacement,
)
from workbench.search.ripgrep import (
    FileMatches,
    LineMatch,
    SearchError,
    SearchQuery,
    SearchSummary,
    search_files,
    split_globs,
)

PLACE_ROLE = Qt.ItemDataRole.UserRole  # a result file's path
HTML_ROLE = Qt.ItemDataRole.UserRole + 1  # a row's rich text
EDIT_ROLE = Qt.ItemDataRole.UserRole + 2  # a preview row's (path, index) of its change
LINE_ROLE = Qt.ItemDataRole.UserRole + 3  # a result row's LineMatch, made into rich text when painted
COUNT_ROLE = Qt.ItemDataRole.UserRole + 4  # a file row's number of matches
TYPING_PAUSE_MS = 300
DOCUMENT_CACHE_SIZE = 400
# Text shown of a long line before its first match; the rest of a line past this many
# characters is cut, as VS Code cuts minified files.
PREVIEW_LEAD = 40
PREVIEW_LENGTH = 250


def _line_html(line: LineMatch) -> str:
    """The line's number and text, each match highlighted, long lines cut around the matches."""
    first = line.submatches[0].start if line.submatches else 0
    match_colour = theme.colour("FIND_MATCH")
    begin = max(0, first - PREVIEW_LEAD)
    end = min(len(line.text), begin + PREVIEW_LENGTH)
    pieces, position = [], begin
    for sub in line.submatches:
        if sub.start >= end:
            break
        pieces.append(html.escape(line.text[position:sub.start]))
        pieces.append(f'<span style="background:{match_colour}">{html.escape(line.text[sub.start:min(sub.end, end)])}</span>')
        position = min(sub.end, end)
    pieces.append(html.escape(line.text[position:end]))
    text = "".join(pieces).lstrip() if begin == 0 else "…" + "".join(pieces)
    return (f'<span style="color:{theme.colour("MUTED_TEXT")}">{line.line}</span>&nbsp;&nbsp;{text}'
            f'{"…" if end < len(line.text) else ""}')


def _change_html(line_text: str, start: int, end: int, new_text: str, line: int) -> str:
    """A line with the matched text struck out and the replacement after it."""
    begin = max(0, start - PREVIEW_LEAD)
    stop = min(len(line_text), end + PREVIEW_LENGTH - PREVIEW_LEAD)
    before = html.escape(line_text[begin:start])
    text = (("…" if begin else "") + (before.lstrip() if not begin else before)
            + f'<span style="background:{theme.colour("DIFF_REMOVED_STRONG")}"><s>{html.escape(line_text[start:end])}</s></span>'
            + f'<span style="background:{theme.colour("DIFF_ADDED_STRONG")}">{html.escape(new_text)}</span>'
            + html.escape(line_text[end:stop]) + ("…" if stop < len(line_text) else ""))
    return f'<span style="color:{theme.colour("MUTED_TEXT")}">{line}</span>&nbsp;&nbsp;{text}'


def _file_html(path: str, count: int) -> str:
    """A file row as VS Code shows it: the name first (a narrow dock cuts the folder, not the
    name), then its folder and its number of matches, muted."""
    folder, _, name = path.rpartition("/")
    muted = theme.colour("MUTED_TEXT")
    return (f"<b>{html.escape(name)}</b>&nbsp;&nbsp;<span style=\"color:{muted}\">"
            f"{html.escape(folder)}&nbsp;&nbsp;({count})</span>")


def row_markup(index) -> str | None:
    """The rich text of a row (a QModelIndex or a QTreeWidgetItem): a result line's is made
    when it is first painted, so listing thousands of results costs no HTML until seen."""
    def data(role):
        return index.data(role) if hasattr(index, "model") else index.data(0, role)

    markup = data(HTML_ROLE)
    if markup:
        return markup
    line = data(LINE_ROLE)
    if line is not None:
        return _line_html(line)
    count = data(COUNT_ROLE)
    return _file_html(data(PLACE_ROLE), count) if count is not None else None


class _HtmlDelegate(QStyledItemDelegate):
    """Draws an item's HTML_ROLE text as rich text (the highlighted matches), else its text."""

    def __init__(self, parent=None):
        super().__init__(parent)
        # Laid-out documents of the rows painted lately: a scroll or a new batch of results
        # repaints the same rows, and laying out HTML is the dearest part of painting one.
        self._documents: dict[tuple[str, bool], QTextDocument] = {}

    def paint(self, painter, option, index) -> None:
        markup = row_markup(index)
        if not markup:
            super().paint(painter, option, index)
            return
        options = QStyleOptionViewItem(option)
        self.initStyleOption(options, index)
        options.text = ""
        style = options.widget.style() if options.widget else QStyle()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, options, painter, options.widget)
        text_rect = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, options, options.widget)
        document = self._document(markup, options)
        painter.save()
        painter.translate(text_rect.topLeft())
        painter.setClipRect(QRectF(0, 0, text_rect.width(), text_rect.height()))
        context = QAbstractTextDocumentLayout.PaintContext()
        selected = bool(options.state & QStyle.StateFlag.State_Selected)
        role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        context.palette.setColor(QPalette.ColorRole.Text, options.palette.color(role))
        offset = (text_rect.height() - document.size().height()) / 2
        painter.translate(0, max(0.0, offset))
        document.documentLayout().draw(painter, context)
        painter.restore()

    def forget(self) -> None:
        """Drop the laid-out rows (their colours are the old theme's)."""
        self._documents.clear()

    def _document(self, markup: str, options: QStyleOptionViewItem) -> QTextDocument:
        key = (markup, options.font.bold())
        document = self._documents.get(key)
        if document is None:
            if len(self._documents) >= DOCUMENT_CACHE_SIZE:
                self._documents.clear()
            document = QTextDocument()
            document.setDocumentMargin(0)
            document.setDefaultFont(options.font)
            document.setHtml(markup)
            self._documents[key] = document
        return document

    def sizeHint(self, option, index) -> QSize:
        hint = super().sizeHint(option, index)
        return QSize(hint.width(), max(hint.height(), option.fontMetrics.height() + 4))


class _Relay(QObject):
    """Brings batches of results from the search's worker thread to the GUI thread."""

    files_found = Signal(int, object)


class FindInFilesPanel(QWidget):
    """Find in Files and Replace in Files over one folder."""

    sig_results_shown = Signal(int)
    """A batch of results is in the list (the number of files listed so far)."""

    sig_search_finished = Signal(object)
    """A search ended: its SearchSummary, or None when it failed or was cancelled."""

    sig_replace_finished = Signal(object)
    """A replacement (ReplaceOutcome) or its undo (UndoOutcome) is done."""

    def __init__(self, root: Path, tasks, open_file: Callable, editors: Callable[[], list] = lambda: []):
        super().__init__()
        self.setObjectName("find-in-files-panel")
        self.root = Path(root)
        self._tasks = tasks
        self._open_file = open_file
        self._editors = editors
        self.results: list[FileMatches] = []
        self._match_total = 0
        self.summary: SearchSummary | None = None
        self.plan: ReplacePlan | None = None
        self._results_query: SearchQuery | None = None
        self._search_id = 0
        self._undo: list[FileUndo] = []
        self._note = ""
        self._status_plain = ""
        self._status_error = False
        self._relay = _Relay(self)
        self._relay.files_found.connect(self._show_files)
        self._typing = QTimer(self)
        self._typing.setSingleShot(True)
        self._typing.setInterval(TYPING_PAUSE_MS)
        self._typing.timeout.connect(lambda: self.search())
        self._build()
        theme.theme_changes().sig_theme_changed.connect(self._theme_changed)
        # No taller than the Explorer it is tabbed with needs: a larger minimum grows the whole
        # tab group, and a small window with it, before the saved layout comes back.
        self.setMinimumSize(60, 60)

    # --- layout -------------------------------------------------------------------------------

    def _build(self) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.setSpacing(4)
        find_row = QHBoxLayout()
        self.find_edit = QLineEdit(placeholderText="Find", clearButtonEnabled=True)
        self.find_edit.setObjectName("find-in-files-text")
        self.find_edit.textChanged.connect(self._typed)
        self.find_edit.returnPressed.connect(lambda: self.search())
        find_row.addWidget(self.find_edit, 1)
        self.case_button = self._toggle("Aa", "Match Case")
        self.word_button = self._toggle("ab", "Match Whole Word")
        font = self.word_button.font()
        font.setUnderline(True)
        self.word_button.setFont(font)
        self.regex_button = self._toggle(".*", "Use Regular Expression")
        for button in (self.case_button, self.word_button, self.regex_button):
            find_row.addWidget(button)
        layout.addLayout(find_row)

        replace_row = QHBoxLayout()
        self.replace_edit = QLineEdit(placeholderText="Replace", clearButtonEnabled=True)
        self.replace_edit.setObjectName("find-in-files-replacement")
        self.replace_edit.setToolTip("With a regular expression, $1 or ${name} puts in a group, $0 the whole match")
        self.replace_edit.returnPressed.connect(self.preview_replace)
        replace_row.addWidget(self.replace_edit, 1)
        self.preview_button = QPushButton("Preview…")
        self.preview_button.setToolTip("Show every change Replace would make")
        self.preview_button.clicked.connect(self.preview_replace)
        replace_row.addWidget(self.preview_button)
        layout.addLayout(replace_row)

        self.include_edit = QLineEdit(placeholderText="Files to include (e.g. *.py, src/**)", clearButtonEnabled=True)
        self.exclude_edit = QLineEdit(placeholderText="Files to exclude (e.g. tests/**)", clearButtonEnabled=True)
        for edit in (self.include_edit, self.exclude_edit):
            edit.textChanged.connect(self._typed)
            edit.returnPressed.connect(lambda: self.search())
            layout.addWidget(edit)

        status_row = QHBoxLayout()
        self.status = QLabel()
        self.status.setObjectName("find-in-files-status")
        self.status.setWordWrap(True)
        # A long error wraps inside the dock instead of widening it.
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        status_row.addWidget(self.status, 1)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.hide()
        status_row.addWidget(self.cancel_button, 0, Qt.AlignmentFlag.AlignTop)
        self.undo_button = QPushButton("Undo Replace")
        self.undo_button.clicked.connect(self.undo_replace)
        self.undo_button.hide()
        status_row.addWidget(self.undo_button, 0, Qt.AlignmentFlag.AlignTop)
        layout.addLayout(status_row)

        self.pages = QStackedWidget()
        self.results_tree = self._tree("find-in-files-results")
        self.results_tree.itemActivated.connect(self._go_to)
        self.results_tree.itemClicked.connect(self._go_to)
        self.pages.addWidget(self.results_tree)
        preview_page = QWidget()
        preview_layout = QVBoxLayout(preview_page)
        preview_layout.setContentsMargins(0, 0, 0, 0)
        self.preview_tree = self._tree("find-in-files-preview")
        self.preview_tree.itemChanged.connect(self._preview_ticked)
        preview_layout.addWidget(self.preview_tree, 1)
        buttons = QHBoxLayout()
        self.apply_button = QPushButton("Replace")
        self.apply_button.setObjectName("find-in-files-apply")
        self.apply_button.clicked.connect(self.apply_replace)
        back = QPushButton("Back to Results")
        back.clicked.connect(self.close_preview)
        buttons.addWidget(self.apply_button)
        buttons.addWidget(back)
        buttons.addStretch(1)
        preview_layout.addLayout(buttons)
        self.pages.addWidget(preview_page)
        layout.addWidget(self.pages, 1)
        self._update_buttons()

    def _theme_changed(self, _theme: str) -> None:
        for tree in (self.results_tree, self.preview_tree):
            tree.itemDelegate().forget()
            tree.viewport().update()
        if self.plan is not None:
            self._show_plan(self.plan, self.chosen_edits())  # its rows' colours were written into them
        self._say(self._status_plain, self._status_error)

    def _toggle(self, text: str, tip: str) -> QToolButton:
        button = QToolButton(text=text, checkable=True, toolTip=tip, autoRaise=True)
        button.toggled.connect(self._typed)
        return button

    def _tree(self, name: str) -> QTreeWidget:
        tree = QTreeWidget()
        tree.setObjectName(name)
        tree.setHeaderHidden(True)
        tree.setUniformRowHeights(True)
        tree.setItemDelegate(_HtmlDelegate(tree))
        return tree

    # --- searching ----------------------------------------------------------------------------

    def query(self) -> SearchQuery:
        """What the fields ask for now."""
        return SearchQuery(self.find_edit.text(), regex=self.regex_button.isChecked(),
                           case_sensitive=self.case_button.isChecked(), whole_word=self.word_button.isChecked(),
                           include=split_globs(self.include_edit.text()),
                           exclude=split_globs(self.exclude_edit.text()))

    @property
    def searching(self) -> bool:
        return self._tasks.is_running("search.find")

    @property
    def can_undo(self) -> bool:
        return bool(self._undo) and not self._tasks.is_running("search.replace")

    def find(self, text: str | None = None) -> None:
        """Search for ``text`` (the field's text when None) now."""
        if text is not None:
            self.find_edit.blockSignals(True)
            self.find_edit.setText(text)
            self.find_edit.blockSignals(False)
        self.search()

    def _typed(self, *_args) -> None:
        self._typing.start()

    def search(self, note: str = "") -> None:
        """Start a search with the fields as they are (a running one is cancelled); ``note``
        stays under the status line until the next search (what a replacement did)."""
        self._typing.stop()
        self._note = note
        self.close_preview()
        self._search_id += 1
        self.results, self.summary = [], None
        self._match_total = 0
        self._results_query = None
        query = self.query()
        # The last search's rows are freed once this one has shown its results: freeing
        # 20,000 rows would otherwise come before the first of them.
        _empty(self.results_tree, self.sig_search_finished if query.pattern else None)
        if not query.pattern:
            self._tasks.cancel("search.find")
            self._say("")
            self._update_buttons()
            return
        search_id = self._search_id
        self._say("Searching…")
        self._tasks.run("search.find", search_files, self.root, query,
                        on_files=lambda batch: self._relay.files_found.emit(search_id, batch),
                        on_done=lambda summary: self._finished(search_id, query, summary),
                        on_error=lambda error: self._failed(search_id, error))
        self._update_buttons()

    def cancel(self) -> None:
        """Stop the running search; what it found so far stays listed."""
        if self.searching:
            self._tasks.cancel("search.find")
            self._search_id += 1  # batches still on their way are dropped: the list stays as it is
            self._say(f"Search cancelled: {self._counts()} so far.")
            self._update_buttons()
            self.sig_search_finished.emit(None)

    def _show_files(self, search_id: int, batch: list[FileMatches]) -> None:
        if search_id != self._search_id:
            return  # a late batch of a search replaced since
        tree = self.results_tree
        tree.setUpdatesEnabled(False)
        # Thousands of files may come in one search: the items are made with as few calls
        # into Qt as can be, and added to the tree in one go.
        root = f"{self.root}{os.sep}"
        file_items = []
        for found in batch:
            self.results.append(found)
            self._match_total += found.match_count
            file_item = QTreeWidgetItem([f"{found.path}  ({found.match_count})"])
            file_item.setToolTip(0, root + found.path)
            file_item.setData(0, PLACE_ROLE, found.path)
            file_item.setData(0, COUNT_ROLE, found.match_count)
            for line in found.lines:
                QTreeWidgetItem(file_item).setData(0, LINE_ROLE, line)
            file_items.append(file_item)
        tree.addTopLevelItems(file_items)
        for file_item in file_items:
            file_item.setExpanded(True)
        tree.setUpdatesEnabled(True)
        if self.searching:
            self._say(f"Searching… {self._counts()}")
        self.sig_results_shown.emit(len(self.results))

    def _finished(self, search_id: int, query: SearchQuery, summary: SearchSummary) -> None:
        if search_id != self._search_id:
            return
        self.summary = summary
        self._results_query = query
        if not summary.files:
            self._say(f"No results for {query.pattern!r}." + (" Files to include or exclude may leave out "
                                                             "what you look for." if query.include or query.exclude else ""))
        elif summary.limit_hit:
            self._say(f"{self._counts()}: the first {summary.matches:,} matches only; narrow the search "
                      f"to see the rest.")
        else:
            self._say(self._counts() + ".")
        self._update_buttons()
        self.sig_search_finished.emit(summary)

    def _failed(self, search_id: int, error: Exception) -> None:
        if search_id != self._search_id:
            return
        self._say(str(error) if isinstance(error, SearchError) else f"The search failed: {error}", error=True)
        self._update_buttons()
        self.sig_search_finished.emit(None)

    def _counts(self) -> str:
        matches = self._match_total
        files = len(self.results)
        return f"{matches:,} result{'s' if matches != 1 else ''} in {files:,} file{'s' if files != 1 else ''}"

    def _say(self, text: str, error: bool = False) -> None:
        if self._note and not text.startswith(self._note):
            text = f"{self._note}\n{text}" if text else self._note
            error = error or "Not changed:" in self._note
        self._status_plain, self._status_error = text, error
        if error:
            # Monospaced, so the caret rg puts under a fault in the pattern points at it.
            monospace = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).family()
            headline, _, details = text.partition("\n\n")
            markup = f'<p style="color:{theme.colour("ERROR_TEXT")}">{html.escape(headline).replace(chr(10), "<br>")}</p>'
            if details:
                markup += (f'<pre style="color:{theme.colour("ERROR_TEXT")}; font-family:\'{monospace}\'">'
                           f'{html.escape(details)}</pre>')
            self.status.setTextFormat(Qt.TextFormat.RichText)
            self.status.setText(markup)
        else:
            self.status.setTextFormat(Qt.TextFormat.PlainText)
            self.status.setText(text)

    def status_text(self) -> str:
        """What the status line says, as plain text."""
        return self._status_plain

    def _go_to(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        line = item.data(0, LINE_ROLE)
        if line is not None and item.parent() is not None:
            column = line.submatches[0].start + 1 if line.submatches else 1
            self._open_file(self.root / item.parent().data(0, PLACE_ROLE), line.line, column)

    def _update_buttons(self) -> None:
        self.cancel_button.setVisible(self.searching)
        self.preview_button.setEnabled(bool(self.results) and self.summary is not None)
        self.undo_button.setVisible(bool(self._undo))
        self.undo_button.setEnabled(self.can_undo)

    # --- replacing ----------------------------------------------------------------------------

    def preview_replace(self) -> None:
        """Show every change replacing the results would make (the search must be finished)."""
        if self.summary is None or not self.results or self._results_query is None:
            self._say("Search first, then preview the replacement of what was found.")
            return
        if self._results_query != self.query():
            self._say("The fields changed since the search: search again (Enter), then preview.")
            return
        self._say("Preparing the preview…")
        self._tasks.run("search.plan", plan_replacement, self.root, self._results_query, self.replace_edit.text(),
                        list(self.results), on_done=self._show_plan, on_error=self._replace_failed)

    def _show_plan(self, plan: ReplacePlan, chosen: set[tuple[str, int]] | None = None) -> None:
        self.plan = plan
        unsaved = self.unsaved_files()  # and again when replacing: an editor may be changed by then
        for change in plan.files:
            if not change.problem and change.path in unsaved:
                change.problem = unsaved[change.path]
        tree = self.preview_tree
        tree.blockSignals(True)
        _empty(tree)
        for change in plan.files:
            file_item = QTreeWidgetItem([f"{change.path}  ({len(change.edits)})"])
            file_item.setData(0, PLACE_ROLE, change.path)
            font = file_item.font(0)
            font.setBold(True)
            file_item.setFont(0, font)
            if change.problem:
                file_item.setData(0, HTML_ROLE, f"<b>{html.escape(change.path)}</b>&nbsp;&nbsp;"
                                                f'<span style="color:{theme.colour("ERROR_TEXT")}">{html.escape(change.problem)}</span>')
                file_item.setFlags(file_item.flags() & ~Qt.ItemFlag.ItemIsUserCheckable)
            else:
                file_item.setFlags(file_item.flags() | Qt.ItemFlag.ItemIsUserCheckable
                                   | Qt.ItemFlag.ItemIsAutoTristate)
            for index, edit in enumerate(change.edits):
                item = QTreeWidgetItem(file_item)
                item.setData(0, HTML_ROLE, _change_html(edit.line_text, edit.start, edit.end, edit.new_text, edit.line))
                item.setData(0, EDIT_ROLE, (change.path, index))
                item.setToolTip(0, f"{change.path}:{edit.line}: {edit.old_text!r} → {edit.new_text!r}")
                if not change.problem:
                    item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                    ticked = chosen is None or (change.path, index) in chosen
                    item.setCheckState(0, Qt.CheckState.Checked if ticked else Qt.CheckState.Unchecked)
            tree.addTopLevelItem(file_item)
            file_item.setExpanded(True)
        tree.blockSignals(False)
        self.pages.setCurrentIndex(1)
        self._preview_ticked()

    def chosen_edits(self) -> set[tuple[str, int]]:
        """The ``(path, index)`` of each ticked change in the preview."""
        chosen = set()
        for i in range(self.preview_tree.topLevelItemCount()):
            file_item = self.preview_tree.topLevelItem(i)
            for j in range(file_item.childCount()):
                item = file_item.child(j)
                if item.flags() & Qt.ItemFlag.ItemIsUserCheckable and item.checkState(0) == Qt.CheckState.Checked:
                    chosen.add(tuple(item.data(0, EDIT_ROLE)))
        return chosen

    def _preview_ticked(self, *_args) -> None:
        if self.plan is None:
            return
        chosen = self.chosen_edits()
        files = len({path for path, _ in chosen})
        self.apply_button.setText(f"Replace {len(chosen):,} in {files:,} file{'s' if files != 1 else ''}")
        self.apply_button.setEnabled(bool(chosen))
        problems = sum(1 for change in self.plan.files if change.problem)
        self._say(f"Preview: {self.plan.edit_count:,} change{'s' if self.plan.edit_count != 1 else ''}"
                  + (f"; {problems} file{'s' if problems != 1 else ''} will not be changed (see why below)."
                     if problems else "."))

    def close_preview(self) -> None:
        self.plan = None
        _empty(self.preview_tree)
        self.pages.setCurrentIndex(0)

    def unsaved_files(self) -> dict[str, str]:
        """Files open with unsaved edits (path relative to the root, reason): they are not
        rewritten under the editor."""
        skip = {}
        for tab in self._editors():
            try:
                relative = Path(tab.path).resolve().relative_to(self.root.resolve()).as_posix()
            except ValueError:
                continue
            if tab.is_modified():
                skip[relative] = "has unsaved changes in the editor; save or revert them, then search again"
        return skip

    def apply_replace(self) -> None:
        """Make the ticked changes."""
        if self.plan is None:
            return
        self.apply_button.setEnabled(False)
        self._say("Replacing…")
        self._tasks.run("search.replace", apply_replacement, self.plan, self.chosen_edits(), self.unsaved_files(),
                        on_done=self._replaced, on_error=self._replace_failed)

    def _replaced(self, outcome: ReplaceOutcome) -> None:
        self._undo = outcome.undo
        self.close_preview()
        # Searched again, so the list shows what is in the files now.
        self.search(note=f"Replaced {outcome.replaced:,} in {outcome.files:,} "
                         f"file{'s' if outcome.files != 1 else ''}." + _skipped_lines(outcome.skipped))
        self._update_buttons()
        self.sig_replace_finished.emit(outcome)

    def undo_replace(self) -> None:
        """Put back what the last replacement changed."""
        if not self.can_undo:
            return
        undo, self._undo = self._undo, []
        self._update_buttons()
        self._tasks.run("search.replace", undo_replacement, self.root, undo,
                        on_done=self._undone, on_error=self._replace_failed)

    def _undone(self, outcome: UndoOutcome) -> None:
        files = len(outcome.restored)
        self.search(note=f"Undid the replacement in {files} file{'s' if files != 1 else ''}."
                         + _skipped_lines(outcome.skipped))
        self._update_buttons()
        self.sig_replace_finished.emit(outcome)

    def _replace_failed(self, error: Exception) -> None:
        self._say(str(error) if isinstance(error, ReplaceError) else f"The replacement failed: {error}", error=True)
        self._update_buttons()
        self.sig_replace_finished.emit(None)


def _empty(tree: QTreeWidget, free_when: Signal | None = None) -> None:
    """Remove every row of ``tree`` now; they are freed a few thousand at a time afterwards
    (once ``free_when`` is emitted, when given).

    QTreeWidget.clear() takes time that grows with the square of the expanded rows (8 s for
    7,500 files); taken off the tree in one call they go at once. Freeing 20,000 rows still
    takes half a second, which would delay the next search's first results."""
    taken = tree.invisibleRootItem().takeChildren()
    if not taken:
        return
    if free_when is None:
        QTimer.singleShot(0, tree, lambda: _free_later(tree, taken))
        return

    def free(*_args) -> None:
        free_when.disconnect(free)
        QTimer.singleShot(0, tree, lambda: _free_later(tree, taken))

    free_when.connect(free)


FREE_PER_TICK = 2000


def _free_later(owner: QObject, items: list) -> None:
    # Taken items are not freed with their Python wrappers: each is deleted explicitly.
    for item in items[:FREE_PER_TICK]:
        shiboken6.delete(item)
    rest = items[FREE_PER_TICK:]
    if rest:
        QTimer.singleShot(0, owner, lambda: _free_later(owner, rest))


def _skipped_lines(skipped: list[tuple[str, str]]) -> str:
    if not skipped:
        return ""
    return "\nNot changed:\n" + "\n".join(f"  {path} {reason}" for path, reason in skipped)

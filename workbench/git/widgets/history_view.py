"""The commit history of a repository (with graph lanes) or of one file, and a commit's details.

The log is read off the GUI thread a page at a time (``PAGE_SIZE`` commits); the view asks for
the next page when it is scrolled to the bottom (Qt's ``canFetchMore`` / ``fetchMore``). The
graph lanes of everything loaded are laid out in the same worker, since a new page can change
the lines leaving the last row of the previous one.
"""

from __future__ import annotations

import inspect
import itertools
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontDatabase, QSyntaxHighlighter, QTextCharFormat
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QSplitter,
    QTextBrowser,
    QToolButton,
    QTreeView,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.git.graph import GraphRow, layout_graph
from workbench.git.history import ChangedFile, CommitDetails, CommitEntry, commit_details, log
from workbench.git.repository import Repository
from workbench.git.widgets.graph_delegate import GRAPH_ROLE, REFS_ROLE, GraphDelegate, SummaryDelegate, graph_width
from workbench.tasks import CancelToken
from workbench.qt import theme
from workbench.qt.icons import name_tab_icon

PAGE_SIZE = 500
ENTRY_ROLE = Qt.ItemDataRole.UserRole + 3  # the row's CommitEntry

GRAPH, SUMMARY, AUTHOR, DATE, SHA = "graph", "summary", "author", "date", "sha"
_HEADERS = {GRAPH: "Graph", SUMMARY: "Summary", AUTHOR: "Author", DATE: "Date", SHA: "Commit"}
_STATUS_NAMES = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed", "C": "copied", "T": "type changed"}
_ids = itertools.count(1)


@dataclass(frozen=True)
class HistoryPage:
    """What one page load brings back from the worker."""

    entries: list[CommitEntry]
    graph: list[GraphRow]  # for every entry loaded so far, this page included
    exhausted: bool


def load_history_page(repo: Repository, loaded: list[tuple[str, tuple[str, ...]]], path: str | None,
                      all_refs: bool, page_size: int, with_graph: bool, *,
                      cancel: CancelToken | None = None) -> HistoryPage:
    """The next ``page_size`` commits after the ``loaded`` (sha, parents) pairs, and the graph of
    them all (none with ``with_graph`` false)."""
    entries = log(repo, path=path, limit=page_size, skip=len(loaded), all_refs=all_refs, cancel=cancel)
    graph = layout_graph([*loaded, *((e.sha, e.parents) for e in entries)]) if with_graph else []
    return HistoryPage(entries=entries, graph=graph, exhausted=len(entries) < page_size)


class HistoryModel(QAbstractTableModel):
    """The commits loaded so far, one row each; more come with ``fetchMore``."""

    sig_page_loaded = Signal(int)
    """A page arrived; the argument is how many commits are loaded now."""

    sig_load_failed = Signal(str)
    """Reading the log failed; the argument is the message to show."""

    def __init__(self, repo: Repository, tasks, path: str | Path | None = None, all_refs: bool = False,
                 page_size: int = PAGE_SIZE, parent: QObject | None = None):
        super().__init__(parent)
        self.repo, self.tasks = repo, tasks
        self.path = None if path is None else str(path)
        self.all_refs = all_refs
        self.page_size = page_size
        self.columns = [SUMMARY, AUTHOR, DATE, SHA] if self.path is not None else [GRAPH, SUMMARY, AUTHOR, DATE, SHA]
        self.entries: list[CommitEntry] = []
        self.graph: list[GraphRow] = []
        self.exhausted = False
        self.loading = False
        self._key = f"git.history.page.{next(_ids)}"
        # A page that arrives after the model is gone is dropped, not delivered to a dead object.
        self.destroyed.connect(lambda *_, tasks=tasks, key=self._key: tasks.cancel(key))

    # Loading ---------------------------------------------------------------------------------

    def reload(self) -> None:
        """Forget what is loaded and read the first page again (a late page of before is dropped)."""
        self.beginResetModel()
        self.entries, self.graph, self.exhausted = [], [], False
        self.endResetModel()
        self.loading = False
        self._load_next()

    def canFetchMore(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> bool:  # noqa: N802
        return not parent.isValid() and not self.exhausted and not self.loading

    def fetchMore(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> None:  # noqa: N802
        if self.canFetchMore(parent):
            self._load_next()

    def _load_next(self) -> None:
        self.loading = True
        loaded = [(e.sha, e.parents) for e in self.entries]
        self.tasks.run(self._key, load_history_page, self.repo, loaded, self.path, self.all_refs,
                       self.page_size, GRAPH in self.columns, on_done=self._on_page, on_error=self._on_error,
                       title="Reading the history")

    def _on_page(self, page: HistoryPage) -> None:
        self.loading = False
        self.exhausted = page.exhausted
        old = len(self.entries)
        self.graph = page.graph
        if old and GRAPH in self.columns:
            # The lines leaving the old last rows may now lead into the new page.
            column = self.columns.index(GRAPH)
            self.dataChanged.emit(self.index(0, column), self.index(old - 1, column))
        if page.entries:
            self.beginInsertRows(QModelIndex(), old, old + len(page.entries) - 1)
            self.entries.extend(page.entries)
            self.endInsertRows()
        self.sig_page_loaded.emit(len(self.entries))

    def _on_error(self, error: Exception) -> None:
        self.loading = False
        self.exhausted = True
        self.sig_load_failed.emit(str(error))

    # Qt model --------------------------------------------------------------------------------

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.entries)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return _HEADERS[self.columns[section]]
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or index.row() >= len(self.entries):
            return None
        entry = self.entries[index.row()]
        column = self.columns[index.column()]
        if role == ENTRY_ROLE:
            return entry
        if role == GRAPH_ROLE:
            return self.graph[index.row()] if index.row() < len(self.graph) else None
        if role == REFS_ROLE and column == SUMMARY:
            head_branch = next((r for r in entry.refs if r not in entry.tags), None) if entry.is_head else None
            return entry.refs, entry.tags, head_branch
        if role == Qt.ItemDataRole.DisplayRole:
            return _cell_text(entry, column)
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == SUMMARY:
                refs = f"\n{', '.join(entry.refs)}" if entry.refs else ""
                return f"{entry.summary}{refs}"
            if column == AUTHOR:
                return f"{entry.author} <{entry.email}>"
            if column == SHA:
                return entry.sha
            if column == DATE:
                return entry.date.isoformat()
        if role == Qt.ItemDataRole.FontRole and column == SHA:
            return QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        if role == Qt.ItemDataRole.FontRole and column == SUMMARY and entry.is_head:
            font = QFont()
            font.setBold(True)
            return font
        return None


def _cell_text(entry: CommitEntry, column: str) -> str:
    if column == SUMMARY:
        return entry.summary
    if column == AUTHOR:
        return entry.author
    if column == DATE:
        return entry.date.astimezone().strftime("%Y-%m-%d %H:%M")
    if column == SHA:
        return entry.short_sha
    return ""


class HistoryView(QWidget):
    """The log (of the repository, or of ``path`` across renames) above the selected commit's
    message and changed files. ``window`` provides ``tasks``, ``add_tab`` and ``show_error``."""

    sig_commit_selected = Signal(str)
    """The user selected the commit with this full sha (its details are loading)."""

    def __init__(self, window, repo: Repository, path: str | Path | None = None, *, all_refs: bool | None = None,
                 page_size: int = PAGE_SIZE, parent: QWidget | None = None):
        super().__init__(parent)
        self.window, self.repo = window, repo
        self.path = None if path is None else _repo_relative(repo, path)
        self.details: CommitDetails | None = None
        self._details_key = f"git.history.details.{next(_ids)}"
        self._diff_key = f"git.history.diff.{next(_ids)}"
        if all_refs is None:
            all_refs = self.path is None

        self.model = HistoryModel(repo, window.tasks, self.path, all_refs, page_size, self)
        self.destroyed.connect(lambda *_, tasks=window.tasks, keys=(self._details_key, self._diff_key):
                               [tasks.cancel(key) for key in keys])
        self.model.sig_page_loaded.connect(self._on_page_loaded)
        self.model.sig_load_failed.connect(self._on_load_failed)

        self.all_branches = QCheckBox("All branches")
        self.all_branches.setChecked(all_refs)
        self.all_branches.setToolTip("Show the commits of every branch and tag, not only of HEAD")
        self.all_branches.toggled.connect(self._on_all_branches_toggled)
        self.all_branches.setVisible(self.path is None)
        refresh = QToolButton()
        refresh.setText("Refresh")
        refresh.clicked.connect(self.refresh)
        self.status = QLabel()
        theme.set_themed_style_sheet(self.status, "color: @MUTED_TEXT;")
        title = QLabel(f"History of <b>{self.path}</b>" if self.path is not None else "History")
        bar = QHBoxLayout()
        bar.setContentsMargins(6, 4, 6, 4)
        bar.setSpacing(12)
        bar.addWidget(title)
        bar.addWidget(self.status, 1)
        bar.addWidget(self.all_branches)
        bar.addWidget(refresh)

        self.tree = QTreeView()
        self.tree.setObjectName("history-log")
        self.tree.setRootIsDecorated(False)
        self.tree.setUniformRowHeights(True)
        self.tree.setAllColumnsShowFocus(True)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.setModel(self.model)
        self._summary_delegate = SummaryDelegate(self.tree)
        self.tree.setItemDelegateForColumn(self.model.columns.index(SUMMARY), self._summary_delegate)
        if GRAPH in self.model.columns:
            self._graph_delegate = GraphDelegate(self.tree)
            self.tree.setItemDelegateForColumn(self.model.columns.index(GRAPH), self._graph_delegate)
        header = self.tree.header()
        header.setStretchLastSection(False)
        for position, column in enumerate(self.model.columns):
            mode = QHeaderView.ResizeMode.Stretch if column == SUMMARY else QHeaderView.ResizeMode.Interactive
            header.setSectionResizeMode(position, mode)
        widths = {GRAPH: graph_width(1), AUTHOR: 140, DATE: 130, SHA: 80}
        for column, width in widths.items():
            if column in self.model.columns:
                header.resizeSection(self.model.columns.index(column), width)
        self.tree.selectionModel().currentRowChanged.connect(self._on_current_changed)

        self.message = QTextBrowser()
        self.message.setObjectName("history-message")
        self.message.setOpenLinks(False)
        self.message.setPlaceholderText("Select a commit to see its message and changed files.")
        self.files = QTreeWidget()
        self.files.setObjectName("history-files")
        self.files.setHeaderLabels(["", "Changed file"])
        self.files.setRootIsDecorated(False)
        self.files.header().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.files.setToolTip("Double-click a file to see its changes in this commit")
        self.files.itemActivated.connect(self._on_file_activated)
        lower = QSplitter(Qt.Orientation.Horizontal)
        lower.addWidget(self.message)
        lower.addWidget(self.files)
        lower.setSizes([500, 400])

        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.tree)
        splitter.addWidget(lower)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addLayout(bar)
        layout.addWidget(splitter, 1)
        self.model.reload()

    # Public ----------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Read the history again from the first page (after a commit, a fetch, a checkout)."""
        self.details = None
        self.message.clear()
        self.files.clear()
        self.status.setText("Loading…")
        self.model.reload()

    def select_commit(self, sha: str) -> bool:
        """Select the loaded commit whose sha starts with ``sha``; False if it is not loaded."""
        for row, entry in enumerate(self.model.entries):
            if entry.sha.startswith(sha):
                self.tree.setCurrentIndex(self.model.index(row, self.model.columns.index(SUMMARY)))
                return True
        return False

    def changed_files(self) -> list[ChangedFile]:
        """The files the selected commit changed (empty until its details have loaded)."""
        return list(self.details.files) if self.details else []

    def open_file_diff(self, file: ChangedFile) -> None:
        """Show what the selected commit changed in ``file``: in the diff editor's commit diff
        tab when there is one, else as read-only text in a tab."""
        if self.details is None:
            return
        entry = self.details.entry
        opener = _commit_diff_opener()
        if opener is not None:
            self.window.tasks.run(self._diff_key, _commit_base, self.repo, entry,
                                  on_done=lambda base: self._open_commit_diff(opener, entry, file, base),
                                  on_error=self._show_error, title="Reading the diff")
            return
        self.window.tasks.run(self._diff_key, _commit_file_diff, self.repo, entry, file,
                              on_done=lambda diffs: self._show_diff(entry, file, diffs),
                              on_error=self._show_error, title="Reading the diff")

    # Reactions -------------------------------------------------------------------------------

    def _on_page_loaded(self, count: int) -> None:
        more = "" if self.model.exhausted else "+"
        self.status.setText(f"{count}{more} commit{'s' if count != 1 else ''}")
        if GRAPH in self.model.columns and self.model.graph:
            widest = max(row.width for row in self.model.graph)
            header = self.tree.header()
            column = self.model.columns.index(GRAPH)
            header.resizeSection(column, min(graph_width(widest), 320))
        if count and not self.tree.currentIndex().isValid():
            self.tree.setCurrentIndex(self.model.index(0, self.model.columns.index(SUMMARY)))

    def _on_load_failed(self, message: str) -> None:
        self.status.setText("Could not read the history")
        self._show_error(message)

    def _on_all_branches_toggled(self, checked: bool) -> None:
        self.model.all_refs = checked
        self.refresh()

    def _on_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        entry = current.data(ENTRY_ROLE) if current.isValid() else None
        if entry is None:
            return
        self.sig_commit_selected.emit(entry.sha)
        self.window.tasks.run(self._details_key, commit_details, self.repo, entry.sha,
                              on_done=self._show_details, on_error=self._show_error,
                              title="Reading the commit")

    def _show_details(self, details: CommitDetails) -> None:
        self.details = details
        self.message.setHtml(_details_html(details))
        self.files.clear()
        for file in details.files:
            label = f"{file.old_path} → {file.path}" if file.old_path and file.old_path != file.path else file.path
            item = QTreeWidgetItem([file.status, label])
            item.setData(0, Qt.ItemDataRole.UserRole, file)
            item.setToolTip(0, _STATUS_NAMES.get(file.status, file.status))
            item.setToolTip(1, label)
            if self.path is not None and self.path in (file.path, file.old_path):
                font = item.font(1)
                font.setBold(True)
                item.setFont(1, font)
            self.files.addTopLevelItem(item)

    def _on_file_activated(self, item: QTreeWidgetItem, _column: int) -> None:
        file = item.data(0, Qt.ItemDataRole.UserRole)
        if isinstance(file, ChangedFile):
            self.open_file_diff(file)

    def _open_commit_diff(self, opener, entry: CommitEntry, file: ChangedFile, base: str) -> None:
        try:
            opener(self.window, self.repo, file.path, base, entry.sha)
        except Exception as error:  # noqa: BLE001 (the diff editor's failure is shown, not raised)
            self._show_error(error)

    def _show_diff(self, entry: CommitEntry, file: ChangedFile, payload) -> None:
        base, diffs = payload
        title = f"{Path(file.path).name} @ {entry.short_sha}"
        tooltip = f"{file.path} as changed by {entry.short_sha} “{entry.summary}”"
        opened = _open_in_diff_editor(self.window, self.repo, base, entry.sha, file.path, diffs, title)
        if opened:
            return
        text = QPlainTextEdit()
        text.setReadOnly(True)
        text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        text.setPlainText(diff_text(diffs) or f"{file.path}: no textual changes in {entry.short_sha}.")
        text.setObjectName("history-diff-text")
        text.highlighter = _DiffHighlighter(text.document())
        name_tab_icon(text, "msc.diff")
        self.window.add_tab(text, title, tooltip)

    def _show_error(self, error) -> None:
        self.window.show_error(str(error))


class _DiffHighlighter(QSyntaxHighlighter):
    """Green added lines, red removed lines and blue hunk headers in the read-only diff text."""

    def __init__(self, document):
        super().__init__(document)
        self._formats = {}
        for prefix, foreground, background in (("+", "#1b5e20", "#e6ffed"), ("-", "#b71c1c", "#ffeef0"),
                                               ("@", "#1864ab", "#f1f8ff")):
            text_format = QTextCharFormat()
            text_format.setForeground(QColor(foreground))
            text_format.setBackground(QColor(background))
            self._formats[prefix] = text_format

    def highlightBlock(self, text: str) -> None:  # noqa: N802 (Qt override)
        if text.startswith(("+++", "---")):
            return
        text_format = self._formats.get(text[:1])
        if text_format is not None:
            self.setFormat(0, len(text), text_format)


def _details_html(details: CommitDetails) -> str:
    from html import escape

    entry = details.entry
    rows = [("Commit", f"<code>{entry.sha}</code>"),
            ("Author", escape(f"{entry.author} <{entry.email}>")),
            ("Date", entry.date.astimezone().strftime("%Y-%m-%d %H:%M:%S %z"))]
    if (details.committer, details.committer_email) != (entry.author, entry.email):
        rows.append(("Committer", escape(f"{details.committer} <{details.committer_email}>")))
    if entry.parents:
        rows.append(("Parents", " ".join(f"<code>{p[:7]}</code>" for p in entry.parents)))
    if entry.refs:
        rows.append(("Refs", escape(", ".join(entry.refs))))
    table = "".join(f"<tr><td style='color:#777;padding-right:8px'>{k}</td><td>{v}</td></tr>" for k, v in rows)
    return (f"<table cellspacing=0>{table}</table>"
            f"<pre style='white-space:pre-wrap;font-family:sans-serif'>{escape(details.message)}</pre>")


def _commit_base(repo: Repository, entry: CommitEntry, *, cancel: CancelToken | None = None) -> str:
    """What ``entry`` is compared with: its first parent, or the empty tree for a root commit."""
    from workbench.git.diff import empty_tree

    return entry.parents[0] if entry.parents else empty_tree(repo)


def _commit_diff_opener():
    """The diff editor's ``open_commit_diff_tab(window, repo, path, a, b)``, or None while the
    diff editor has none (the view then falls back to ``open_diff_tab`` or to read-only text)."""
    try:
        # Leave this import here: the diff editor is another widget module, loaded on first use.
        from workbench.git.widgets import diff_view
    except ImportError:
        return None
    return diff_view.open_commit_diff_tab if hasattr(diff_view, "open_commit_diff_tab") else None


def _commit_file_diff(repo: Repository, entry: CommitEntry, file: ChangedFile, *,
                      cancel: CancelToken | None = None):
    """``(base, diffs)``: the first parent (or the empty tree of a root commit) and what
    ``entry`` changed in ``file`` against it."""
    from workbench.git.diff import diff_commits

    base = _commit_base(repo, entry)
    if file.old_path and file.old_path != file.path:
        # A pathspec of the new name alone would show the rename as an added file.
        diffs = [d for d in diff_commits(repo, base, entry.sha, cancel=cancel) if d.path == file.path]
    else:
        diffs = diff_commits(repo, base, entry.sha, file.path, cancel=cancel)
    return base, diffs


def diff_text(diffs) -> str:
    """Unified diff text of FileDiffs, for the read-only fallback view."""
    out: list[str] = []
    for diff in diffs:
        out.append(f"--- {'a/' + diff.old_path if diff.old_path else '/dev/null'}")
        out.append(f"+++ {'/dev/null' if diff.is_deleted else 'b/' + diff.path}")
        if diff.summary:
            out.append(diff.summary)
        for hunk in diff.hunks:
            out.append(hunk.header)
            for line in hunk.lines:
                out.append(f"{line.kind}{line.text.rstrip(chr(13))}")
    return "\n".join(out)


def _open_in_diff_editor(window, repo: Repository, base: str, sha: str, path: str, diffs, title: str) -> bool:
    """Open the diff in the Source Control diff editor when it is installed; False otherwise.
    ``open_diff_tab`` is called with the arguments its signature names among those known here."""
    try:
        # Leave this import here: the diff editor is another widget module, loaded on first use.
        from workbench.git.widgets import diff_view
    except ImportError:
        return False
    opener = getattr(diff_view, "open_diff_tab", None)
    if opener is None:
        return False
    known = {"window": window, "repo": repo, "repository": repo, "diffs": diffs, "diff": diffs[0] if diffs else None,
             "file_diff": diffs[0] if diffs else None, "a": base, "b": sha, "base": base, "old": base,
             "target": sha, "new": sha, "rev": sha, "sha": sha, "path": path, "title": title}
    try:
        parameters = inspect.signature(opener).parameters
    except (TypeError, ValueError):
        return False
    arguments = {}
    for name, parameter in parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if name in known:
            arguments[name] = known[name]
        elif parameter.default is parameter.empty:
            return False  # an argument this view cannot supply
    positional = [arguments.pop(name) for name, parameter in parameters.items()
                  if parameter.kind is parameter.POSITIONAL_ONLY and name in arguments]
    opener(*positional, **arguments)
    return True


def _repo_relative(repo: Repository, path: str | Path) -> str:
    candidate = Path(path)
    if candidate.is_absolute():
        try:
            return candidate.resolve().relative_to(repo.root.resolve()).as_posix()
        except ValueError:
            return str(candidate)
    return candidate.as_posix()

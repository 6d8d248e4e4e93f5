"""The stash list: a collapsible section under the changed files.

Stash (with a message, untracked files optionally), apply, pop, drop (asks first), and show an
entry's changes as a read-only diff tab.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFontDatabase, QSyntaxHighlighter, QTextCharFormat
from PySide6.QtWidgets import (
    QHBoxLayout,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.git.widgets import dialogs
from workbench.git.widgets.session import GitSession
from workbench.qt.icons import name_tab_icon

INDEX_ROLE = Qt.ItemDataRole.UserRole


class StashPanel(QWidget):
    """Stash entries of the session's repository, newest first."""

    def __init__(self, session: GitSession, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.window = session.window
        self.entries: list = []

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        header = QHBoxLayout()
        self.toggle = QToolButton()
        self.toggle.setCheckable(True)
        self.toggle.setChecked(False)
        self.toggle.setAutoRaise(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.toggle.toggled.connect(self._on_toggled)
        header.addWidget(self.toggle, 1)
        self.buttons: dict[str, QToolButton] = {}
        for name, text, tip, slot in (
            ("stash", "Stash…", "Stash the local changes…", lambda: self.stash()),
            ("apply", "Apply", "Bring the selected entry's changes back, keep the entry", lambda: self.apply()),
            ("pop", "Pop", "Bring the selected entry's changes back and drop it", lambda: self.pop()),
            ("drop", "Drop", "Throw the selected entry away…", lambda: self.drop()),
            ("show", "Show", "Show the selected entry's changes", lambda: self.show_entry()),
        ):
            button = QToolButton()
            button.setText(text)
            button.setToolTip(tip)
            button.setAutoRaise(True)
            button.clicked.connect(slot)
            header.addWidget(button)
            self.buttons[name] = button
        layout.addLayout(header)

        self.list = QListWidget()
        self.list.setMaximumHeight(140)
        self.list.itemDoubleClicked.connect(lambda item: self.show_entry(item.data(INDEX_ROLE)))
        self.list.currentRowChanged.connect(lambda _row: self._update_buttons())
        layout.addWidget(self.list)
        self.list.setVisible(False)

        session.sig_repository_changed.connect(self.reload)
        self._update_title()
        self._update_buttons()

    def _on_toggled(self, expanded: bool) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if expanded else Qt.ArrowType.RightArrow)
        self.list.setVisible(expanded)

    def expand(self) -> None:
        self.toggle.setChecked(True)

    def _update_title(self) -> None:
        self.toggle.setText(f"Stashes ({len(self.entries)})")

    def _update_buttons(self) -> None:
        has_repo = self.session.repo is not None
        selected = self.list.currentItem() is not None
        self.buttons["stash"].setEnabled(has_repo)
        for name in ("apply", "pop", "drop", "show"):
            self.buttons[name].setEnabled(has_repo and selected)

    def reload(self) -> None:
        """Read the stash list again (off the GUI thread)."""
        from workbench.git.stash import list_stashes

        if self.session.repo is None:
            self._show([])
            return
        self.session.query("stashes", list_stashes, on_done=self._show)

    def _show(self, entries) -> None:
        selected = self.selected_index()
        self.entries = list(entries)
        self.list.clear()
        for entry in self.entries:
            where = f" ({entry.branch})" if entry.branch else ""
            item = QListWidgetItem(f"stash@{{{entry.index}}}  {entry.message}{where}")
            item.setData(INDEX_ROLE, entry.index)
            item.setToolTip(entry.sha)
            self.list.addItem(item)
        if self.entries:
            self.list.setCurrentRow(min(selected or 0, len(self.entries) - 1))
        self._update_title()
        self._update_buttons()

    def selected_index(self) -> int | None:
        item = self.list.currentItem()
        return item.data(INDEX_ROLE) if item is not None else None

    # --- actions ------------------------------------------------------------------------------

    def stash(self, message: str | None = None, include_untracked: bool | None = None):
        """Stash the local changes; asks for the message (and whether to include untracked files)
        when not given."""
        from workbench.git.stash import push_stash

        if message is None:
            message = dialogs.ask_optional_text(self.window, "Stash", "Message for the stash (optional):")
            if message is None:
                return None
        if include_untracked is None:
            answer = dialogs.ask_choice(self.window, "Stash", "Stash which changes?",
                                        ["Tracked files only", "Include untracked files"])
            if answer is None:
                return None
            include_untracked = answer.startswith("Include")
        return self.session.run("stash", push_stash, message or None, include_untracked=include_untracked,
                                on_done=lambda _entry: self.reload(), title="Stashing")

    def apply(self, index: int | None = None):
        from workbench.git.stash import apply_stash

        index = self._index(index)
        if index is None:
            return None
        return self.session.run("stashApply", apply_stash, index, on_done=lambda _r: self.reload(),
                                title=f"Applying stash@{{{index}}}")

    def pop(self, index: int | None = None):
        from workbench.git.stash import pop_stash

        index = self._index(index)
        if index is None:
            return None
        return self.session.run("stashPop", pop_stash, index, on_done=lambda _r: self.reload(),
                                on_error=lambda _e: self.reload(), title=f"Popping stash@{{{index}}}")

    def drop(self, index: int | None = None):
        from workbench.git.stash import drop_stash

        index = self._index(index)
        if index is None:
            return None
        entry = next((e for e in self.entries if e.index == index), None)
        what = f"stash@{{{index}}}" + (f" ({entry.message})" if entry else "")
        if not self.session.confirm(f"Drop {what}? Its changes are thrown away."):
            return None
        return self.session.run("stashDrop", drop_stash, index, refresh=False, on_done=lambda _r: self.reload(),
                                title=f"Dropping stash@{{{index}}}")

    def show_entry(self, index: int | None = None) -> None:
        """Open the entry's changes as a read-only diff in a tab."""
        from workbench.git.stash import stash_diff

        index = self._index(index)
        if index is None:
            return
        self.session.query(f"stashShow{index}", stash_diff, index,
                           on_done=lambda text, i=index: self._open_diff_tab(i, text))

    def _open_diff_tab(self, index: int, text: str) -> QPlainTextEdit:
        view = QPlainTextEdit()
        view.setObjectName("git-stash-diff")
        view.setReadOnly(True)
        view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        view.setPlainText(text or "(no changes)")
        view.highlighter = DiffHighlighter(view.document())
        entry = next((e for e in self.entries if e.index == index), None)
        title = f"stash@{{{index}}}"
        name_tab_icon(view, "msc.git-stash")
        self.window.add_tab(view, title, f"{title}: {entry.message}" if entry else title)
        return view

    def _index(self, index: int | None) -> int | None:
        if index is not None:
            return index
        selected = self.selected_index()
        if selected is None and self.entries:
            return self.entries[0].index
        return selected


class DiffHighlighter(QSyntaxHighlighter):
    """Colours the added, removed and hunk-header lines of a unified diff."""

    def __init__(self, document):
        super().__init__(document)
        self._formats = {}
        for prefix, colour in (("+", "#2e7d32"), ("-", "#c62828"), ("@", "#6a1b9a"), ("header", "#555555")):
            text_format = QTextCharFormat()
            text_format.setForeground(QColor(colour))
            self._formats[prefix] = text_format

    def highlightBlock(self, text: str) -> None:
        if text.startswith(("+++", "---", "diff ", "index ")):
            self.setFormat(0, len(text), self._formats["header"])
        elif text[:1] in self._formats:
            self.setFormat(0, len(text), self._formats[text[:1]])

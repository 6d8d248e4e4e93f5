"""The Source Control panel: commit message, changed files by group, sync, and the banner of a
merge or rebase in progress. A folder that is not a repository shows "Initialise Repository".

The panel only shows and asks: every Git operation goes through the ``GitSession``.
"""

from __future__ import annotations

from PySide6.QtCore import QItemSelectionModel, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QKeyEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QStackedWidget,
    QToolButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.git.widgets.session import GitSession
from workbench.qt import theme

# The groups in the order VS Code shows them; the kinds are workbench.git.status's.
GROUPS = (("conflicted", "Merge Conflicts"), ("staged", "Staged Changes"), ("unstaged", "Changes"),
          ("untracked", "Untracked"))
RESOLVE_CONFLICTS = "git.resolveConflicts"  # registered by the conflict view's installer
MAX_FILES_PER_GROUP = 2000  # more is unreadable in a list, and slow to build
MAX_BRANCH_LABEL_PX = 220  # a longer branch name is elided in the middle: the dock never widens
BUSY_LABEL_DELAY_MS = 250  # a quick status refresh does not flash "Working…"

STATE_COLOURS = {"M": "#c08000", "T": "#c08000", "A": "#2e8b2e", "?": "#2e8b2e", "D": "#c03030",
                 "R": "#2a6fb0", "C": "#2a6fb0", "U": "#9b30b0"}
STATE_NAMES = {"M": "Modified", "T": "Type changed", "A": "Added", "?": "Untracked", "D": "Deleted",
               "R": "Renamed", "C": "Copied", "U": "Conflict"}

KIND_ROLE = Qt.ItemDataRole.UserRole
PATH_ROLE = Qt.ItemDataRole.UserRole + 1
COLUMN_NAME, COLUMN_STATE, COLUMN_ACTION = 0, 1, 2


class CommitMessageEdit(QPlainTextEdit):
    """The commit message; Ctrl+Enter commits."""

    sig_commit_requested = Signal()
    """Ctrl+Enter (or Ctrl+Return) was pressed."""

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if (event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
                and event.modifiers() & Qt.KeyboardModifier.ControlModifier):
            self.sig_commit_requested.emit()
            return
        super().keyPressEvent(event)


class SourceControlPanel(QWidget):
    """The Source Control dock's widget."""

    def __init__(self, session: GitSession, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.window = session.window
        self._amend_prefill: str | None = None
        self._collapsed: set[str] = set()
        self._shown_status = None
        self._busy_timer = QTimer(self)
        self._busy_timer.setSingleShot(True)
        self._busy_timer.setInterval(BUSY_LABEL_DELAY_MS)
        self._busy_timer.timeout.connect(self._show_busy)

        self.pages = QStackedWidget()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.pages)

        self.loading_page = QLabel("Looking for a Git repository…")
        self.loading_page.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.pages.addWidget(self.loading_page)
        self.pages.addWidget(self._build_init_page())
        self.pages.addWidget(self._build_repo_page())

        session.sig_repository_changed.connect(self._on_repository_changed)
        session.sig_status_changed.connect(self._on_status_changed)
        session.sig_operations_changed.connect(lambda: self._on_busy_changed(self.session.busy))
        session.sig_refreshing_changed.connect(lambda _refreshing: self._update_busy_label())
        self._on_repository_changed()

    # --- building -----------------------------------------------------------------------------

    def _build_init_page(self) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        text = QLabel("This folder is not a Git repository.\n\nInitialise one to track changes to its "
                      "files, commit them and share them.")
        text.setWordWrap(True)
        text.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.init_button = QPushButton("Initialise Repository")
        self.init_button.clicked.connect(self.session.init_repository)
        layout.addStretch(1)
        layout.addWidget(text)
        layout.addWidget(self.init_button, 0, Qt.AlignmentFlag.AlignHCenter)
        layout.addStretch(2)
        return page

    def _build_repo_page(self) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.setSpacing(6)

        self.banner = QFrame()
        self.banner.setObjectName("git-banner")
        theme.set_themed_style_sheet(self.banner, "#git-banner { background: @WARNING_BACKGROUND;"
                                                  " border: 1px solid @WARNING_BORDER; border-radius: 3px; }")
        banner_layout = QVBoxLayout(self.banner)
        banner_layout.setContentsMargins(6, 6, 6, 6)
        self.banner_label = QLabel()
        self.banner_label.setWordWrap(True)
        self.abort_button = QPushButton("Abort")
        self.abort_button.clicked.connect(self.abort_operation)
        self.continue_button = QPushButton("Continue")
        self.continue_button.clicked.connect(self.continue_operation)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.abort_button)
        buttons.addWidget(self.continue_button)
        banner_layout.addWidget(self.banner_label)
        banner_layout.addLayout(buttons)
        self.banner.hide()
        layout.addWidget(self.banner)

        top = QHBoxLayout()
        self.branch_label = QLabel()
        self.branch_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # Its width follows the dock, never the other way round.
        self.branch_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.branch_label.setMinimumWidth(20)
        self.busy_label = QLabel("Working…")
        theme.set_themed_style_sheet(self.busy_label, "color: @MUTED_TEXT;")
        self.busy_label.hide()
        self.sync_button = QToolButton()
        self.sync_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.sync_button.setToolTip("Sync: pull the remote's commits, then push yours")
        self.sync_button.clicked.connect(self.sync)
        self.refresh_button = QToolButton()
        self.refresh_button.setText("↻")
        self.refresh_button.setToolTip("Refresh")
        self.refresh_button.clicked.connect(lambda: self.session.refresh(force=True))
        top.addWidget(self.branch_label, 1)
        top.addWidget(self.busy_label)
        top.addWidget(self.sync_button)
        top.addWidget(self.refresh_button)
        layout.addLayout(top)

        self.message = CommitMessageEdit()
        self.message.setPlaceholderText("Message (Ctrl+Enter to commit)")
        self.message.setMaximumHeight(90)
        self.message.setTabChangesFocus(True)
        self.message.sig_commit_requested.connect(self.commit)
        layout.addWidget(self.message)

        options = QHBoxLayout()
        self.amend_box = QCheckBox("Amend")
        self.amend_box.setToolTip("Replace the last commit (its message is filled in)")
        self.amend_box.toggled.connect(self._on_amend_toggled)
        self.signoff_box = QCheckBox("Sign-off")
        self.signoff_box.setToolTip("Add a Signed-off-by line with your name")
        self.commit_button = QPushButton("Commit")
        self.commit_button.setToolTip("Commit the staged changes (Ctrl+Enter)")
        self.commit_button.clicked.connect(self.commit)
        options.addWidget(self.amend_box)
        options.addWidget(self.signoff_box)
        options.addStretch(1)
        options.addWidget(self.commit_button)
        layout.addLayout(options)

        self.files = QTreeWidget()
        self.files.setColumnCount(3)
        self.files.setHeaderHidden(True)
        self.files.setRootIsDecorated(True)
        self.files.setUniformRowHeights(True)
        self.files.setSelectionMode(QTreeWidget.SelectionMode.ExtendedSelection)
        self.files.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        header = self.files.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(COLUMN_NAME, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(COLUMN_STATE, QHeaderView.ResizeMode.Fixed)
        header.setSectionResizeMode(COLUMN_ACTION, QHeaderView.ResizeMode.Fixed)
        header.resizeSection(COLUMN_STATE, 22)
        header.resizeSection(COLUMN_ACTION, 26)
        self.files.itemClicked.connect(self._on_item_clicked)
        self.files.itemDoubleClicked.connect(self._on_item_double_clicked)
        self.files.itemExpanded.connect(lambda item: self._collapsed.discard(item.data(0, KIND_ROLE)))
        self.files.itemCollapsed.connect(lambda item: self._collapsed.add(item.data(0, KIND_ROLE)))
        self.files.customContextMenuRequested.connect(self._show_context_menu)
        layout.addWidget(self.files, 1)

        self.empty_label = QLabel("No changes: the working tree matches the last commit.")
        self.empty_label.setWordWrap(True)
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop)
        theme.set_themed_style_sheet(self.empty_label, "color: @MUTED_TEXT; padding-top: 12px;")
        self.empty_label.hide()
        layout.addWidget(self.empty_label, 1)

        self.stash_slot = QVBoxLayout()
        self.stash_slot.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(self.stash_slot)
        return page

    def add_section(self, widget: QWidget) -> None:
        """Put another section (the stash list) under the files."""
        self.stash_slot.addWidget(widget)

    # --- repository and status ----------------------------------------------------------------

    def _on_repository_changed(self) -> None:
        if not self.session.opened:
            self.pages.setCurrentIndex(0)
        elif self.session.repo is None:
            self.pages.setCurrentIndex(1)
        else:
            self.pages.setCurrentIndex(2)
            self.files.clear()
            self._shown_status = None
            self.branch_label.setText("")
            self._update_sync(None)

    def _on_status_changed(self, status) -> None:
        self._update_branch(status)
        self._update_sync(status)
        self._update_banner(self.session.state)
        if status != self._shown_status:  # a periodic refresh that found nothing new keeps the list
            self._shown_status = status
            self._fill_files(status)
        else:
            self._update_commit_button()

    def _update_branch(self, status) -> None:
        from html import escape

        branch = self._elided(status.branch or "HEAD")
        if status.head is None:
            text = f"<b>{escape(branch)}</b> (no commits yet)"
        elif status.branch is None:
            text = f"HEAD detached at <b>{status.head[:8]}</b>"
        else:
            text = f"<b>{escape(branch)}</b>"
            if status.upstream:
                text += (f" → {escape(self._elided(status.upstream))}"
                         + (" (gone)" if status.upstream_gone else ""))
        self.branch_label.setText(text)
        self.branch_label.setToolTip(
            (status.branch or "detached HEAD") + (f" → {status.upstream}" if status.upstream else ""))
        self.message.setPlaceholderText(
            f"Message (Ctrl+Enter to commit on {status.branch or 'detached HEAD'})")
        self.message.viewport().update()

    def _elided(self, name: str) -> str:
        return self.branch_label.fontMetrics().elidedText(name, Qt.TextElideMode.ElideMiddle, MAX_BRANCH_LABEL_PX)

    def _update_sync(self, status) -> None:
        if status is None or not status.upstream:
            self.sync_button.setText("Publish" if status is not None and status.branch else "Sync")
            self.sync_button.setToolTip("Push this branch to the remote (it becomes its upstream)")
        else:
            self.sync_button.setText(f"⟳ {status.behind}↓ {status.ahead}↑")
            self.sync_button.setToolTip(f"Sync with {status.upstream}: pull {status.behind} commit(s), "
                                        f"then push {status.ahead} commit(s)")
        self.sync_button.setEnabled(status is not None and status.branch is not None and not self.session.busy)

    def _update_banner(self, state) -> None:
        if state is None or not state.in_progress:
            self.banner.hide()
            return
        from workbench.git.repo_state import RepoStateKind

        self.banner_label.setText(state.message)
        self.continue_button.setVisible(state.kind is not RepoStateKind.BISECTING)
        self.continue_button.setText("Commit Merge" if state.kind is RepoStateKind.MERGING else "Continue")
        self.continue_button.setEnabled(state.conflicts_left == 0)
        self.abort_button.setVisible(state.kind is not RepoStateKind.BISECTING)
        self.banner.show()
        if state.kind is RepoStateKind.MERGING and not self.message.toPlainText().strip():
            merge_message = self.session.repo.git_dir / "MERGE_MSG"
            if merge_message.is_file():
                lines = merge_message.read_text(encoding="utf-8", errors="replace").splitlines()
                self.message.setPlainText("\n".join(line for line in lines if not line.startswith("#")).strip())

    def _fill_files(self, status) -> None:
        selected = {(item.data(0, KIND_ROLE), item.data(0, PATH_ROLE)) for item in self.files.selectedItems()}
        current = self.files.currentItem()
        current_key = (current.data(0, KIND_ROLE), current.data(0, PATH_ROLE)) if current else None
        self.files.setUpdatesEnabled(False)
        self.files.clear()
        groups = {"conflicted": status.conflicted, "staged": status.staged, "unstaged": status.unstaged,
                  "untracked": status.untracked}
        for kind, title in GROUPS:
            changes = groups[kind]
            if not changes:
                continue
            group = QTreeWidgetItem([f"{title}  ({len(changes)})", "", "−" if kind == "staged" else "+"])
            group.setData(0, KIND_ROLE, kind)
            font = group.font(0)
            font.setBold(True)
            group.setFont(0, font)
            group.setToolTip(COLUMN_ACTION, "Unstage all" if kind == "staged" else
                             ("Mark all resolved" if kind == "conflicted" else "Stage all"))
            group.setFlags(group.flags() & ~Qt.ItemFlag.ItemIsSelectable)
            self.files.addTopLevelItem(group)
            for change in changes[:MAX_FILES_PER_GROUP]:
                group.addChild(self._file_item(change))
            if len(changes) > MAX_FILES_PER_GROUP:
                more = QTreeWidgetItem([f"… and {len(changes) - MAX_FILES_PER_GROUP} more"])
                more.setFlags(Qt.ItemFlag.NoItemFlags)
                group.addChild(more)
            group.setExpanded(kind not in self._collapsed)
        self._restore_selection(selected, current_key)
        self.files.setUpdatesEnabled(True)
        self.files.setVisible(not status.is_clean)
        self.empty_label.setVisible(status.is_clean)
        self._update_commit_button()

    def _update_commit_button(self) -> None:
        status, state = self.session.status, self.session.state
        # Changes but nothing staged: Commit offers to stage them all.
        can_commit = (status is not None and not status.conflicted
                      and (not status.is_clean or self.amend_box.isChecked() or bool(state and state.in_progress)))
        self.commit_button.setEnabled(can_commit and not self.session.busy)
        # Locked while a push, pull, fetch or sync runs: amending the commit being pushed would
        # make the branch diverge.
        locked = self.session.remote_busy
        self.message.setEnabled(not locked)
        self.amend_box.setEnabled(not locked)
        self.signoff_box.setEnabled(not locked)

    def _file_item(self, change) -> QTreeWidgetItem:
        name = change.path.rsplit("/", 1)[-1]
        folder = change.path.rsplit("/", 1)[0] if "/" in change.path else ""
        if change.kind == "staged":
            letter = change.index_state
        elif change.kind == "unstaged":
            letter = change.worktree_state
        elif change.kind == "untracked":
            letter = "?"
        else:
            letter = "U"
        label = f"{name}   {folder}" if folder else name
        if change.orig_path:
            label += f"  ← {change.orig_path}"
        item = QTreeWidgetItem([label, letter, "−" if change.kind == "staged" else "+"])
        item.setData(0, KIND_ROLE, change.kind)
        item.setData(0, PATH_ROLE, change.path)
        colour = QColor(STATE_COLOURS.get(letter, "#555"))
        item.setForeground(COLUMN_STATE, colour)
        item.setTextAlignment(COLUMN_STATE, Qt.AlignmentFlag.AlignCenter)
        item.setTextAlignment(COLUMN_ACTION, Qt.AlignmentFlag.AlignCenter)
        description = change.conflict_kind or STATE_NAMES.get(letter, letter)
        item.setToolTip(COLUMN_NAME, f"{change.path} — {description}")
        item.setToolTip(COLUMN_STATE, description)
        item.setToolTip(COLUMN_ACTION, {"staged": "Unstage", "conflicted": "Mark resolved"}.get(change.kind, "Stage"))
        return item

    def _restore_selection(self, selected: set, current_key) -> None:
        for item in self._file_items():
            key = (item.data(0, KIND_ROLE), item.data(0, PATH_ROLE))
            if key == current_key:
                self.files.setCurrentItem(item, 0, QItemSelectionModel.SelectionFlag.NoUpdate)
            if key in selected:
                item.setSelected(True)

    def _file_items(self) -> list[QTreeWidgetItem]:
        items = []
        for i in range(self.files.topLevelItemCount()):
            group = self.files.topLevelItem(i)
            items += [group.child(j) for j in range(group.childCount()) if group.child(j).data(0, PATH_ROLE)]
        return items

    def file_item(self, path: str, kind: str) -> QTreeWidgetItem | None:
        """The row of ``path`` in group ``kind`` ("staged", "unstaged", "untracked", "conflicted")."""
        for item in self._file_items():
            if item.data(0, PATH_ROLE) == path and item.data(0, KIND_ROLE) == kind:
                return item
        return None

    def group_paths(self, kind: str) -> list[str]:
        """The paths listed in group ``kind``, in order."""
        return [item.data(0, PATH_ROLE) for item in self._file_items() if item.data(0, KIND_ROLE) == kind]

    def _on_busy_changed(self, busy: bool) -> None:
        self._update_sync(self.session.status)
        self._update_commit_button()
        self._update_busy_label()

    def _update_busy_label(self) -> None:
        """"Working…" at once for an operation, after a short delay for a status refresh."""
        if self.session.busy:
            self._busy_timer.stop()
            self._show_busy()
        elif self.session.refreshing:
            if not self.busy_label.isVisibleTo(self) and not self._busy_timer.isActive():
                self._busy_timer.start()
        else:
            self._busy_timer.stop()
            self.busy_label.hide()

    def _show_busy(self) -> None:
        if self.session.busy or self.session.refreshing:
            self.busy_label.setToolTip("A Git operation is running" if self.session.busy
                                       else "Reading the status")
            self.busy_label.show()

    # --- clicks and menus ---------------------------------------------------------------------

    def _on_item_clicked(self, item: QTreeWidgetItem, column: int) -> None:
        kind, path = item.data(0, KIND_ROLE), item.data(0, PATH_ROLE)
        if kind is None:
            return
        if column == COLUMN_ACTION:
            paths = [path] if path else [c.path for c in self._changes_of(kind)]
            self.toggle_stage(kind, paths)
        elif path:
            self.open_diff(kind, path)

    def _on_item_double_clicked(self, item: QTreeWidgetItem, column: int) -> None:
        kind, path = item.data(0, KIND_ROLE), item.data(0, PATH_ROLE)
        if path and column != COLUMN_ACTION:  # the click on the button already did it
            self.toggle_stage(kind, [path])

    def _changes_of(self, kind: str):
        status = self.session.status
        return getattr(status, kind) if status is not None else []

    def _selected(self) -> list[tuple[str, str]]:
        return [(item.data(0, KIND_ROLE), item.data(0, PATH_ROLE)) for item in self.files.selectedItems()
                if item.data(0, PATH_ROLE)]

    def _show_context_menu(self, position) -> None:
        item = self.files.itemAt(position)
        if item is not None and item.data(0, PATH_ROLE) and not item.isSelected():
            self.files.clearSelection()
            item.setSelected(True)
        menu = self.context_menu()
        if menu.actions():
            menu.popup(self.files.viewport().mapToGlobal(position))

    def context_menu(self) -> QMenu:
        """The menu for the selected files (Stage, Unstage, Discard…, Open File, Open Diff)."""
        selected = self._selected()
        menu = QMenu(self)
        if not selected:
            return menu
        unstaged = [path for kind, path in selected if kind in ("unstaged", "untracked", "conflicted")]
        staged = [path for kind, path in selected if kind == "staged"]
        discardable = [path for kind, path in selected if kind in ("unstaged", "untracked")]
        stage = menu.addAction("Stage", lambda: self.stage(unstaged))
        stage.setEnabled(bool(unstaged))
        unstage = menu.addAction("Unstage", lambda: self.unstage(staged))
        unstage.setEnabled(bool(staged))
        discard = menu.addAction("Discard Changes…", lambda: self.discard(discardable))
        discard.setEnabled(bool(discardable))
        menu.addSeparator()
        first_kind, first_path = selected[0]
        menu.addAction("Open File", lambda: self.window.open_file(self.session.repo.root / first_path))
        diff = menu.addAction("Open Diff", lambda: self.open_diff(first_kind, first_path))
        diff.setEnabled(first_kind != "conflicted")
        return menu

    # --- actions ------------------------------------------------------------------------------

    def toggle_stage(self, kind: str, paths: list[str]):
        if kind == "staged":
            return self.unstage(paths)
        if kind == "conflicted":
            return self.mark_resolved(paths)
        return self.stage(paths)

    def stage(self, paths: list[str]):
        from workbench.git.staging import stage_paths

        if paths:
            return self.session.run("stage", stage_paths, list(paths), paths=paths)

    def unstage(self, paths: list[str]):
        from workbench.git.staging import unstage_paths

        if paths:
            return self.session.run("unstage", unstage_paths, list(paths), paths=paths)

    def mark_resolved(self, paths: list[str]):
        from workbench.git.conflicts import mark_resolved

        if paths:
            return self.session.run("resolve", mark_resolved, list(paths))

    def discard(self, paths: list[str]):
        from workbench.git.staging import discard_paths

        if not paths:
            return None
        what = paths[0] if len(paths) == 1 else f"{len(paths)} files"
        if not self.session.confirm(f"Discard the changes to {what}? Changed files go back to their staged "
                                    f"content; new files are moved to .workbench/trash."):
            return None
        return self.session.run("discard", discard_paths, list(paths), paths=paths)

    def open_diff(self, kind: str, path: str) -> None:
        """Show the diff of ``path``: its unstaged changes, or its staged ones."""
        if kind == "conflicted":
            self.open_conflict(path)
            return
        from workbench.git.diff import INDEX_VS_HEAD, WORKTREE_VS_INDEX

        try:
            from workbench.git.widgets.diff_view import open_diff_tab
        except ImportError as exc:
            self.window.show_error(f"The diff view is not available ({exc}).")
            return
        open_diff_tab(self.window, self.session.repo, path, INDEX_VS_HEAD if kind == "staged" else WORKTREE_VS_INDEX)

    def open_conflict(self, path: str) -> None:
        """Show the conflicts of ``path`` in the conflict view (the editor when there is none)."""
        if RESOLVE_CONFLICTS in self.window.commands:
            view = self.window.commands.execute(RESOLVE_CONFLICTS)
            if view is not None and hasattr(view, "select_file"):
                view.select_file(path)
                return
        self.window.open_file(self.session.repo.root / path)

    def commit(self):
        """Commit the staged changes with the message in the box (amend/sign-off as ticked).
        With nothing staged but changes in the tree, offers to stage them all first."""
        message = self.message.toPlainText()
        amend = self.amend_box.isChecked()
        function = self.session.commit_function(amend)
        if function is None:
            return None

        def done(_info) -> None:
            if self.message.toPlainText() == message:
                self.message.clear()
            self._amend_prefill = None
            self.amend_box.setChecked(False)
            self.window.statusBar().showMessage(f"Committed: {_info.summary}", 5000)

        return self.session.run("commit", function, message, amend=amend,
                                sign_off=self.signoff_box.isChecked(), on_done=done, title="Committing")

    def _on_amend_toggled(self, checked: bool) -> None:
        from workbench.git.commits import last_commit_message

        if checked:
            if not self.message.toPlainText().strip():
                def fill(text: str) -> None:
                    if self.amend_box.isChecked() and not self.message.toPlainText().strip():
                        self._amend_prefill = text
                        self.message.setPlainText(text)

                self.session.query("lastMessage", last_commit_message, on_done=fill)
        elif self._amend_prefill is not None and self.message.toPlainText() == self._amend_prefill:
            self.message.clear()
            self._amend_prefill = None
        self.commit_button.setText("Amend Commit" if checked else "Commit")
        self._update_commit_button()

    def sync(self, rebase: bool | None = None):
        """Pull then push (only push on a branch's first publish). A diverged branch with no
        pull.rebase setting asks whether to merge or rebase."""
        status = self.session.status
        has_upstream = bool(status and status.upstream and not status.upstream_gone)
        if has_upstream and rebase is None:
            go, rebase = self.session.ask_pull_rebase()
            if not go:
                return None
        return self.session.run("sync", sync, has_upstream, rebase=rebase, title="Syncing",
                                on_error=lambda _error: self.session.show_pull_conflicts("Syncing"))

    def abort_operation(self):
        from workbench.git import conflicts
        from workbench.git.repo_state import RepoStateKind

        state = self.session.state
        if state is None or not state.in_progress:
            return None
        abort = {RepoStateKind.MERGING: conflicts.abort_merge, RepoStateKind.REBASING: conflicts.abort_rebase,
                 RepoStateKind.APPLYING_PATCHES: conflicts.abort_rebase,
                 RepoStateKind.CHERRY_PICKING: conflicts.abort_cherry_pick,
                 RepoStateKind.REVERTING: conflicts.abort_revert}.get(state.kind)
        if abort is None:
            return None
        if not self.session.confirm(f"{state.message}\n\nAbort it and go back to where you were? "
                                    "The changes made while resolving are lost."):
            return None
        return self.session.run("abort", abort, title="Aborting")

    def continue_operation(self):
        from workbench.git import conflicts
        from workbench.git.repo_state import RepoStateKind

        state = self.session.state
        if state is None or not state.in_progress:
            return None
        if state.kind in (RepoStateKind.MERGING, RepoStateKind.REVERTING):
            return self.commit()
        action = {RepoStateKind.REBASING: conflicts.continue_rebase,
                  RepoStateKind.APPLYING_PATCHES: conflicts.continue_rebase,
                  RepoStateKind.CHERRY_PICKING: conflicts.continue_cherry_pick}.get(state.kind)
        return self.session.run("continue", action, title="Continuing") if action else None


def sync(repo, has_upstream: bool, rebase: bool | None = None, progress=None, cancel=None):
    """Pull the upstream's commits (merged or rebased as ``rebase`` says, else as the config
    says), then push ours (a branch without upstream is only pushed, which sets its upstream)."""
    from workbench.git.remotes import pull, push

    if has_upstream:
        pull(repo, rebase=rebase, progress=progress, cancel=cancel)
    return push(repo, progress=progress, cancel=cancel)


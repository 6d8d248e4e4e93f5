"""Resolving the conflicts a merge, rebase, cherry-pick, revert or stash apply left: the conflicted
files, the hunks of the selected one side by side (ours | base | theirs), and a button for each
way out.

Every action runs off the GUI thread; afterwards the view reads the conflicts again and tells
the window ``git.index_changed`` so the Source Control panel follows.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase, QFontMetrics
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from workbench.git import conflicts
from workbench.git.conflicts import ConflictedFile, ConflictHunk
from workbench.git.errors import GitError
from workbench.git.repo_state import RepoState, RepoStateKind, repository_state
from workbench.git.repository import Repository
from workbench.qt import theme

INDEX_CHANGED = "git.index_changed"
_ids = itertools.count(1)
STASH_CONFLICTS = ("Conflicts from applying a stash: resolve them and mark them resolved "
                   "(the stash entry was kept).")

_ABORTS = {
    RepoStateKind.MERGING: ("Abort Merge", conflicts.abort_merge),
    RepoStateKind.REBASING: ("Abort Rebase", conflicts.abort_rebase),
    RepoStateKind.APPLYING_PATCHES: ("Abort Rebase", conflicts.abort_rebase),
    RepoStateKind.CHERRY_PICKING: ("Abort Cherry-pick", conflicts.abort_cherry_pick),
    RepoStateKind.REVERTING: ("Abort Revert", conflicts.abort_revert),
}


@dataclass
class ConflictSnapshot:
    """What the view shows, read in one go off the GUI thread."""

    state: RepoState
    files: list[ConflictedFile]
    selected: str | None
    hunks: list[ConflictHunk] = field(default_factory=list)
    hunks_error: str = ""  # why the selected file's hunks cannot be shown (deleted on one side …)


def read_conflicts(repo: Repository, selected: str | None) -> ConflictSnapshot:
    """The repository's state, its conflicted files and the hunks of ``selected`` (or of the
    first conflicted file when ``selected`` no longer has conflicts)."""
    files = conflicts.conflicted_files(repo)
    paths = [item.path for item in files]
    if selected not in paths:
        selected = paths[0] if paths else None
    snapshot = ConflictSnapshot(state=repository_state(repo), files=files, selected=selected)
    if selected is not None:
        try:
            # git pull labels their side with the fetched commit's full id: name it instead.
            snapshot.hunks = conflicts.with_readable_labels(repo, conflicts.file_conflicts(repo, selected))
        except GitError as error:
            snapshot.hunks_error = str(error)
    return snapshot


def conflicts_left_text(count: int) -> str:
    """"3 conflicts left", "1 conflict left" or "No conflicts left"."""
    if count == 0:
        return "No conflicts left"
    return f"{count} conflict{'s' if count != 1 else ''} left"


class HunkWidget(QFrame):
    """One conflict hunk: its sides next to each other and the three ways to resolve it."""

    def __init__(self, hunk: ConflictHunk, total: int, on_choice, parent: QWidget | None = None):
        super().__init__(parent)
        self.hunk = hunk
        self.setObjectName("conflict-hunk")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        title = QLabel(f"<b>Conflict {hunk.index + 1} of {total}</b> "
                       f"<span style='color:#777'>lines {hunk.lines.start}–{hunk.lines.end}</span>")
        self.take_ours_button = QPushButton("Take Ours")
        self.take_theirs_button = QPushButton("Take Theirs")
        self.take_both_button = QPushButton("Take Both")
        self.take_both_button.setToolTip("Keep our lines, then theirs")
        for button, choice in ((self.take_ours_button, "ours"), (self.take_theirs_button, "theirs"),
                               (self.take_both_button, "both")):
            button.clicked.connect(lambda _=False, c=choice: on_choice(hunk.index, c))
        top = QHBoxLayout()
        top.addWidget(title, 1)
        top.addWidget(self.take_ours_button)
        top.addWidget(self.take_theirs_button)
        top.addWidget(self.take_both_button)

        sides = [("Ours", hunk.ours_label, hunk.ours, "#e7f5ff")]
        if hunk.base is not None:
            sides.append(("Base", hunk.base_label or "", hunk.base, "#f8f9fa"))
        sides.append(("Theirs", hunk.theirs_label, hunk.theirs, "#fff4e6"))
        grid = QGridLayout()
        grid.setHorizontalSpacing(6)
        self.side_texts: dict[str, QPlainTextEdit] = {}
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        line_height = QFontMetrics(font).lineSpacing()
        for column, (name, label, lines, colour) in enumerate(sides):
            caption = QLabel(f"{name}{f' <span style=color:#777>({label})</span>' if label else ''}")
            caption.setTextFormat(Qt.TextFormat.RichText)
            text = QPlainTextEdit()
            text.setObjectName(f"conflict-{name.lower()}")
            text.setReadOnly(True)
            text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
            text.setFont(font)
            text.setStyleSheet(f"QPlainTextEdit {{ background: {colour}; color: #212529; }}")
            body = "".join(lines)
            text.setPlainText(body.removesuffix("\n") if body else "")
            if not lines:
                text.setPlaceholderText("(nothing)")
            shown = min(max(len(lines), 1), 12)
            text.setFixedHeight(shown * line_height + 14)
            grid.addWidget(caption, 0, column)
            grid.addWidget(text, 1, column)
            self.side_texts[name.lower()] = text
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 8)
        layout.addLayout(top)
        layout.addLayout(grid)


class ConflictView(QWidget):
    """The conflicts of ``repo``. ``window`` provides ``tasks``, ``show_error``, ``open_file``
    and ``handle_event``."""

    sig_conflicts_changed = Signal(int)
    """The conflicts were read again; the argument is how many files still have conflicts."""

    def __init__(self, window, repo: Repository, parent: QWidget | None = None):
        super().__init__(parent)
        self.window, self.repo = window, repo
        self.snapshot: ConflictSnapshot | None = None
        self.hunk_widgets: list[HunkWidget] = []
        self._selected: str | None = None
        self._load_key = f"git.conflicts.load.{next(_ids)}"
        self._action_key = f"git.conflicts.action.{next(_ids)}"
        # Results that arrive after the view is closed are dropped, not delivered to a dead widget.
        self.destroyed.connect(lambda *_, tasks=window.tasks, keys=(self._load_key, self._action_key):
                               [tasks.cancel(key) for key in keys])

        self.state_label = QLabel()
        self.state_label.setWordWrap(True)
        self.count_label = QLabel()
        self.count_label.setObjectName("conflicts-left")
        self.count_label.setStyleSheet("font-weight: bold;")
        self.abort_button = QPushButton("Abort Merge")
        self.abort_button.clicked.connect(self.abort)
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.clicked.connect(self.refresh)
        top = QHBoxLayout()
        top.setContentsMargins(8, 6, 8, 6)
        top.addWidget(self.count_label)
        top.addWidget(self.state_label, 1)
        top.addWidget(self.refresh_button)
        top.addWidget(self.abort_button)

        self.file_list = QListWidget()
        self.file_list.setObjectName("conflicted-files")
        self.file_list.setSpacing(3)
        self.file_list.currentItemChanged.connect(self._on_file_selected)
        self.file_list.itemActivated.connect(lambda _item: self.open_in_editor())

        self.file_title = QLabel()
        self.file_title.setTextFormat(Qt.TextFormat.RichText)
        self.take_ours_file_button = QPushButton("Take Ours (file)")
        self.take_theirs_file_button = QPushButton("Take Theirs (file)")
        self.open_button = QPushButton("Open in Editor")
        self.mark_resolved_button = QPushButton("Mark Resolved")
        self.take_ours_file_button.clicked.connect(lambda: self.take_file("ours"))
        self.take_theirs_file_button.clicked.connect(lambda: self.take_file("theirs"))
        self.open_button.clicked.connect(self.open_in_editor)
        self.mark_resolved_button.clicked.connect(self.mark_resolved)
        file_bar = QHBoxLayout()
        file_bar.addWidget(self.file_title, 1)
        for button in (self.take_ours_file_button, self.take_theirs_file_button, self.open_button,
                       self.mark_resolved_button):
            file_bar.addWidget(button)

        self.hunk_note = QLabel()
        self.hunk_note.setWordWrap(True)
        theme.set_themed_style_sheet(self.hunk_note, "color: @MUTED_TEXT; padding: 4px;")
        self._hunk_box = QWidget()
        self._hunk_layout = QVBoxLayout(self._hunk_box)
        self._hunk_layout.setContentsMargins(0, 0, 0, 0)
        self._hunk_layout.addWidget(self.hunk_note)
        self._hunk_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self._hunk_box)
        scroll.setFrameShape(QFrame.Shape.NoFrame)

        self._file_pane = QWidget()
        right = QVBoxLayout(self._file_pane)
        right.setContentsMargins(6, 0, 0, 0)
        right.addLayout(file_bar)
        right.addWidget(scroll, 1)

        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.file_list)
        splitter.addWidget(self._file_pane)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([220, 700])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(splitter, 1)
        self.refresh()

    # Public ----------------------------------------------------------------------------------

    @property
    def selected_path(self) -> str | None:
        """The conflicted file whose hunks are shown."""
        return self._selected

    def refresh(self) -> None:
        """Read the conflicts and the repository's state again."""
        self.window.tasks.run(self._load_key, read_conflicts, self.repo, self._selected,
                              on_done=self._show, on_error=self._on_error, title="Reading the conflicts")

    def select_file(self, path: str) -> None:
        """Show the hunks of the conflicted file ``path``."""
        self._selected = path
        self.refresh()

    def take_hunk(self, index: int, choice: str) -> None:
        """Resolve hunk ``index`` of the selected file with "ours", "theirs" or "both"."""
        if self._selected is not None:
            self._act(conflicts.resolve_hunk, self.repo, self._selected, index, choice)

    def take_file(self, side: str) -> None:
        """Take the whole selected file from "ours" or "theirs" (it is marked resolved)."""
        if self._selected is not None:
            self._act(conflicts.resolve_file, self.repo, self._selected, side)

    def mark_resolved(self) -> None:
        """Mark the selected file resolved (refused while it has conflict markers)."""
        if self._selected is not None:
            self._act(conflicts.mark_resolved, self.repo, self._selected)

    def abort(self) -> None:
        """Abort the merge, rebase, cherry-pick or revert in progress, after asking."""
        state = self.snapshot.state if self.snapshot else None
        if state is None or state.kind not in _ABORTS:
            return
        label, function = _ABORTS[state.kind]
        if self.ask_abort(label):
            self._act(function, self.repo)

    def ask_abort(self, label: str) -> bool:
        """Whether the user really wants to ``label`` (replaceable in tests)."""
        answer = QMessageBox.question(
            self, label, f"{label}? Every resolution made so far is lost and the files go back to "
                         "how they were before.", QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    def open_in_editor(self) -> None:
        """Open the selected file in an editor, at its first conflict."""
        if self._selected is None:
            return
        line = self.snapshot.hunks[0].lines.start if self.snapshot and self.snapshot.hunks else None
        self.window.open_file(self.repo.root / self._selected, line)

    # Internals -------------------------------------------------------------------------------

    def _act(self, function, *args) -> None:
        self._set_busy(True)
        self.window.tasks.run(self._action_key, function, *args, on_done=self._after_action,
                              on_error=self._on_action_error, title="Resolving conflicts")

    def _after_action(self, _result) -> None:
        self.window.handle_event(INDEX_CHANGED, {})
        self.refresh()

    def _on_action_error(self, error: Exception) -> None:
        self._on_error(error)
        self.refresh()

    def _on_error(self, error: Exception) -> None:
        self._set_busy(False)
        self.window.show_error(str(error))

    def _set_busy(self, busy: bool) -> None:
        self._file_pane.setEnabled(not busy)
        self.abort_button.setEnabled(not busy)

    def _show(self, snapshot: ConflictSnapshot) -> None:
        self.snapshot = snapshot
        self._selected = snapshot.selected
        count = len(snapshot.files)
        state = snapshot.state
        self.count_label.setText(conflicts_left_text(count))
        if state.in_progress:
            self.state_label.setText(state.message)
        elif count:
            # Only applying a stash leaves conflicts with no operation to continue or abort.
            self.state_label.setText(STASH_CONFLICTS)
        else:
            self.state_label.setText("No merge, rebase, cherry-pick or revert in progress.")
        abort = _ABORTS.get(state.kind)
        self.abort_button.setVisible(abort is not None)
        if abort is not None:
            self.abort_button.setText(abort[0])

        self.file_list.blockSignals(True)
        self.file_list.clear()
        for item in snapshot.files:
            row = QListWidgetItem(f"{item.path}\n{item.kind}")
            row.setData(Qt.ItemDataRole.UserRole, item.path)
            row.setToolTip(f"{item.path}: {item.kind}")
            self.file_list.addItem(row)
            if item.path == snapshot.selected:
                self.file_list.setCurrentItem(row)
        self.file_list.blockSignals(False)
        self._show_hunks(snapshot)
        self._set_busy(False)
        self.sig_conflicts_changed.emit(count)

    def _show_hunks(self, snapshot: ConflictSnapshot) -> None:
        for widget in self.hunk_widgets:
            self._hunk_layout.removeWidget(widget)
            widget.hide()  # deleted later, but gone from the screen now
            widget.deleteLater()
        self.hunk_widgets = []
        selected = next((item for item in snapshot.files if item.path == snapshot.selected), None)
        has_file = selected is not None
        for button in (self.take_ours_file_button, self.take_theirs_file_button, self.open_button,
                       self.mark_resolved_button):
            button.setVisible(has_file)
        if selected is None:
            self.file_title.setText("")
            finish = "commit to finish" if snapshot.state.in_progress else "nothing to resolve"
            self.hunk_note.setText(f"No conflicted files: {finish}.")
            return
        self.take_ours_file_button.setEnabled(selected.has_ours or 1 in selected.stages)
        self.take_theirs_file_button.setEnabled(selected.has_theirs or 1 in selected.stages)
        self.open_button.setEnabled((self.repo.root / selected.path).is_file())
        self.file_title.setText(f"<b>{selected.path}</b> <span style='color:#777'>{selected.kind}</span>")
        if snapshot.hunks_error:
            self.hunk_note.setText(snapshot.hunks_error)
        elif not snapshot.hunks:
            self.hunk_note.setText("No conflict markers left in this file. Review it, then mark it resolved.")
        else:
            left = len(snapshot.hunks)
            self.hunk_note.setText(f"{left} conflict{'s' if left != 1 else ''} in this file.")
        for hunk in snapshot.hunks:
            widget = HunkWidget(hunk, len(snapshot.hunks), self.take_hunk)
            self._hunk_layout.insertWidget(self._hunk_layout.count() - 1, widget)
            self.hunk_widgets.append(widget)

    def _on_file_selected(self, current: QListWidgetItem | None, _previous) -> None:
        if current is not None:
            self.select_file(current.data(Qt.ItemDataRole.UserRole))

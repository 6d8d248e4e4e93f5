"""The diff editor: one file's unstaged (Working Tree) or staged diff, side by side or inline,
with staging, unstaging and discarding of hunks and selected lines; or, read-only, one file's
changes between two commits.

The diff is read and its rows are built off the GUI thread (``TaskRunner``); the panes get their
whole text at once and paint only what is visible (``diff_panes``). There is no widget per hunk:
the hunk header rows carry painted Stage / Unstage / Discard links, and a strip above the panes
follows the current hunk with the same actions as buttons.

After any operation the view reloads and calls ``notify("git.index_changed")`` so the Source
Control panel refreshes.
"""

from __future__ import annotations

import logging
import weakref
from bisect import bisect_left, bisect_right
from pathlib import PurePosixPath
from typing import Callable

from PySide6.QtCore import QEvent, QObject, QPoint, Qt, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QMessageBox, QSizePolicy, QSplitter, QStackedWidget, QToolButton,
                               QVBoxLayout, QWidget)

from workbench.editor.highlighting import LineLexer, lexer_for_path
from workbench.git import staging
from workbench.git.diff import COMMITS, INDEX_VS_HEAD, WORKTREE_VS_INDEX, FileDiff
from workbench.git.diff_rows import (INLINE, MODES, SIDE_BY_SIDE, LoadedDiff, RowMap, inline_rows, load_diff,
                                     side_by_side_rows)
from workbench.git.errors import GitError
from workbench.git.repository import Repository
from workbench.git.status import repo_relative
from workbench.git.widgets.diff_panes import BOTH_SIDES, NEW_SIDE, OLD_SIDE, DiffPane
from workbench.git.widgets.session import DiffTabs
from workbench.qt.elided_label import ElidedLabel
from workbench.qt.icons import name_tab_icon
from workbench.qt.reopen import mark_reopenable
from workbench.tasks import CancelToken
from workbench.qt import theme

SOURCE_TITLES = {WORKTREE_VS_INDEX: "Working Tree", INDEX_VS_HEAD: "Staged", COMMITS: "Commits"}
INDEX_CHANGED = "git.index_changed"
# The narrowest a pane may be made; wider content scrolls instead of widening the window.
PANE_MINIMUM_WIDTH = 80

log = logging.getLogger(__name__)

_MESSAGE_PAGE, _SIDE_PAGE, _INLINE_PAGE = 0, 1, 2


def load_diff_and_lexer(repo: Repository, path: str, source: str, mode: str, *,
                        cancel: CancelToken | None = None, a: str | None = None,
                        b: str | None = None) -> LoadedDiff:
    """``load_diff`` with the lexer of ``path`` when there are rows to colour (in a worker)."""
    loaded = load_diff(repo, path, source, mode, cancel=cancel, a=a, b=b)
    if loaded.rows is not None:
        # Finding a lexer by file name can take a quarter of a second the first time.
        loaded.lexer = lexer_for_path(path)
    return loaded


def short_revision(revision: str | None) -> str:
    """A revision as a title shows it: an object id cut to 7 characters, a name as it is."""
    if not revision:
        return "∅"
    if len(revision) >= 7 and all(c in "0123456789abcdefABCDEF" for c in revision):
        return revision[:7]
    return revision


class DiffView(QWidget):
    """The diff of ``path`` in ``repo`` from ``source`` (WORKTREE_VS_INDEX or INDEX_VS_HEAD; or
    COMMITS, read-only, between revisions ``a`` and ``b``).

    ``tasks`` is the window's TaskRunner, ``show_error(message)`` tells the user about a failure
    and ``notify(event_name)`` announces a change of the index to the rest of the window.
    """

    sig_loaded = Signal()
    """The diff was (re)loaded and is shown (also for binary, too-large and empty diffs)."""

    sig_mode_changed = Signal(str)
    """The user chose another mode ("side-by-side" or "inline")."""

    def __init__(self, repo: Repository, path: str, source: str, tasks, show_error: Callable[[str], None],
                 notify: Callable[[str], None], parent: QWidget | None = None, mode: str = SIDE_BY_SIDE,
                 a: str | None = None, b: str | None = None) -> None:
        super().__init__(parent)
        if source not in SOURCE_TITLES:
            raise GitError(f"A diff view shows the Working Tree, the Staged or a commits diff, not {source!r}.")
        if source == COMMITS and not b:
            raise GitError("A diff between commits needs the revision to compare with (b).")
        self.repo, self.path, self.source = repo, repo_relative(repo, path), source
        self.a, self.b = (a, b) if source == COMMITS else (None, None)
        self.tasks, self.show_error, self.notify = tasks, show_error, notify
        self.diff: FileDiff | None = None
        self._mode = mode if mode in MODES else SIDE_BY_SIDE
        self._rows: dict[str, object] = {}  # mode -> PaneRows or (left, right) for self.diff
        self._shown: dict[str, FileDiff | None] = {SIDE_BY_SIDE: None, INLINE: None}
        self._lexer = None
        self._explicit_selection: list[tuple[int, int]] | None = None
        self._selecting = False
        self._busy = False
        self._notifying = False
        self._keep_hunk: int | None = None
        self._active: DiffPane | None = None
        self._key = f"git.diff.{id(self)}"
        self._build()
        self.setFocusProxy(self.right)
        self.reload()

    # --- public interface -------------------------------------------------------------------

    @property
    def title(self) -> str:
        """The tab title: "name (Working Tree)", "name (Staged)" or "name (a7..b7)"."""
        return f"{PurePosixPath(self.path).name} ({self._source_title()})"

    @property
    def tooltip(self) -> str:
        if self.source == COMMITS:
            return f"{self.path} — changes from {self.a or 'nothing'} to {self.b}"
        return f"{self.path} — {SOURCE_TITLES[self.source]} changes"

    @property
    def is_read_only(self) -> bool:
        """True for a diff between commits: nothing to stage, unstage or discard."""
        return self.source == COMMITS

    def _source_title(self) -> str:
        if self.source == COMMITS:
            return f"{short_revision(self.a)}..{short_revision(self.b)}"
        return SOURCE_TITLES[self.source]

    @property
    def mode(self) -> str:
        return self._mode

    @property
    def is_busy(self) -> bool:
        """True while an operation (stage, unstage, discard) runs."""
        return self._busy

    def reload(self, *, quiet: bool = False) -> None:
        """Read the diff again off the GUI thread; ``sig_loaded`` is emitted when it is shown.

        ``quiet`` is for reloads the user did not ask for (the index changed elsewhere, after an
        operation): a failure is shown inside the tab, never in a message box."""
        if self.diff is None:
            self._message.setText("Loading the diff…")
        self.tasks.run(self._key + ".load", load_diff_and_lexer, self.repo, self.path, self.source, self._mode,
                       a=self.a, b=self.b,
                       on_done=self._on_loaded, on_error=lambda error: self._on_load_failed(error, quiet=quiet),
                       title=f"Reading the diff of {PurePosixPath(self.path).name}")

    def set_mode(self, mode: str) -> None:
        """Show the diff "side-by-side" (old left, new right) or "inline" (one pane)."""
        if mode not in MODES:
            raise ValueError(f"Unknown diff mode {mode!r}; use 'side-by-side' or 'inline'.")
        row = self._anchor_row()
        changed = mode != self._mode
        self._mode = mode
        self._mode_button.blockSignals(True)
        self._mode_button.setChecked(mode == INLINE)
        self._mode_button.blockSignals(False)
        self._show_current()
        if row is not None:
            self._go_to_row(self._translate_anchor(row))
        if changed:
            self.sig_mode_changed.emit(mode)

    def current_hunk(self) -> int:
        """The hunk at the cursor (or at the top of the view when the cursor is scrolled away);
        -1 when no hunk is shown."""
        pane = self._pane()
        if (pane is None or pane.rows is None or not len(pane.rows)
                or self._stack.currentIndex() == _MESSAGE_PAGE):
            return -1
        row_map = pane.rows.rows
        row = pane.current_row()
        first = pane.first_visible_row()
        last = pane.cursorForPosition(QPoint(0, max(0, pane.viewport().height() - 1))).blockNumber()
        if not first <= row <= max(first, last):
            row = first
        return row_map.hunk_at(row)

    def hunk_count(self) -> int:
        return len(self.diff.hunks) if self.diff is not None else 0

    def next_change(self) -> int:
        """Move to the next block of changed lines (wrapping around); returns its hunk."""
        return self._step_change(forward=True)

    def previous_change(self) -> int:
        """Move to the previous block of changed lines (wrapping around); returns its hunk."""
        return self._step_change(forward=False)

    def select_lines(self, hunk_index: int, line_indexes) -> None:
        """Select lines ``line_indexes`` (indexes into the hunk's ``lines``) of one hunk, for
        ``stage_selected`` / ``unstage_selected`` / ``discard_selected``."""
        chosen = [(hunk_index, i) for i in line_indexes]
        pane = self._pane()
        if pane is not None and pane.rows is not None:
            found = [r for r in (pane.rows.rows.row_of_line(h, i) for h, i in chosen) if r >= 0]
            if found:
                self._selecting = True
                try:
                    pane.go_to_row(min(found), select_to=max(found))
                finally:
                    self._selecting = False
        self._explicit_selection = chosen

    def selected_lines(self) -> list[tuple[int, int]]:
        """The ``(hunk, line)`` pairs an operation on the selection takes: those given to
        ``select_lines``, else the rows selected in the pane (or the cursor's row)."""
        if self._explicit_selection is not None:
            return list(self._explicit_selection)
        pane = self._pane()
        if pane is None or pane.rows is None:
            return []
        span = pane.selected_rows()
        first, last = span if span is not None else (pane.current_row(), pane.current_row())
        return pane.rows.rows.lines_of_rows(first, last)

    def stage_hunk(self, index: int) -> None:
        """Stage hunk ``index`` of the Working Tree diff."""
        self._operate(staging.stage_hunk, index, keep=index)

    def unstage_hunk(self, index: int) -> None:
        """Unstage hunk ``index`` of the Staged diff."""
        self._operate(staging.unstage_hunk, index, keep=index)

    def discard_hunk(self, index: int) -> None:
        """Throw away hunk ``index`` of the Working Tree diff, after ``confirm_discard``."""
        if self.diff is None or self.is_read_only or not 0 <= index < len(self.diff.hunks):
            return
        if self.confirm_discard(f"Discard hunk {index + 1} of {PurePosixPath(self.path).name}? "
                                "Its changes are lost from the working tree."):
            self._operate(staging.discard_hunk, index, keep=index)

    def stage_selected(self) -> None:
        """Stage the selected lines of the Working Tree diff."""
        self._operate_on_selection(staging.stage_lines)

    def unstage_selected(self) -> None:
        """Unstage the selected lines of the Staged diff."""
        self._operate_on_selection(staging.unstage_lines)

    def discard_selected(self) -> None:
        """Throw away the selected lines of the Working Tree diff, after ``confirm_discard``."""
        if self.is_read_only:
            return
        lines = self._changed(self.selected_lines())
        if lines and self.confirm_discard(
                f"Discard {len(lines)} selected line{'s' if len(lines) != 1 else ''} of "
                f"{PurePosixPath(self.path).name}? The changes are lost from the working tree."):
            self._operate(staging.discard_lines, lines, keep=lines[0][0])
        elif not lines:
            self.show_error("Select added or removed lines first, then discard them.")

    def confirm_discard(self, message: str) -> bool:
        """Ask before throwing changes away (tests replace this)."""
        answer = QMessageBox.question(self, "Discard changes", message,
                                      QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
                                      QMessageBox.StandardButton.Cancel)
        return answer == QMessageBox.StandardButton.Discard

    def panes(self) -> list[DiffPane]:
        """The panes of the current mode: [old, new] side by side, [inline] inline."""
        return [self.left, self.right] if self._mode == SIDE_BY_SIDE else [self.inline]

    def on_index_changed(self, _data: object = None) -> None:
        """Another part of the window changed the index: read the diff again (quietly: a file
        gone or no longer changed is said inside the tab)."""
        if self.source != COMMITS and not self._busy and not self._notifying:
            self.reload(quiet=True)

    # --- building ---------------------------------------------------------------------------

    def _build(self) -> None:
        worktree = self.source == WORKTREE_VS_INDEX
        heading = (f"{self.path}  ·  {self.a or 'nothing'} → {self.b}" if self.source == COMMITS
                   else f"{self.path}  ·  {SOURCE_TITLES[self.source]}")
        self._heading = ElidedLabel(heading)
        self._heading.setStyleSheet("font-weight: 600;")
        self._previous_button = self._tool_button("Previous Change", "Go to the previous change (Shift+F7)",
                                                  self.previous_change)
        self._next_button = self._tool_button("Next Change", "Go to the next change (F7)", self.next_change)
        self._mode_button = self._tool_button("Inline", "Show the old and new lines in one pane",
                                              lambda checked: self.set_mode(INLINE if checked else SIDE_BY_SIDE))
        self._mode_button.setCheckable(True)
        self._mode_button.setChecked(self._mode == INLINE)
        refresh = self._tool_button("Refresh", "Read the diff again", lambda _=False: self.reload())
        top = QHBoxLayout()
        top.setContentsMargins(6, 4, 6, 2)
        top.addWidget(self._heading, 1)
        for button in (self._previous_button, self._next_button, self._mode_button, refresh):
            top.addWidget(button)

        # The strip that follows the current hunk.
        self._hunk_label = ElidedLabel()
        theme.set_themed_style_sheet(self._hunk_label, "color: @MUTED_TEXT;")
        self._hunk_buttons: dict[str, QToolButton] = {}
        strip = QHBoxLayout()
        strip.setContentsMargins(6, 0, 6, 4)
        strip.addWidget(self._hunk_label, 1)
        if self.source == COMMITS:
            actions = []
        elif worktree:
            actions = [("stage_hunk", "Stage Hunk"), ("discard_hunk", "Discard Hunk"),
                       ("stage_selected", "Stage Selected Lines"), ("discard_selected", "Discard Selected Lines")]
        else:
            actions = [("unstage_hunk", "Unstage Hunk"), ("unstage_selected", "Unstage Selected Lines")]
        for name, title in actions:
            if name.endswith("_hunk"):
                handler = lambda _=False, n=name: self._on_hunk_button(n)  # noqa: E731
            else:
                handler = getattr(self, name)
            button = self._tool_button(title, "", handler)
            self._hunk_buttons[name] = button
            strip.addWidget(button)

        self.left = DiffPane(OLD_SIDE)
        self.right = DiffPane(NEW_SIDE)
        self.inline = DiffPane(BOTH_SIDES)
        link_actions = () if self.source == COMMITS else ("stage", "discard") if worktree else ("unstage",)
        self.right.actions = link_actions
        self.inline.actions = link_actions
        for pane in (self.left, self.right, self.inline):
            # Long lines scroll inside the pane; they never make the window wider.
            pane.setMinimumWidth(PANE_MINIMUM_WIDTH)
            pane.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Expanding)
            pane.cursorPositionChanged.connect(lambda p=pane: self._on_cursor_moved(p))
            pane.selectionChanged.connect(self._on_selection_changed)
            pane.sig_hunk_action.connect(self._on_hunk_link)
            pane.verticalScrollBar().valueChanged.connect(lambda _=0: self._update_strip())
            pane.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
            pane.customContextMenuRequested.connect(lambda point, p=pane: self._show_context_menu(p, point))
            pane.viewport().setMouseTracking(True)
            pane.installEventFilter(self)
        # Scrolling is locked together: the panes have the same rows, so the same values.
        for a, b in ((self.left, self.right), (self.right, self.left)):
            a.verticalScrollBar().valueChanged.connect(b.verticalScrollBar().setValue)
            a.horizontalScrollBar().valueChanged.connect(b.horizontalScrollBar().setValue)
        self.left.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.left)
        splitter.addWidget(self.right)
        splitter.setChildrenCollapsible(False)

        self._message = QLabel()
        self._message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._message.setWordWrap(True)
        self._message.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        theme.set_themed_style_sheet(self._message, "color: @MUTED_TEXT; font-size: 13px;")
        self._stack = QStackedWidget()
        self._stack.addWidget(self._message)
        self._stack.addWidget(splitter)
        self._stack.addWidget(self.inline)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addLayout(top)
        layout.addLayout(strip)
        layout.addWidget(self._stack, 1)

        for key, slot in ((QKeySequence(Qt.Key.Key_F7), self.next_change),
                          (QKeySequence(Qt.Modifier.SHIFT | Qt.Key.Key_F7), self.previous_change)):
            action = QAction(self)
            action.setShortcut(key)
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            action.triggered.connect(lambda _=False, s=slot: s())
            self.addAction(action)
        self._update_strip()

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt override)
        # F7 / Shift+F7 typed in a pane, also where no window-level shortcut sees it.
        if event.type() == QEvent.Type.KeyPress and event.key() == Qt.Key.Key_F7:
            modifiers = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
            if modifiers == Qt.KeyboardModifier.NoModifier:
                self.next_change()
                return True
            if modifiers == Qt.KeyboardModifier.ShiftModifier:
                self.previous_change()
                return True
        return super().eventFilter(watched, event)

    def _tool_button(self, text: str, tip: str, slot) -> QToolButton:
        button = QToolButton()
        button.setText(text)
        button.setToolTip(tip or text)
        button.setAutoRaise(True)
        button.clicked.connect(slot)
        return button

    # --- loading and showing ----------------------------------------------------------------

    def _on_loaded(self, loaded: LoadedDiff) -> None:
        anchor = self._anchor_row() if self.diff is not None else None
        scroll = self._pane().verticalScrollBar().value() if self._pane() is not None else 0
        self.diff = loaded.diff
        self._rows = {loaded.mode: loaded.rows} if loaded.rows is not None else {}
        self._lexer = loaded.lexer
        self._explicit_selection = None
        self._show_current()
        pane = self._pane()
        if pane is not None and pane.rows is not None:
            row_map = pane.rows.rows
            if self._keep_hunk is not None:
                # After an operation: the hunk that took the place of the one acted on.
                hunk = min(self._keep_hunk, len(row_map.header_rows) - 1)
                self._go_to_row(self._first_change_of(row_map, hunk))
            elif anchor is not None:
                pane.verticalScrollBar().setValue(scroll)
                self._go_to_row(min(anchor, len(row_map) - 1), center=False)
            elif row_map.change_rows:
                self._go_to_row(row_map.change_rows[0])
        self._keep_hunk = None
        self._update_strip()
        self.sig_loaded.emit()

    def _on_load_failed(self, error: Exception, *, quiet: bool = False) -> None:
        self._keep_hunk = None
        self.diff = None
        self._rows = {}
        self._shown = {SIDE_BY_SIDE: None, INLINE: None}
        if quiet:
            # A tab left open on a file that is gone or no longer changed: say so in the tab.
            log.info("Reloading the diff of %s failed: %s", self.path, error)
            self._message.setText(self._stale_message(error))
        else:
            self._message.setText(f"Could not read the diff of {self.path}.")
            self.show_error(_message_of(error))
        self._stack.setCurrentIndex(_MESSAGE_PAGE)
        self._update_strip()
        self.sig_loaded.emit()

    def _stale_message(self, error: Exception) -> str:
        name = PurePosixPath(self.path).name
        if self.source == WORKTREE_VS_INDEX and not (self.repo.root / self.path).exists():
            return f"The file is gone: {name} is no longer in the working tree."
        return f"No changes to show for {name}. ({_message_of(error)})"

    def _show_current(self) -> None:
        diff = self.diff
        if diff is None:
            self._stack.setCurrentIndex(_MESSAGE_PAGE)
            return
        if diff.is_binary or diff.is_too_large:
            self._message.setText(diff.summary or "This diff cannot be shown.")
            self._stack.setCurrentIndex(_MESSAGE_PAGE)
        elif not diff.hunks:
            name = PurePosixPath(self.path).name
            if self.source == COMMITS:
                self._message.setText(f"No changes to show: {name} is the same in "
                                      f"{short_revision(self.a)} and {short_revision(self.b)}.")
            else:
                what = "unstaged" if self.source == WORKTREE_VS_INDEX else "staged"
                self._message.setText(f"No changes to show: {name} has no {what} changes.")
            self._stack.setCurrentIndex(_MESSAGE_PAGE)
        else:
            self._fill_panes()
            self._stack.setCurrentIndex(_SIDE_PAGE if self._mode == SIDE_BY_SIDE else _INLINE_PAGE)
        self._update_strip()

    def _fill_panes(self) -> None:
        """Give the current mode's panes the current diff's rows, unless they have them."""
        mode, diff = self._mode, self.diff
        if self._shown[mode] is diff:
            return
        rows = self._rows.get(mode)
        if rows is None:
            rows = self._rows[mode] = side_by_side_rows(diff) if mode == SIDE_BY_SIDE else inline_rows(diff)
        lexer = self._lexer or lexer_for_path(self.path)
        self._lexer = lexer
        if mode == SIDE_BY_SIDE:
            left, right = rows
            # One LineLexer per pane: each interns the states of its own rows.
            self.left.set_rows(left, LineLexer(lexer))
            self.right.set_rows(right, LineLexer(lexer))
            self._active = self.right
        else:
            self.inline.set_rows(rows, LineLexer(lexer))
            self._active = self.inline
        self._shown[mode] = diff

    def _pane(self) -> DiffPane | None:
        if self._mode == INLINE:
            return self.inline
        return self._active if self._active in (self.left, self.right) else self.right

    # --- navigation -------------------------------------------------------------------------

    def _step_change(self, *, forward: bool) -> int:
        pane = self._pane()
        if pane is None or pane.rows is None or not pane.rows.rows.change_rows:
            return -1
        changes = pane.rows.rows.change_rows
        row = pane.current_row()
        if forward:
            index = bisect_right(changes, row)
            target = changes[index] if index < len(changes) else changes[0]
        else:
            index = bisect_left(changes, row) - 1
            target = changes[index] if index >= 0 else changes[-1]
        self._go_to_row(target)
        return pane.rows.rows.hunk_at(target)

    def _go_to_row(self, row: int, *, center: bool = True) -> None:
        active = self._pane()
        for pane in self.panes():
            if pane is not active:
                pane.go_to_row(row, center=center)
        active.go_to_row(row, center=center)
        self._active = active
        self._update_strip()

    def _anchor_row(self) -> int | None:
        """The (hunk, line) under the cursor as a row of the other mode can find it again."""
        pane = self._pane()
        if pane is None or pane.rows is None or not len(pane.rows):
            return None
        return pane.current_row()

    def _translate_anchor(self, row: int) -> int:
        """Row ``row`` of the previous mode's panes, as a row of the current mode's panes."""
        previous = self.inline if self._mode == SIDE_BY_SIDE else self.right
        current = self._pane()
        if previous.rows is None or current is None or current.rows is None:
            return row
        old_map, new_map = previous.rows.rows, current.rows.rows
        row = max(0, min(row, len(old_map) - 1))
        hunk = old_map.hunks[row]
        line = max(old_map.old_lines[row], old_map.new_lines[row])
        if line < 0:
            return new_map.header_rows[hunk] if hunk < len(new_map.header_rows) else 0
        found = new_map.row_of_line(hunk, line)
        return found if found >= 0 else 0

    @staticmethod
    def _first_change_of(row_map: RowMap, hunk: int) -> int:
        header = row_map.header_rows[hunk]
        index = bisect_left(row_map.change_rows, header)
        if index < len(row_map.change_rows) and row_map.hunk_at(row_map.change_rows[index]) == hunk:
            return row_map.change_rows[index]
        return header

    # --- operations -------------------------------------------------------------------------

    def _operate(self, function, argument, *, keep: int) -> None:
        if self.diff is None or self._busy or self.is_read_only:
            return
        self._busy = True
        self._update_strip()
        self.tasks.run(self._key + ".operation", function, self.repo, self.diff, argument,
                       on_done=lambda _result: self._after_operation(keep),
                       on_error=self._on_operation_failed,
                       title=f"Updating {PurePosixPath(self.path).name}")

    def _operate_on_selection(self, function) -> None:
        if self.is_read_only:
            return
        lines = self._changed(self.selected_lines())
        if not lines:
            self.show_error("Select added or removed lines first.")
            return
        self._operate(function, lines, keep=lines[0][0])

    def _changed(self, lines: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Only the added and removed lines of a selection (context lines are not changes)."""
        hunks = self.diff.hunks if self.diff is not None else []
        return [(h, i) for h, i in lines
                if 0 <= h < len(hunks) and 0 <= i < len(hunks[h].lines) and hunks[h].lines[i].kind != " "]

    def _after_operation(self, keep: int) -> None:
        self._busy = False
        self._keep_hunk = keep
        # This view reloads itself; the echo of its own notice is not needed.
        self._notifying = True
        try:
            self.notify(INDEX_CHANGED)
        finally:
            self._notifying = False
        self.reload(quiet=True)

    def _on_operation_failed(self, error: Exception) -> None:
        self._busy = False
        self._update_strip()
        self.show_error(_message_of(error))
        self.reload(quiet=True)

    def _on_hunk_button(self, name: str) -> None:
        hunk = self.current_hunk()
        if hunk >= 0:
            getattr(self, name)(hunk)

    def _on_hunk_link(self, hunk: int, action: str) -> None:
        getattr(self, f"{action}_hunk")(hunk)

    # --- reacting to the panes --------------------------------------------------------------

    def _on_cursor_moved(self, pane: DiffPane) -> None:
        if pane is self.left or pane is self.right:
            self._active = pane
        self._update_strip()

    def _on_selection_changed(self) -> None:
        if not self._selecting:
            self._explicit_selection = None

    def _update_strip(self) -> None:
        diff = self.diff
        shows_hunks = diff is not None and bool(diff.hunks) and self._stack.currentIndex() != _MESSAGE_PAGE
        hunk = self.current_hunk() if shows_hunks else -1
        if hunk >= 0:
            header = diff.hunks[hunk]
            section = header.section.strip()
            self._hunk_label.setText(f"Hunk {hunk + 1} of {len(diff.hunks)}   "
                                     f"−{header.old_start},{header.old_count} +{header.new_start},{header.new_count}"
                                     + (f"   {section}" if section else ""))
        else:
            self._hunk_label.setText("")
        for pane in (self.left, self.right, self.inline):
            pane.set_current_hunk(hunk if pane in self.panes() else -1)
        for button in self._hunk_buttons.values():
            button.setEnabled(hunk >= 0 and not self._busy)
        for button in (self._previous_button, self._next_button):
            button.setEnabled(shows_hunks)

    def _show_context_menu(self, pane: DiffPane, point: QPoint) -> None:
        menu = pane.createStandardContextMenu(point)
        menu.addSeparator()
        for name, button in self._hunk_buttons.items():
            action = menu.addAction(button.text())
            action.setEnabled(button.isEnabled())
            action.triggered.connect(button.click)
        menu.addSeparator()
        menu.addAction("Next Change", self.next_change)
        menu.addAction("Previous Change", self.previous_change)
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        menu.popup(pane.viewport().mapToGlobal(point))


def _message_of(error: Exception) -> str:
    if isinstance(error, GitError):
        return str(error)
    return f"The diff operation failed: {error}"


# --- tabs -----------------------------------------------------------------------------------


def open_diff_tab(window, repo: Repository, path: str, source: str, a: str | None = None,
                  b: str | None = None) -> DiffView:
    """Show the diff of ``path`` from ``source`` in a tab of ``window``: the tab already showing
    it (refreshed), or a new one titled "name (Working Tree)" / "name (Staged)". With ``source``
    COMMITS the read-only diff between revisions ``a`` and ``b``, titled "name (a7..b7)".
    A new tab opens in the mode last chosen in ``window``."""
    rel = repo_relative(repo, path)
    if source != COMMITS:
        a = b = None
    tabs = diff_tabs_of(window)
    view = _find_view(window, tabs, repo, rel, source, a, b)
    if view is not None:
        view.reload()
    else:
        view = DiffView(repo, rel, source, window.tasks, window.show_error,
                        lambda name: window.handle_event(name, {}), mode=tabs.last_mode or SIDE_BY_SIDE, a=a, b=b)
        tabs.remember(view)
        view.sig_mode_changed.connect(lambda mode, tabs=tabs: setattr(tabs, "last_mode", mode))
        if hasattr(window, "on_event") and source != COMMITS:
            ref = weakref.ref(view)
            window.on_event(INDEX_CHANGED, lambda data, ref=ref: _forward_index_change(ref, data))
    mark_reopenable(view, "git.openChanges", path=rel, source=source, a=a, b=b)
    name_tab_icon(view, "msc.diff")
    window.add_tab(view, view.title, view.tooltip)
    return view


def open_commit_diff_tab(window, repo: Repository, path: str, a: str | None, b: str) -> DiffView:
    """Show, read-only, the changes of ``path`` between revisions ``a`` and ``b`` (``a`` None or
    empty for a root commit) in a tab of ``window`` titled "name (a7..b7)"."""
    return open_diff_tab(window, repo, path, COMMITS, a=a, b=b)


def last_mode(window) -> str:
    """The mode the user last chose in a diff tab of ``window`` (side by side at first)."""
    return diff_tabs_of(window).last_mode or SIDE_BY_SIDE


def diff_tabs_of(window) -> DiffTabs:
    """The diff tabs of ``window``, kept by its Git session; a window without one (a test
    window) keeps them itself."""
    from workbench.git.widgets import session_of

    session = session_of(window) if isinstance(window, QObject) else None
    if session is not None:
        return session.diff_tabs
    tabs = getattr(window, "diff_tabs", None)
    if not isinstance(tabs, DiffTabs):
        tabs = DiffTabs()
        try:
            window.diff_tabs = tabs
        except AttributeError:
            pass  # a window that cannot hold them: each tab is looked up by the window's tabs only
    return tabs


def _find_view(window, tabs: DiffTabs, repo: Repository, rel: str, source: str, a: str | None = None,
               b: str | None = None) -> DiffView | None:
    tab_widget = getattr(window, "tabs", None)
    if tab_widget is not None and hasattr(tab_widget, "widget"):
        candidates = [tab_widget.widget(i) for i in range(tab_widget.count())]
    else:
        candidates = tabs.views()
    for view in candidates:
        if (isinstance(view, DiffView) and _alive(view) and view.path == rel and view.source == source
                and (view.a, view.b) == (a, b) and view.repo.root == repo.root):
            return view
    return None


def _forward_index_change(ref: weakref.ref, data: object) -> None:
    view = ref()
    if view is not None and _alive(view):
        view.on_index_changed(data)


def _alive(view: DiffView) -> bool:
    from shiboken6 import isValid

    return isValid(view)

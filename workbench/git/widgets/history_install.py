"""The commands that open the history, file history, blame and conflict views in a window.

``install_history(window, get_repo)`` is called by the Git capability's installer; ``get_repo()``
returns the window's current Repository, or None when the project is not in one (the commands
are disabled then). One history view and one conflict view per repository are kept and brought
back to the front; file histories get a tab each; blame is a gutter per editor, toggled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from shiboken6 import isValid

from workbench.git.errors import GitError
from workbench.git.repository import Repository
from workbench.qt.icons import name_tab_icon
from workbench.qt.reopen import mark_reopenable

SHOW_HISTORY = "git.showHistory"
SHOW_FILE_HISTORY = "git.showFileHistory"
OPEN_CHANGES = "git.openChanges"
TOGGLE_BLAME = "git.toggleBlame"
RESOLVE_CONFLICTS = "git.resolveConflicts"
INDEX_CHANGED = "git.index_changed"


class HistoryCommands:
    """The views this module opens in one window, and the commands that open them."""

    def __init__(self, window, get_repo: Callable[[], Repository | None]):
        self.window, self.get_repo = window, get_repo
        self.history_views: dict[Path, object] = {}
        self.file_history_views: dict[tuple[Path, str], object] = {}
        self.conflict_views: dict[Path, object] = {}
        self.blame_gutters: dict[int, object] = {}  # by id() of the editor widget

    # Commands --------------------------------------------------------------------------------

    def show_history(self):
        """Open (or bring back) the history of the whole repository."""
        repo = self._repo()
        if repo is None:
            return None
        # Leave these imports here: the views load when first opened, not with the window.
        from workbench.git.widgets.history_view import HistoryView

        view = self._alive(self.history_views.get(repo.root))
        if view is None:
            view = HistoryView(self.window, repo)
            self.history_views[repo.root] = view
        else:
            view.refresh()
        mark_reopenable(view, SHOW_HISTORY)
        name_tab_icon(view, "msc.history")
        self.window.add_tab(view, "History", f"Commit history of {repo.root}")
        return view

    def show_file_history(self, path: str | Path | None = None):
        """Open the history of ``path`` (explorer) or of the file in the current editor."""
        repo = self._repo()
        path = self._file_of(repo, path, "Show File History shows the history")
        if path is None:
            return None
        try:
            relative = path.resolve().relative_to(repo.root.resolve()).as_posix()
        except ValueError:
            self.window.show_error(f"{path} is outside the repository at {repo.root}.")
            return None
        from workbench.git.widgets.history_view import HistoryView

        key = (repo.root, relative)
        view = self._alive(self.file_history_views.get(key))
        if view is None:
            view = HistoryView(self.window, repo, relative)
            self.file_history_views[key] = view
        else:
            view.refresh()
        mark_reopenable(view, SHOW_FILE_HISTORY, path=relative)
        name_tab_icon(view, "msc.history")
        self.window.add_tab(view, f"History: {path.name}", f"History of {relative}")
        return view

    def open_changes(self, path: str | None = None, source: str = "", a: str | None = None,
                     b: str | None = None):
        """Show the diff of ``path`` (the current editor's file by default): its changes not yet
        staged, or with ``source`` "index-vs-head" its staged ones, or with "commits" those
        between revisions ``a`` and ``b``."""
        from workbench.git.diff import WORKTREE_VS_INDEX

        repo = self._repo()
        path = self._file_of(repo, path, "Open Changes shows the changes")
        if path is None:
            return None
        from workbench.git.widgets.diff_view import open_diff_tab

        return open_diff_tab(self.window, repo, str(path), source or WORKTREE_VS_INDEX, a=a, b=b)

    def _file_of(self, repo: Repository | None, path: str | Path | None, what: str) -> Path | None:
        """``path`` made absolute (a relative one is in the repository, as the reopened tabs keep
        it), or the current editor's file; None, with the reason shown, when there is none."""
        if repo is None:
            return None
        if path is None:
            tab = self.window.current_editor()
            if tab is None:
                self.window.show_error(f"Open a file first: {what} of the file in the current editor.")
                return None
            return Path(tab.path)
        path = Path(path)
        return path if path.is_absolute() else repo.root / path

    def toggle_blame(self):
        """Show or hide blame annotations beside the current editor's lines."""
        repo = self._repo()
        if repo is None:
            return None
        tab = self.window.current_editor()
        editor = getattr(tab, "editor", None) if tab is not None else None
        if editor is None:
            self._tell(blame_unavailable_reason(tab))
            return None
        gutter = self._alive(self.blame_gutters.get(id(editor)))
        if gutter is not None and gutter.attached:
            gutter.remove()
            del self.blame_gutters[id(editor)]
            return None
        from workbench.git.widgets.blame_view import BlameGutter

        gutter = BlameGutter(editor, self.window, repo, tab.path)
        gutter.sig_commit_activated.connect(self._show_commit)
        self.blame_gutters[id(editor)] = gutter
        return gutter

    def resolve_conflicts(self):
        """Open (or bring back) the conflict view."""
        repo = self._repo()
        if repo is None:
            return None
        from workbench.git.widgets.conflict_view import ConflictView

        view = self._alive(self.conflict_views.get(repo.root))
        if view is None:
            view = ConflictView(self.window, repo)
            self.conflict_views[repo.root] = view
        else:
            view.refresh()
        name_tab_icon(view, "msc.git-merge")
        self.window.add_tab(view, "Conflicts", f"Conflicts to resolve in {repo.root}")
        return view

    # Helpers ---------------------------------------------------------------------------------

    def _show_commit(self, sha: str) -> None:
        view = self.show_history()
        if view is None:
            return
        if not view.select_commit(sha):
            # Not loaded yet: select it when its page arrives.
            def select_when_loaded(_count: int, view=view) -> None:
                if view.select_commit(sha) or view.model.exhausted:
                    view.model.sig_page_loaded.disconnect(select_when_loaded)
                elif view.model.canFetchMore():
                    view.model.fetchMore()

            view.model.sig_page_loaded.connect(select_when_loaded)

    def _on_index_changed(self, _data: object) -> None:
        for view in list(self.conflict_views.values()):
            if self._alive(view) is not None:
                view.refresh()

    def _tell(self, message: str) -> None:
        """Say ``message`` in the status bar, without a dialog (the user just ran a command
        where it does not apply; nothing went wrong)."""
        status_bar = getattr(self.window, "statusBar", None)
        if status_bar is not None:
            status_bar().showMessage(message, 8000)
        else:
            self.window.show_error(message)

    def _repo(self) -> Repository | None:
        try:
            return self.get_repo()
        except GitError as error:
            self.window.show_error(str(error))
            return None

    @staticmethod
    def _alive(widget):
        # A tab closed by the user is deleted by the window; its Python wrapper stays behind.
        return widget if widget is not None and isValid(widget) else None


def blame_unavailable_reason(tab) -> str:
    """Why Toggle Blame cannot annotate the current ``tab`` (an EditorTab without a text
    editor, or None when the current tab is not a file at all)."""
    if tab is None:
        return "Blame needs a text editor tab: open a file, then toggle blame."
    if getattr(tab, "large_view", None) is not None:
        return "Blame needs a text editor tab; this file is too large to blame here."
    if getattr(tab, "hex_view", None) is not None:
        return "Blame needs a text editor tab; this file is binary and has no lines to blame."
    return "Blame needs a text editor tab; this file is not open as text."


def install_history(window, get_repo: Callable[[], Repository | None]) -> HistoryCommands:
    """Register the history, file history, blame and conflict commands in ``window``'s menu
    "Git" (enabled while ``get_repo()`` returns a repository) and return what opens the views."""
    commands = HistoryCommands(window, get_repo)
    has_repo = lambda: get_repo() is not None  # noqa: E731
    add = window.commands.add
    add(SHOW_HISTORY, "Show History", commands.show_history, category="Git", menu="Git", enabled=has_repo)
    add(SHOW_FILE_HISTORY, "Show File History", commands.show_file_history, category="Git", menu="Git",
        enabled=has_repo, context=("explorer",), applies_to=lambda path: Path(path).is_file())
    # Enabled with a repository, not only with a text editor: the palette hides disabled commands,
    # and from a large-file, binary or history tab Toggle Blame says why it cannot blame there.
    add(OPEN_CHANGES, "Open Changes", commands.open_changes, category="Git", menu="Git", enabled=has_repo)
    add(TOGGLE_BLAME, "Toggle Blame", commands.toggle_blame, category="Git", menu="Git", enabled=has_repo)
    add(RESOLVE_CONFLICTS, "Resolve Conflicts…", commands.resolve_conflicts, category="Git", menu="Git",
        enabled=has_repo)
    window.on_event(INDEX_CHANGED, commands._on_index_changed)
    return commands

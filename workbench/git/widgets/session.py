"""One window's Git session: its repository, its status, and every Git operation it runs.

Widgets (the Source Control panel, the branch button, the stash list, the commands) share one
``GitSession`` and never run git themselves: each operation goes through the window's task
runner (off the GUI thread), its error is shown with ``window.show_error`` (a ``GitError``
message is written for users), and the status is refreshed after it, only for the touched
paths when that is enough. The session also refreshes when a file is saved in an editor (that
path only) and when the window is activated (in full, at most every few seconds). A repository
made or removed outside the app (``git init`` or ``rm -rf .git`` in a terminal) is noticed by
watching the project folder for its ``.git`` entry, and looked for again on window activation.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
import weakref
from pathlib import Path
from typing import Any, Callable, Iterable

from PySide6.QtCore import QEvent, QFileSystemWatcher, QObject, QTimer, Signal
from PySide6.QtWidgets import QMessageBox, QPushButton

from workbench.qt.tasks import Operation

log = logging.getLogger(__name__)

INDEX_CHANGED = "git.index_changed"
"""The window event of a changed index or working tree (the diff view sends it after staging)."""

FULL_REFRESH_INTERVAL_S = 3.0
"""A window activation refreshes everything at most this often (a status of a big repository
costs what git costs)."""

PERIODIC_REFRESH_MS = 5000
"""While the window is active, the status is re-read this often (a full status of 20,000 files
takes ~40 ms) so that changes made outside the app show without a click."""

WATCH_DEBOUNCE_MS = 300
"""A burst of changes to .git (a checkout writes the index, HEAD and refs) gives one refresh."""

MAX_REFRESH_PATHS = 200
"""An operation touching more paths refreshes the whole status: a pathspec of thousands of paths
costs far more (20-40 s for 20,000) than a full status."""

REMOTE_OPERATIONS = frozenset({"push", "pull", "fetch", "sync", "pushTags", "forcePush", "flowPush", "flowPublish"})
"""Operations that talk to a remote; while one runs the commit box is locked (amending the commit
being pushed would make the branch diverge)."""

IDENTITY_HINT = "Git does not know who you are"


class DiffTabs:
    """The diff tabs a window opened, and the mode its new diff tabs open in (the one chosen last).

    The window's tab widget is where an open diff is looked up; this list is for windows whose
    tabs cannot be searched (test windows)."""

    def __init__(self) -> None:
        self._views: list[weakref.ref] = []
        self.last_mode: str | None = None
        """"side-by-side" or "inline" as last chosen in one of the window's diff tabs; None before."""

    def remember(self, view: QObject) -> None:
        """Keep ``view`` (weakly) among the window's diff tabs."""
        self._views[:] = [ref for ref in self._views if _alive(ref())]
        self._views.append(weakref.ref(view))

    def views(self) -> list[QObject]:
        """The diff views opened in the window that are still open."""
        return [view for view in (ref() for ref in self._views) if _alive(view)]


def _alive(view: QObject | None) -> bool:
    from shiboken6 import isValid

    return view is not None and isValid(view)


class GitSession(QObject):
    """The Git side of one project window."""

    sig_status_changed = Signal(object)
    """A fresh ``RepoStatus`` (after any refresh, full or for a few paths)."""

    sig_repository_changed = Signal()
    """The repository was found, created, or is known to be missing (``repo`` is None then)."""

    sig_busy_changed = Signal(bool)
    """True while at least one Git operation (not a status refresh) runs."""

    sig_operations_changed = Signal()
    """An operation started or finished (``busy``, ``remote_busy`` may have changed)."""

    sig_refreshing_changed = Signal(bool)
    """True while the status is being re-read."""

    def __init__(self, window, parent: QObject | None = None):
        super().__init__(parent or window)
        self.window = window
        self.repo = None
        self.cache = None
        self.status = None
        self.state = None
        """The ``RepoState`` read with the last full refresh (a merge in progress, …)."""
        self.opened = False
        """True once the project folder was looked at (``repo`` None then means: no repository)."""
        self.last_error: str | None = None
        self.diff_tabs = DiffTabs()
        """The window's diff tabs and the mode new ones open in."""
        self._ids = itertools.count(1)
        self._running: dict[str, str] = {}
        """Running operations: task key → operation name."""
        self._refreshing = False
        self._pending: set[str] | None = set()
        self._pending_requested = False
        self._last_full = 0.0
        self._refresh_timer = QTimer(self)
        self._refresh_timer.setSingleShot(True)
        self._refresh_timer.timeout.connect(self._start_refresh)
        self._watched_editors: set[int] = set()
        self._announcing = False
        self._git_signature: tuple | None = None
        """What .git looked like (mtimes and sizes) after the last full status: a watcher event
        that leaves it unchanged was our own status rewriting the index."""
        self._watcher = QFileSystemWatcher(self)
        self._watcher.fileChanged.connect(self._on_git_changed)
        self._watcher.directoryChanged.connect(self._on_git_changed)
        self._watch_timer = QTimer(self)
        self._watch_timer.setSingleShot(True)
        self._watch_timer.setInterval(WATCH_DEBOUNCE_MS)
        self._watch_timer.timeout.connect(self._on_git_settled)
        self._periodic_timer = QTimer(self)
        self._periodic_timer.setInterval(PERIODIC_REFRESH_MS)
        self._periodic_timer.timeout.connect(self._on_periodic)
        self._root_had_git: bool | None = None
        """Whether the project folder had a .git entry when the repository was last looked for."""
        # Only the project folder itself (one watch, not its tree): a .git entry appearing or
        # going away is what makes the folder a repository or not.
        self._root_watcher = QFileSystemWatcher(self)
        self._root_watcher.directoryChanged.connect(lambda _path: self._root_timer.start())
        self._root_timer = QTimer(self)
        self._root_timer.setSingleShot(True)
        self._root_timer.setInterval(WATCH_DEBOUNCE_MS)
        self._root_timer.timeout.connect(self._on_root_settled)
        window.installEventFilter(self)
        window.tabs.currentChanged.connect(lambda _index: self._watch_editors())
        window.on_event(INDEX_CHANGED, self._on_index_changed)
        window.on_event("editor.saved", self._on_editor_saved_event)
        self._watch_editors()

    # --- repository ---------------------------------------------------------------------------

    def open(self) -> None:
        """Look for the repository of the project folder (in the background), and look again
        whenever a .git entry appears in it or goes away."""
        root = str(self.window.project.root)
        if root not in self._root_watcher.directories():
            self._root_watcher.addPath(root)
        self._look_for_repository()

    def _look_for_repository(self) -> None:
        if self.window.tasks.is_running("git.init"):
            return  # the init sets the repository it made
        root = self.window.project.root
        self._root_had_git = _has_git_entry(root)
        self.window.tasks.run("git.open", _find_repository, root, on_done=self._on_repository_found,
                              on_error=self._on_open_failed)

    def _on_repository_found(self, repo) -> None:
        """``repo`` (None: no repository) was found; the views change only if it is another one."""
        if self.opened and _same_repository(repo, self.repo):
            return
        self._set_repository(repo)

    def _on_root_settled(self) -> None:
        if _has_git_entry(self.window.project.root) != self._root_had_git:
            self._look_for_repository()

    def _set_repository(self, repo) -> None:
        from workbench.git.status import StatusCache

        if self._refreshing:
            # A status of the repository being replaced: its answer must not show for the new one.
            self.window.tasks.cancel("git.status")
            self._refreshing = False
            self.sig_refreshing_changed.emit(False)
        self.repo = repo
        self.cache = StatusCache(repo) if repo is not None else None
        self.status = self.state = None
        self.opened = True
        self._git_signature = None
        self._watch_git()
        self.sig_repository_changed.emit()
        if repo is not None:
            self._periodic_timer.start()
            self.refresh(force=True)
        else:
            self._periodic_timer.stop()

    def _on_open_failed(self, error: Exception) -> None:
        from workbench.git.repository import NotARepository

        if not isinstance(error, NotARepository):
            if self.opened:
                log.warning("Looking for the Git repository again failed: %s", error)  # nobody asked
            else:
                self._report(error)
        self._on_repository_found(None)

    def init_repository(self) -> Operation:
        """Make the project folder a repository (``git init``) and start using it."""
        from workbench.git.repository import init_repository

        operation = Operation("init", "Git")

        def done(repo) -> None:
            operation.result, operation.finished = repo, True
            self._root_had_git = _has_git_entry(self.window.project.root)
            self.window.statusBar().showMessage(f"Initialised a Git repository in {repo.root}", 5000)
            self._set_repository(repo)

        def failed(error: Exception) -> None:
            operation.error, operation.finished = error, True
            self._report(error)

        self.window.tasks.run("git.init", init_repository, self.window.project.root,
                              on_done=done, on_error=failed, title="Initialising repository")
        return operation

    # --- operations ---------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return bool(self._running)

    @property
    def remote_busy(self) -> bool:
        """True while a push, pull, fetch or sync runs."""
        return any(name.split(".")[0] in REMOTE_OPERATIONS for name in self._running.values())

    @property
    def refreshing(self) -> bool:
        return self._refreshing

    def run(self, name: str, function: Callable[..., Any], *args: Any, title: str = "",
            paths: Iterable[str] | None = None, refresh: bool = True,
            on_done: Callable[[Any], None] | None = None, on_error: Callable[[Exception], None] | None = None,
            **kwargs: Any) -> Operation:
        """Run ``function(repo, *args, **kwargs)`` off the GUI thread; then refresh the status
        (only ``paths`` when given) and call ``on_done(result)``. Errors are shown to the user
        (and passed to ``on_error``)."""
        operation = Operation(name, "Git")
        if self.repo is None:
            operation.error = RuntimeError("This folder is not a Git repository.")
            operation.finished = True
            self._report(operation.error)
            return operation
        key = f"git.{name}#{next(self._ids)}"  # distinct keys: two stages must not cancel each other
        was_busy = self.busy
        self._running[key] = name
        if paths is not None:
            paths = list(paths)
            if len(paths) > MAX_REFRESH_PATHS:
                paths = None
        if not was_busy:
            self.sig_busy_changed.emit(True)
        self.sig_operations_changed.emit()

        def finish() -> None:
            self._running.pop(key, None)
            if refresh:
                self.refresh(paths=paths, force=True)
                self._announce_index_change(paths)
            if not self.busy:
                self.sig_busy_changed.emit(False)
            self.sig_operations_changed.emit()

        def done(result: Any) -> None:
            operation.result, operation.finished = result, True
            finish()
            if on_done is not None:
                on_done(result)

        def failed(error: Exception) -> None:
            operation.error, operation.finished = error, True
            finish()
            self._report(error)
            if on_error is not None:
                on_error(error)

        self.window.tasks.run(key, function, self.repo, *args, on_done=done, on_error=failed, title=title,
                              **kwargs)
        return operation

    def query(self, name: str, function: Callable[..., Any], *args: Any,
              on_done: Callable[[Any], None], **kwargs: Any) -> None:
        """Read something (branches, stashes …) off the GUI thread; a newer query of the same
        ``name`` drops the older answer."""
        if self.repo is None:
            return
        self.window.tasks.run(f"git.query.{name}", function, self.repo, *args, on_done=on_done,
                              on_error=self._report, **kwargs)

    def _announce_index_change(self, paths: Iterable[str] | None) -> None:
        """Tell the window's other Git views (open diffs, conflicts) that the index or the
        working tree changed; our own refresh is already on its way."""
        self._announcing = True
        try:
            self.window.handle_event(INDEX_CHANGED, {"paths": list(paths)} if paths is not None else {})
        finally:
            self._announcing = False

    def confirm(self, question: str) -> bool:
        """Ask before a destructive operation (tests replace this method)."""
        answer = QMessageBox.question(self.window, "Git", question,
                                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                                      QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    def choose(self, question: str, choices: list[str]) -> str | None:
        """Ask which of ``choices`` (button labels) to take; None when cancelled (tests replace
        this method)."""
        box = QMessageBox(QMessageBox.Icon.Question, "Git", question, QMessageBox.StandardButton.Cancel,
                          self.window)
        buttons = {box.addButton(choice, QMessageBox.ButtonRole.AcceptRole): choice for choice in choices}
        box.exec()
        clicked = box.clickedButton()
        return buttons.get(clicked) if isinstance(clicked, QPushButton) else None

    # --- questions shared by the panel and the commands --------------------------------------

    def confirm_amend(self) -> bool:
        """True when amending is fine: the last commit is not on the upstream yet, or the user
        says to amend anyway."""
        status = self.status
        if (status is None or status.head is None or not status.upstream or status.upstream_gone
                or status.ahead > 0):
            return True
        return self.confirm(f"This commit is already pushed to {status.upstream}; amending it will make your "
                            f"branch diverge. Amend anyway?")

    def commit_function(self, amend: bool):
        """The function a commit should run, after the checks both the commit box and the
        Git: Commit command make; None when the user is told no, or says no."""
        from workbench.git.commits import commit

        if self.remote_busy:
            self.window.show_error("A push, pull or fetch is running; commit when it is over.")
            return None
        if amend and not self.confirm_amend():
            return None
        if not amend and self.should_stage_all_first():
            if not self.confirm("There are no staged changes. Stage all changes and commit?"):
                return None
            return stage_all_and_commit
        return commit

    def should_stage_all_first(self) -> bool:
        """True when a commit would find nothing staged but there are changes to stage."""
        status, state = self.status, self.state
        if status is None or status.staged or status.conflicted or (state is not None and state.in_progress):
            return False
        return bool(status.unstaged or status.untracked)

    def ask_pull_rebase(self) -> tuple[bool, bool | None]:
        """(go on, rebase) for pulling the current branch's upstream: a branch that has diverged
        and no pull.rebase / branch.<name>.rebase setting asks Merge or Rebase; otherwise
        (True, None), the config decides."""
        status = self.status
        if (self.repo is None or status is None or status.branch is None or not status.upstream
                or not (status.ahead > 0 and status.behind > 0)):
            return True, None
        if status.pull_mode_configured:  # read with the status, off the GUI thread
            return True, None
        answer = self.choose(
            f"{status.branch} and {status.upstream} have diverged ({status.ahead} commit(s) here, "
            f"{status.behind} there). Merge them (a merge commit), or rebase your commits on top of "
            f"{status.upstream}?", ["Merge", "Rebase"])
        if answer is None:
            return False, None
        return True, answer == "Rebase"

    def show_pull_conflicts(self, doing: str = "Pulling") -> None:
        """After a failed pull: when it stopped on conflicts, say so and open the conflict view."""

        def show(paths: list[str]) -> None:
            if not paths:
                return
            self.window.show_error(
                f"{doing} stopped on {len(paths)} conflicted file(s): {', '.join(paths[:5])}. "
                f"Resolve them (Git: Resolve Conflicts…), then commit or continue.")
            if "git.resolveConflicts" in self.window.commands:
                self.window.commands.execute("git.resolveConflicts")

        self.query("conflictedPaths", _conflicted_paths, on_done=show)

    def _report(self, error: Exception) -> None:
        from workbench.git.errors import GitError

        if isinstance(error, GitError):
            from workbench.git.flow import INIT_HINT

            message = str(error)
            if message.startswith(IDENTITY_HINT):
                message += " Run Git: Set Identity… to set them for this repository."
            # In the window the way to set git-flow up is its dialog, not a shell command.
            message = message.replace(INIT_HINT, "Set it up with Git Flow: Init… (in the Git menu or the "
                                                 "command palette).")
        else:
            log.error("Git operation failed", exc_info=error)
            message = f"The Git operation failed: {error}"
        self.last_error = message
        # git's own words (hook output, the remote's answer) behind "Show Details…".
        self.window.show_error(message, getattr(error, "details", ""))

    # --- status -------------------------------------------------------------------------------

    def refresh(self, paths: Iterable[str | Path] | None = None, force: bool = False) -> None:
        """Re-read the status: of ``paths`` only, or in full (``paths`` None). A full refresh
        that is not ``force``\\ d waits until FULL_REFRESH_INTERVAL_S after the last one."""
        if self.cache is None:
            return
        if paths is None:
            self._pending = None
        elif self._pending is not None:
            self._pending.update(str(p) for p in paths)
            if len(self._pending) > MAX_REFRESH_PATHS:
                self._pending = None  # cheaper in full than as a huge pathspec
        self._pending_requested = True
        delay = 0
        if paths is None and not force:
            delay = max(0.0, self._last_full + FULL_REFRESH_INTERVAL_S - time.monotonic())
        if not self._refreshing:
            self._refresh_timer.start(int(delay * 1000))

    def _start_refresh(self) -> None:
        if self._refreshing or not self._pending_requested or self.cache is None:
            return
        paths, self._pending, self._pending_requested = self._pending, set(), False
        self._refreshing = True
        self.sig_refreshing_changed.emit(True)
        full = paths is None
        if full:
            self._last_full = time.monotonic()
        self.window.tasks.run("git.status", _read_status, self.cache, None if full else sorted(paths),
                              on_done=self._on_status, on_error=self._on_status_failed)

    def _on_status(self, result) -> None:
        status, state, signature = result
        self._refreshing = False
        self.status = status
        if state is not None:
            self.state = state
        if signature is not None:
            self._git_signature = signature
        self.sig_refreshing_changed.emit(False)
        self.sig_status_changed.emit(status)
        if self._pending_requested:
            self._refresh_timer.start(0)

    def _on_status_failed(self, error: Exception) -> None:
        self._refreshing = False
        log.warning("Git status failed: %s", error)
        self.sig_refreshing_changed.emit(False)
        if self.repo is not None and not self.repo.git_dir.exists():
            self._look_for_repository()  # removed from under us
        elif self._pending_requested:
            self._refresh_timer.start(0)

    # --- what triggers a refresh --------------------------------------------------------------

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.window and event.type() == QEvent.Type.WindowActivate:
            self._on_activated()
        return False

    def _on_activated(self) -> None:
        # The user may have used git in a terminal: changed the repository, made one (here or
        # in a folder above, which no watcher sees) or removed it.
        if not self.opened:
            return
        if self.repo is None or not self.repo.git_dir.exists():
            self._look_for_repository()
        else:
            self.refresh()

    def _watch_git(self) -> None:
        """Watch .git/index, HEAD and the refs folders; git replaces these files (write a lock
        file, rename it over), which drops them from the watcher, so this runs again after every
        change."""
        if self.repo is None:
            watched = self._watcher.files() + self._watcher.directories()
            if watched:
                self._watcher.removePaths(watched)
            return
        wanted = [str(path) for path in _watched_git_paths(self.repo.git_dir) if path.exists()]
        watched = set(self._watcher.files() + self._watcher.directories())
        missing = [path for path in wanted if path not in watched]
        if missing:
            self._watcher.addPaths(missing)

    def _on_git_changed(self, _path: str) -> None:
        self._watch_timer.start()  # restarted by every event of a burst

    def _on_git_settled(self) -> None:
        self._watch_git()
        if self.repo is None or self.busy:
            return  # an operation's own refresh follows it
        if not self.repo.git_dir.exists():
            self._look_for_repository()  # removed (of a repository around the project too)
            return
        if self._git_signature is not None and _git_signature(self.repo.git_dir) == self._git_signature:
            return  # our own status rewrote the index's stat data
        self.refresh(force=True)

    def _on_periodic(self) -> None:
        if self.repo is not None and self.window.isActiveWindow() and not self.busy:
            self.refresh()

    def _watch_editors(self) -> None:
        for tab in self.window.editors():
            if id(tab) in self._watched_editors:
                continue
            self._watched_editors.add(id(tab))
            tab.sig_modified_changed.connect(lambda modified, t=tab: self._on_editor_modified(t, modified))
            tab.destroyed.connect(lambda _obj=None, key=id(tab): self._watched_editors.discard(key))

    def _on_editor_modified(self, tab, modified: bool) -> None:
        # Unmodified again: the buffer was saved (or undone back to the file on disk).
        if not modified:
            self._refresh_file(tab.path)

    def _on_editor_saved_event(self, data: object) -> None:
        if isinstance(data, dict) and data.get("path"):
            self._refresh_file(Path(str(data["path"])))

    def _refresh_file(self, path: Path) -> None:
        if self.repo is None:
            return
        try:
            path.resolve().relative_to(self.repo.root.resolve())
        except ValueError:
            return
        self.refresh(paths=[str(path)])

    def _on_index_changed(self, data: object) -> None:
        if self._announcing:
            return
        paths = data.get("paths") if isinstance(data, dict) else None
        self.refresh(paths=paths or None, force=True)


def _find_repository(root: Path):
    """The repository of ``root``, or None when it is in none (in a worker)."""
    from workbench.git.repository import NotARepository, open_repository  # loaded after the first paint

    try:
        return open_repository(root)
    except NotARepository:
        return None


def _same_repository(found, shown) -> bool:
    if found is None or shown is None:
        return found is shown
    return found.git_dir == shown.git_dir


def _has_git_entry(root: Path) -> bool:
    """Whether ``root`` holds a .git folder or file (a stat: cheap enough for every change of
    the folder)."""
    return os.path.lexists(root / ".git")


def _read_status(cache, paths: list[str] | None, cancel=None):
    """(status, repository state, .git signature) in a worker; the state and the signature only
    in full."""
    from workbench.git.remotes import pull_mode_configured
    from workbench.git.repo_state import repository_state

    status = cache.refresh(paths, cancel=cancel)
    # Whether a pull of a diverged branch must ask Merge or Rebase, read here so that the
    # question needs no git call on the GUI thread.
    status.pull_mode_configured = bool(status.branch and status.ahead and status.behind
                                       and pull_mode_configured(cache.repo, status.branch))
    if paths is not None:
        # No signature: the index may also hold changes outside ``paths`` (a terminal's).
        return status, None, None
    # Read after the status: git status may rewrite the index, and that is not a change.
    return status, repository_state(cache.repo), _git_signature(cache.repo.git_dir)


def _conflicted_paths(repo) -> list[str]:
    result = repo.run(["diff", "--name-only", "--diff-filter=U", "-z"], check=False)
    return [path for path in result.text.split("\0") if path] if result.returncode == 0 else []


def _watched_git_paths(git_dir: Path) -> list[Path]:
    refs = git_dir / "refs"
    paths = [git_dir / "index", git_dir / "HEAD", git_dir, refs, refs / "heads", refs / "tags",
             refs / "remotes"]
    remotes = refs / "remotes"
    if remotes.is_dir():
        paths += sorted(p for p in remotes.iterdir() if p.is_dir())
    return paths


def _git_signature(git_dir: Path) -> tuple:
    """The mtimes and sizes of what the watcher watches (and packed-refs)."""
    signature = []
    for path in [*_watched_git_paths(git_dir), git_dir / "packed-refs"]:
        try:
            stat = path.stat()
        except OSError:
            signature.append((str(path), None))
            continue
        signature.append((str(path), stat.st_mtime_ns, stat.st_size))
    return tuple(signature)


def stage_all_and_commit(repo, message: str, amend: bool = False, sign_off: bool = False):
    """Stage every change (``git add -A``), then commit it."""
    from workbench.git.commits import commit
    from workbench.git.staging import stage_paths

    stage_paths(repo, ["."])
    return commit(repo, message, amend=amend, sign_off=sign_off)

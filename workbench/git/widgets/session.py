"""One window's Git session: its repository, its status, and every Git operation it runs.

Widgets (the Source Control panel, the branch button, the stash list, the commands) share one
``GitSession`` and never run git themselves: each operation goes through the window's task
runner (off the GUI thread), its error is shown with ``window.show_error`` (a ``GitError``
message is written for users), and the status is refreshed after it, only for the touched
paths when that is enough. The session also refreshes when a file is saved in an editor (that
path only) and when the window is activated (in full, at most every few seconds).
"""

from __future__ import annotations

import itertools
import logging
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from PySide6.QtCore import QEvent, QObject, QTimer, Signal
from PySide6.QtWidgets import QMessageBox

log = logging.getLogger(__name__)

INDEX_CHANGED = "git.index_changed"
"""The window event of a changed index or working tree (the diff view sends it after staging)."""

FULL_REFRESH_INTERVAL_S = 3.0
"""A window activation refreshes everything at most this often (a status of a big repository
costs what git costs)."""


class Operation:
    """The handle of one Git operation the session started (returned by commands, for scripts
    and tests): ``finished`` once it is over, then ``result`` or ``error``."""

    def __init__(self, name: str):
        self.name = name
        self.finished = False
        self.result: Any = None
        self.error: Exception | None = None

    @property
    def succeeded(self) -> bool:
        return self.finished and self.error is None

    def __repr__(self) -> str:
        state = "running" if not self.finished else ("failed" if self.error else "done")
        return f"<Git operation {self.name}: {state}>"


class GitSession(QObject):
    """The Git side of one project window."""

    sig_status_changed = Signal(object)
    """A fresh ``RepoStatus`` (after any refresh, full or for a few paths)."""

    sig_repository_changed = Signal()
    """The repository was found, created, or is known to be missing (``repo`` is None then)."""

    sig_busy_changed = Signal(bool)
    """True while at least one Git operation (not a status refresh) runs."""

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
        self._ids = itertools.count(1)
        self._running: set[str] = set()
        self._refreshing = False
        self._pending: set[str] | None = set()
        self._pending_requested = False
        self._last_full = 0.0
        self._refresh_timer = QTimer(self)
        self._refresh_timer.setSingleShot(True)
        self._refresh_timer.timeout.connect(self._start_refresh)
        self._watched_editors: set[int] = set()
        self._announcing = False
        window.installEventFilter(self)
        window.tabs.currentChanged.connect(lambda _index: self._watch_editors())
        window.on_event(INDEX_CHANGED, self._on_index_changed)
        window.on_event("editor.saved", self._on_editor_saved_event)
        self._watch_editors()

    # --- repository ---------------------------------------------------------------------------

    def open(self) -> None:
        """Look for the repository of the project folder (in the background)."""
        from workbench.git.repository import open_repository  # Git services load after the first paint.

        self.window.tasks.run("git.open", open_repository, self.window.project.root,
                              on_done=self._set_repository, on_error=self._on_open_failed)

    def _set_repository(self, repo) -> None:
        from workbench.git.status import StatusCache

        self.repo = repo
        self.cache = StatusCache(repo) if repo is not None else None
        self.status = self.state = None
        self.opened = True
        self.sig_repository_changed.emit()
        if repo is not None:
            self.refresh(force=True)

    def _on_open_failed(self, error: Exception) -> None:
        from workbench.git.repository import NotARepository

        if not isinstance(error, NotARepository):
            self._report(error)
        self._set_repository(None)

    def init_repository(self) -> Operation:
        """Make the project folder a repository (``git init``) and start using it."""
        from workbench.git.repository import init_repository

        operation = Operation("init")

        def done(repo) -> None:
            operation.result, operation.finished = repo, True
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

    def run(self, name: str, function: Callable[..., Any], *args: Any, title: str = "",
            paths: Iterable[str] | None = None, refresh: bool = True,
            on_done: Callable[[Any], None] | None = None, on_error: Callable[[Exception], None] | None = None,
            **kwargs: Any) -> Operation:
        """Run ``function(repo, *args, **kwargs)`` off the GUI thread; then refresh the status
        (only ``paths`` when given) and call ``on_done(result)``. Errors are shown to the user
        (and passed to ``on_error``)."""
        operation = Operation(name)
        if self.repo is None:
            operation.error = RuntimeError("This folder is not a Git repository.")
            operation.finished = True
            self._report(operation.error)
            return operation
        key = f"git.{name}#{next(self._ids)}"  # distinct keys: two stages must not cancel each other
        was_busy = self.busy
        self._running.add(key)
        if not was_busy:
            self.sig_busy_changed.emit(True)

        def finish() -> None:
            self._running.discard(key)
            if refresh:
                self.refresh(paths=list(paths) if paths is not None else None, force=True)
                self._announce_index_change(paths)
            if not self.busy:
                self.sig_busy_changed.emit(False)

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

    def _report(self, error: Exception) -> None:
        from workbench.git.errors import GitError

        if isinstance(error, GitError):
            message = str(error)
        else:
            log.error("Git operation failed", exc_info=error)
            message = f"The Git operation failed: {error}"
        self.last_error = message
        self.window.show_error(message)

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
        full = paths is None
        if full:
            self._last_full = time.monotonic()
        self.window.tasks.run("git.status", _read_status, self.cache, None if full else sorted(paths),
                              on_done=self._on_status, on_error=self._on_status_failed)

    def _on_status(self, result) -> None:
        status, state = result
        self._refreshing = False
        self.status = status
        if state is not None:
            self.state = state
        self.sig_status_changed.emit(status)
        if self._pending_requested:
            self._refresh_timer.start(0)

    def _on_status_failed(self, error: Exception) -> None:
        self._refreshing = False
        log.warning("Git status failed: %s", error)
        if self._pending_requested:
            self._refresh_timer.start(0)

    # --- what triggers a refresh --------------------------------------------------------------

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.window and event.type() == QEvent.Type.WindowActivate:
            self.refresh()  # the user may have used git in a terminal
        return False

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


def _read_status(cache, paths: list[str] | None, cancel=None):
    """(status, repository state) in a worker; the state (merge in progress …) only in full."""
    from workbench.git.repo_state import repository_state

    status = cache.refresh(paths, cancel=cancel)
    state = repository_state(cache.repo) if paths is None else None
    return status, state

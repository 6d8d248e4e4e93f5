"""What changed in a repository: ``git status --porcelain=v2 -z``, parsed, and a cache that is
refreshed path by path.

``read_status`` runs one ``git status`` and parses its NUL-separated output itself (the parse is a
single pass over the records, so a 20,000-file repository costs what git costs). ``StatusCache``
keeps the last status and, after an action that touched a few files (stage, discard, save),
re-reads only those paths and merges them in instead of re-running a full status.

States are git's own letters: ``M`` modified, ``T`` type changed, ``A`` added, ``D`` deleted,
``R`` renamed, ``C`` copied, ``U`` unmerged, ``.`` unchanged, ``?`` untracked.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from workbench.git.errors import GitError
from workbench.git.repository import Repository
from workbench.tasks import CancelToken

STAGED = "staged"
UNSTAGED = "unstaged"
UNTRACKED = "untracked"
CONFLICTED = "conflicted"

# The XY of an unmerged entry says how the two sides disagree (git status's own words).
CONFLICT_KINDS = {
    "DD": "both deleted",
    "AU": "added by us",
    "UD": "deleted by them",
    "UA": "added by them",
    "DU": "deleted by us",
    "AA": "both added",
    "UU": "both modified",
}

# Status is read in the background while the user works in a terminal too: never take
# index.lock just to refresh stat information (git's advice for IDEs). Pathspecs are file
# names, never globs, so a file called "*.py" means that file.
_STATUS_ENV = {"GIT_OPTIONAL_LOCKS": "0", "GIT_LITERAL_PATHSPECS": "1"}


@dataclass(frozen=True, slots=True)
class FileChange:
    """One changed path in one group (staged, unstaged, untracked or conflicted).

    A file modified both in the index and in the worktree appears twice: once ``staged`` and once
    ``unstaged``. ``orig_path`` is the old name of a rename or copy. ``submodule_state`` is git's
    three flags for a submodule: commit changed (C), tracked changes (M), untracked files (U),
    ``.`` where not.
    """

    path: str
    orig_path: str | None
    index_state: str
    worktree_state: str
    kind: str
    is_submodule: bool = False
    similarity: int | None = None
    submodule_state: str = ""

    @property
    def conflict_kind(self) -> str | None:
        """``"both modified"``, ``"deleted by them"`` … for a conflicted path, else None."""
        if self.kind != CONFLICTED:
            return None
        return CONFLICT_KINDS.get(self.index_state + self.worktree_state, "conflicted")


@dataclass(slots=True)
class RepoStatus:
    """The branch and every changed path of a repository at one moment.

    ``branch`` is None on a detached HEAD; ``head`` is None before the first commit; ``ahead``
    and ``behind`` count commits against ``upstream`` (0 without one); ``upstream_gone`` is true
    when the upstream branch was deleted on the remote. ``pull_mode_configured`` is filled by
    whoever also reads the pull settings (the Source Control session): whether pulling a diverged
    branch has a configured merge-or-rebase answer.
    """

    branch: str | None
    head: str | None
    upstream: str | None = None
    ahead: int = 0
    behind: int = 0
    upstream_gone: bool = False
    staged: list[FileChange] = field(default_factory=list)
    unstaged: list[FileChange] = field(default_factory=list)
    untracked: list[FileChange] = field(default_factory=list)
    conflicted: list[FileChange] = field(default_factory=list)
    pull_mode_configured: bool = False

    @property
    def is_detached(self) -> bool:
        return self.branch is None

    @property
    def is_clean(self) -> bool:
        return not (self.staged or self.unstaged or self.untracked or self.conflicted)

    @property
    def changes(self) -> list[FileChange]:
        """Every entry: conflicted, staged, unstaged, then untracked."""
        return [*self.conflicted, *self.staged, *self.unstaged, *self.untracked]

    def for_path(self, path: str) -> list[FileChange]:
        """The entries of one path (up to two: staged and unstaged)."""
        return [change for change in self.changes if change.path == path]


def read_status(repo: Repository, paths: Iterable[str | Path] | None = None, *,
                cancel: CancelToken | None = None) -> RepoStatus:
    """The status of ``repo``, or only of ``paths`` (files or folders; None or empty: all).

    Branch, head and upstream are always read in full."""
    args = ["status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all"]
    pathspecs = [repo_relative(repo, path) for path in paths or ()]
    if pathspecs:
        args += ["--", *pathspecs]
    result = repo.run(args, cancel=cancel, env=_STATUS_ENV)
    return parse_status(result.stdout)


def parse_status(output: bytes) -> RepoStatus:
    """Parse ``git status --porcelain=v2 -z --branch`` output."""
    status = RepoStatus(branch=None, head=None)
    staged, unstaged = status.staged, status.unstaged
    records = output.decode("utf-8", errors="surrogateescape").split("\0")
    count = len(records)
    i = 0
    while i < count:
        record = records[i]
        i += 1
        if not record:
            continue
        marker = record[0]
        if marker == "1":
            # 1 XY sub mH mI mW hH hI path
            _, xy, sub, _, _, _, _, _, path = record.split(" ", 8)
            x, y = xy[0], xy[1]
            is_submodule = sub[0] == "S"
            sub_state = sub[1:] if is_submodule else ""
            if x != ".":
                staged.append(FileChange(path, None, x, y, STAGED, is_submodule, None, sub_state))
            if y != ".":
                unstaged.append(FileChange(path, None, x, y, UNSTAGED, is_submodule, None, sub_state))
        elif marker == "?":
            status.untracked.append(FileChange(record[2:], None, "?", "?", UNTRACKED))
        elif marker == "2":
            # 2 XY sub mH mI mW hH hI Xscore path NUL origPath
            _, xy, sub, _, _, _, _, _, score, path = record.split(" ", 9)
            orig = records[i]
            i += 1
            x, y = xy[0], xy[1]
            is_submodule = sub[0] == "S"
            sub_state = sub[1:] if is_submodule else ""
            similarity = int(score[1:])
            if x != ".":
                staged.append(FileChange(path, orig if x in "RC" else None, x, y, STAGED,
                                         is_submodule, similarity if x in "RC" else None, sub_state))
            if y != ".":
                unstaged.append(FileChange(path, orig if y in "RC" else None, x, y, UNSTAGED,
                                           is_submodule, similarity if y in "RC" else None, sub_state))
        elif marker == "u":
            # u XY sub m1 m2 m3 mW h1 h2 h3 path
            parts = record.split(" ", 10)
            xy, sub = parts[1], parts[2]
            is_submodule = sub[0] == "S"
            status.conflicted.append(FileChange(parts[10], None, xy[0], xy[1], CONFLICTED, is_submodule,
                                                None, sub[1:] if is_submodule else ""))
        elif marker == "#":
            _read_header(status, record)
    return status


def _read_header(status: RepoStatus, record: str) -> None:
    key, _, value = record[2:].partition(" ")
    if key == "branch.oid":
        status.head = None if value == "(initial)" else value
    elif key == "branch.head":
        status.branch = None if value == "(detached)" else value
    elif key == "branch.upstream":
        status.upstream = value
        # Without a following branch.ab line the upstream no longer exists.
        status.upstream_gone = True
    elif key == "branch.ab":
        ahead, behind = value.split(" ")
        status.ahead, status.behind = int(ahead), -int(behind)
        status.upstream_gone = False


def repo_relative(repo: Repository, path: str | Path) -> str:
    """``path`` (absolute, or relative to the repository root) as a root-relative posix path."""
    path = Path(path)
    if path.is_absolute():
        try:
            path = path.relative_to(repo.root)
        except ValueError:
            try:
                path = path.resolve().relative_to(repo.root.resolve())
            except ValueError:
                raise GitError(f"{path} is outside the repository at {repo.root}; "
                               "choose a file inside it.") from None
    text = path.as_posix()
    return "." if text in ("", ".") else text


class StatusCache:
    """The last status of a repository, refreshed in full or for a few paths.

    ``refresh(["a.py"])`` after staging ``a.py`` re-reads only ``a.py`` and replaces its entries;
    the branch line comes from that same (cheap) call. Safe to call from worker threads.
    """

    def __init__(self, repo: Repository):
        self.repo = repo
        self._status: RepoStatus | None = None
        self._lock = threading.Lock()

    @property
    def status(self) -> RepoStatus | None:
        return self._status

    def refresh(self, paths: Iterable[str | Path] | None = None, *,
                cancel: CancelToken | None = None) -> RepoStatus:
        """Re-read everything (``paths`` None, or nothing cached yet) or only ``paths``."""
        if paths is None or self._status is None:
            fresh = read_status(self.repo, cancel=cancel)
            with self._lock:
                self._status = fresh
            return fresh
        scope = {repo_relative(self.repo, path) for path in paths}
        if not scope:
            return self._status
        if "." in scope:
            return self.refresh(None, cancel=cancel)
        old = self._status
        # A rename is one entry for two paths: re-read both so neither half is lost.
        for change in old.changes:
            if change.orig_path and (_within(change.path, scope) or _within(change.orig_path, scope)):
                scope.update((change.path, change.orig_path))
        part = read_status(self.repo, sorted(scope), cancel=cancel)

        def merged(kept: list[FileChange], fresh: list[FileChange]) -> list[FileChange]:
            outside = [c for c in kept if not (_within(c.path, scope)
                                               or (c.orig_path and _within(c.orig_path, scope)))]
            return sorted(outside + fresh, key=_by_path) if fresh else outside

        part.staged = merged(old.staged, part.staged)
        part.unstaged = merged(old.unstaged, part.unstaged)
        part.untracked = merged(old.untracked, part.untracked)
        part.conflicted = merged(old.conflicted, part.conflicted)
        with self._lock:
            self._status = part
        return part


def _by_path(change: FileChange) -> str:
    return change.path


def _within(path: str, scope: set[str]) -> bool:
    """Whether ``path`` is one of ``scope`` or inside a folder of it."""
    if path in scope:
        return True
    for folder in scope:
        if path.startswith(folder) and path[len(folder):len(folder) + 1] == "/":
            return True
    return False

"""What a run's code was, taken without touching the user's index, HEAD, branches or stash.

Two records, both built in a temporary copy of the index (``GIT_INDEX_FILE``):

- ``take_snapshot``: the commit, the branch, and a patch of the uncommitted changes (``git diff
  HEAD`` plus the untracked text files as new files). A local run writes it to its folder;
  ``git apply git.patch`` on the commit gives back the code the run used.
- ``commit_working_tree``: the working tree as a commit whose parent is HEAD (``git write-tree``
  and ``git commit-tree``), kept on ``refs/workbench/snapshots/<run_id>`` so the run's code stays
  reachable (and can be checked out) after a rebase, an amend or ``git gc``. A clean tree gives
  HEAD itself. A cluster run ships this commit.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from workbench.git.errors import GitError
from workbench.git.repository import NotARepository, Repository, open_repository
from workbench.platform.atomic_files import write_text_atomically

# Untracked files bigger than this (data, weights) are not put in a run's patch; they are listed.
PATCH_MAX_UNTRACKED_BYTES = 1_000_000
# Untracked files bigger than this (datasets, weights) stay out of a snapshot commit and are
# listed: they would go into the user's .git for good, and data reaches a cluster through its
# data sync.
COMMIT_MAX_UNTRACKED_BYTES = 10_000_000
SNAPSHOT_REFS = "refs/workbench/snapshots/"

_DIFF_OPTIONS = ["--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/"]
_FALLBACK_IDENTITY = {
    "GIT_AUTHOR_NAME": "Workbench", "GIT_AUTHOR_EMAIL": "workbench@localhost",
    "GIT_COMMITTER_NAME": "Workbench", "GIT_COMMITTER_EMAIL": "workbench@localhost",
}


@dataclass
class GitSnapshot:
    """A run's code as commit, branch and patch; ``commit`` is None outside a repository."""

    commit: str | None = None
    branch: str | None = None
    dirty: bool = False
    patch: str = ""
    untracked_skipped: list[str] = field(default_factory=list)  # too big, or not text
    error: str = ""  # why there is no snapshot although the folder is in a repository

    def write(self, git_json: Path, git_patch: Path) -> None:
        """Write the record (without the patch) to ``git_json`` and the patch to ``git_patch``."""
        data = {key: value for key, value in asdict(self).items() if key != "patch"}
        write_text_atomically(git_json, json.dumps(data, indent=1) + "\n")
        write_text_atomically(git_patch, self.patch)


@dataclass(frozen=True)
class WorkingTreeCommit:
    commit: str
    dirty: bool
    """True when the working tree differs from HEAD, so ``commit`` is a snapshot commit."""
    ref: str
    """``refs/workbench/snapshots/<run_id>``, pointing at ``commit``."""
    repo_root: Path
    project_subdir: str = ""
    """Where the project sits inside the repository ("" at its root), with ``/`` separators."""
    untracked_skipped: list[str] = field(default_factory=list)
    """Untracked paths left out: bigger than COMMIT_MAX_UNTRACKED_BYTES, or repositories of their
    own."""


def take_snapshot(project_dir: Path | str) -> GitSnapshot:
    """The snapshot of the repository that holds ``project_dir``; an empty one (commit None)
    when it is not in a repository or git is not installed."""
    try:
        repo = open_repository(Path(project_dir))
    except NotARepository:
        return GitSnapshot()
    except GitError as exc:
        return GitSnapshot(error=str(exc))
    try:
        return _snapshot(repo)
    except GitError as exc:
        return GitSnapshot(error=str(exc))


def snapshot_ref(run_id: str) -> str:
    """The ref that keeps run ``run_id``'s snapshot commit."""
    return SNAPSHOT_REFS + run_id


def commit_working_tree(project_dir: Path | str, run_id: str) -> WorkingTreeCommit:
    """The commit that holds ``project_dir``'s working tree, kept on ``snapshot_ref(run_id)``.

    NotARepository when the folder is not in a Git repository; GitError when ``run_id`` cannot
    name a ref or git fails."""
    project_dir = Path(project_dir)
    try:
        repo = open_repository(project_dir)
    except NotARepository:
        raise
    except GitError as exc:
        raise GitError(f"Could not read the project's Git repository: {exc}", exc.details) from exc
    ref = snapshot_ref(run_id)
    if repo.run(["check-ref-format", ref], check=False).returncode != 0:
        raise GitError(f"{run_id!r} cannot name a Git ref; a run id is letters, digits, '-' and '_'.")
    try:
        return _commit(repo, project_dir, run_id, ref)
    except GitError as exc:
        raise GitError(f"Could not take a snapshot of the code: {exc}", exc.details) from exc


def _snapshot(repo: Repository) -> GitSnapshot:
    commit = _head(repo, "HEAD")
    branch = repo.run(["symbolic-ref", "-q", "--short", "HEAD"], check=False).text.strip() or None
    status = repo.run(["status", "--porcelain", "-z", "--untracked-files=all", "--ignore-submodules=dirty"])
    entries = [entry for entry in status.stdout.split(b"\0") if entry]
    untracked = [os.fsdecode(entry[3:]) for entry in entries if entry.startswith(b"?? ")]
    snapshot = GitSnapshot(commit=commit, branch=branch, dirty=bool(entries))
    if not entries:
        return snapshot
    text_files = []
    for relative in untracked:
        if _is_small_text(repo.root / relative):
            text_files.append(relative)
        else:
            snapshot.untracked_skipped.append(relative)
    base = commit or repo.run(["hash-object", "-t", "tree", "--stdin"], input=b"").text.strip()
    with _scratch_index(repo) as env:
        if text_files:
            # Intent-to-add: the files show as new in the diff without their content staged.
            repo.run(["add", "--intent-to-add", "--", *text_files], env=env)
        diff = repo.run(["diff", *_DIFF_OPTIONS, base, "--"], env=env)
    snapshot.patch = diff.stdout.decode("utf-8", errors="replace")
    return snapshot


def _commit(repo: Repository, project_dir: Path, run_id: str, ref: str) -> WorkingTreeCommit:
    head = _head(repo, "HEAD^{commit}")
    with _scratch_index(repo) as env:
        # Literal pathspecs: a file named "*.py" is that file, not a pattern.
        env = {**env, "GIT_LITERAL_PATHSPECS": "1"}
        repo.run(["add", "--update"], env=env)
        others = repo.run(["ls-files", "-z", "--others", "--exclude-standard"], env=env)
        included, skipped = _split_untracked(repo.root, others.stdout)
        if included:
            repo.run(["add", "--pathspec-from-file=-", "--pathspec-file-nul"],
                     input=b"\0".join(os.fsencode(p) for p in included), env=env)
        tree = repo.run(["write-tree"], env=env).text.strip()

    head_tree = repo.run(["rev-parse", f"{head}^{{tree}}"]).text.strip() if head else None
    dirty = tree != head_tree
    commit = _commit_tree(repo, tree, head, run_id) if dirty else head
    repo.run(["update-ref", "-m", f"workbench: code of run {run_id}", ref, commit])
    subdir = project_dir.resolve().relative_to(repo.root.resolve()).as_posix()
    return WorkingTreeCommit(commit=commit, dirty=dirty, ref=ref, repo_root=repo.root,
                             project_subdir="" if subdir == "." else subdir, untracked_skipped=skipped)


def _head(repo: Repository, revision: str) -> str | None:
    result = repo.run(["rev-parse", "--verify", "-q", revision], check=False)
    return result.text.strip() if result.returncode == 0 else None


@contextmanager
def _scratch_index(repo: Repository) -> Iterator[dict[str, str]]:
    """The environment for git commands that work on a temporary copy of the user's index."""
    scratch = tempfile.mkdtemp(prefix="workbench-snapshot-")
    try:
        index = Path(scratch) / "index"
        real_index = _git_path(repo, "index")
        if real_index.is_file():
            # A copy keeps the index's stat data, so only changed files are read and hashed.
            # copy2 keeps the index's own mtime too: git trusts an entry's stat data only when
            # the file is older than the index, and a fresh mtime would hide a same-size edit
            # made in the second the user's index was written.
            shutil.copy2(real_index, index)
        yield {"GIT_INDEX_FILE": str(index)}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _split_untracked(root: Path, listing: bytes) -> tuple[list[str], list[str]]:
    included, skipped = [], []
    for raw in listing.split(b"\0"):
        if not raw:
            continue
        relative = os.fsdecode(raw)
        if relative.endswith("/"):  # a repository of its own inside this one
            skipped.append(relative)
            continue
        try:
            size = (root / relative).lstat().st_size
        except OSError:
            continue  # gone since it was listed
        (skipped if size > COMMIT_MAX_UNTRACKED_BYTES else included).append(relative)
    return included, skipped


def _commit_tree(repo: Repository, tree: str, parent: str | None, run_id: str) -> str:
    args = ["commit-tree", tree, *(["-p", parent] if parent else []),
            "-m", f"Workbench snapshot for run {run_id}",
            "-m", "The working tree (uncommitted changes and untracked files) when the run was started."]
    env = None
    if repo.run(["var", "GIT_COMMITTER_IDENT"], check=False).returncode != 0:
        env = _FALLBACK_IDENTITY  # no user.name/email: a snapshot must not fail for that
    return repo.run(args, env=env).text.strip()


def _git_path(repo: Repository, name: str) -> Path:
    path = Path(repo.run(["rev-parse", "--git-path", name]).text.strip())
    return path if path.is_absolute() else repo.root / path


def _is_small_text(path: Path) -> bool:
    try:
        if not path.is_file() or path.stat().st_size > PATCH_MAX_UNTRACKED_BYTES:
            return False
        with open(path, "rb") as handle:
            return b"\0" not in handle.read(8192)
    except OSError:
        return False

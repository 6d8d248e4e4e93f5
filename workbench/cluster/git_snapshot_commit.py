"""The working tree as a commit: what a cluster run ships, exactly as the user sees it.

Uncommitted changes and untracked files (those Git does not ignore) become a commit whose parent is
HEAD, built in a temporary index (``GIT_INDEX_FILE``) with ``git write-tree`` and
``git commit-tree``: the user's index, HEAD, branches and stash are never touched. A clean tree
gives HEAD itself. Either way the commit is kept on ``refs/workbench/snapshots/<run_id>`` so the
run's code stays reachable (and can be checked out) after a rebase, an amend or ``git gc``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from workbench.cluster.errors import ClusterError

SNAPSHOT_REFS = "refs/workbench/snapshots/"
# Untracked files bigger than this (datasets, weights) stay out of the snapshot and are listed:
# they would go into the user's .git for good, and data reaches the cluster through the data sync.
MAX_UNTRACKED_BYTES = 10_000_000
_FALLBACK_IDENTITY = {
    "GIT_AUTHOR_NAME": "Workbench", "GIT_AUTHOR_EMAIL": "workbench@localhost",
    "GIT_COMMITTER_NAME": "Workbench", "GIT_COMMITTER_EMAIL": "workbench@localhost",
}


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
    """Untracked paths left out: bigger than MAX_UNTRACKED_BYTES, or repositories of their own."""


def snapshot_ref(run_id: str) -> str:
    return SNAPSHOT_REFS + run_id


def commit_working_tree(project_dir: Path | str, run_id: str) -> WorkingTreeCommit:
    """The commit that holds ``project_dir``'s working tree, kept on ``snapshot_ref(run_id)``.

    ClusterError when the folder is not in a Git repository (cluster runs ship code through Git),
    when ``run_id`` cannot name a ref, or when git fails."""
    from workbench.git.errors import GitError
    from workbench.git.repository import NotARepository, open_repository

    project_dir = Path(project_dir)
    try:
        repo = open_repository(project_dir)
    except NotARepository:
        raise ClusterError(
            f"Cluster runs ship the code through Git, and {project_dir} is not in a Git repository. "
            "Make it one (Source Control ▸ Initialise Repository, or `git init`), add a .gitignore "
            "for data and run outputs, commit your code (`git add -A` and `git commit`), then run "
            "on the cluster again.") from None
    except GitError as exc:
        raise ClusterError(f"Could not read the project's Git repository: {exc}") from exc
    try:
        return _commit(repo, project_dir, run_id)
    except GitError as exc:
        raise ClusterError(f"Could not snapshot the code for the cluster run: {exc}") from exc


def _commit(repo, project_dir: Path, run_id: str) -> WorkingTreeCommit:
    ref = snapshot_ref(run_id)
    if repo.run(["check-ref-format", ref], check=False).returncode != 0:
        raise ClusterError(f"{run_id!r} cannot name a Git ref; a run id is letters, digits, '-' and '_'.")
    head_result = repo.run(["rev-parse", "--verify", "-q", "HEAD^{commit}"], check=False)
    head = head_result.text.strip() if head_result.returncode == 0 else None

    scratch = tempfile.mkdtemp(prefix="workbench-snapshot-")
    try:
        index = Path(scratch) / "index"
        real_index = _git_path(repo, "index")
        if real_index.is_file():
            # A copy keeps the index's stat data, so only changed files are read and hashed.
            shutil.copyfile(real_index, index)
        # Literal pathspecs: a file named "*.py" is that file, not a pattern.
        env = {"GIT_INDEX_FILE": str(index), "GIT_LITERAL_PATHSPECS": "1"}
        repo.run(["add", "--update"], env=env)
        others = repo.run(["ls-files", "-z", "--others", "--exclude-standard"], env=env)
        included, skipped = _split_untracked(repo.root, others.stdout)
        if included:
            repo.run(["add", "--pathspec-from-file=-", "--pathspec-file-nul"],
                     input=b"\0".join(os.fsencode(p) for p in included), env=env)
        tree = repo.run(["write-tree"], env=env).text.strip()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    head_tree = repo.run(["rev-parse", f"{head}^{{tree}}"]).text.strip() if head else None
    dirty = tree != head_tree
    commit = _commit_tree(repo, tree, head, run_id) if dirty else head
    repo.run(["update-ref", "-m", f"workbench: code of run {run_id}", ref, commit])
    subdir = project_dir.resolve().relative_to(repo.root.resolve()).as_posix()
    return WorkingTreeCommit(commit=commit, dirty=dirty, ref=ref, repo_root=repo.root,
                             project_subdir="" if subdir == "." else subdir, untracked_skipped=skipped)


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
        (skipped if size > MAX_UNTRACKED_BYTES else included).append(relative)
    return included, skipped


def _commit_tree(repo, tree: str, parent: str | None, run_id: str) -> str:
    args = ["commit-tree", tree, *(["-p", parent] if parent else []),
            "-m", f"Workbench snapshot for run {run_id}",
            "-m", "The working tree (uncommitted changes and untracked files) when the run was started."]
    env = None
    if repo.run(["var", "GIT_COMMITTER_IDENT"], check=False).returncode != 0:
        env = _FALLBACK_IDENTITY  # no user.name/email: a snapshot must not fail for that
    return repo.run(args, env=env).text.strip()


def _git_path(repo, name: str) -> Path:
    path = Path(repo.run(["rev-parse", "--git-path", name]).text.strip())
    return path if path.is_absolute() else repo.root / path

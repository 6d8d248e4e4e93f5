"""What the repository is in the middle of (a merge, a rebase, a cherry-pick …) and where HEAD is.

Read from the files git leaves in the git directory while an operation is stopped: MERGE_HEAD,
rebase-merge/, rebase-apply/, CHERRY_PICK_HEAD, REVERT_HEAD, BISECT_LOG. The git directory is
``repo.git_dir``, which for a linked worktree is its own folder under the main ``.git``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

from workbench.git.conflicts import conflicts_left as count_conflicts
from workbench.git.repository import Repository


class RepoStateKind(enum.StrEnum):
    CLEAN = "clean"
    MERGING = "merging"
    REBASING = "rebasing"
    APPLYING_PATCHES = "applying_patches"  # git am
    CHERRY_PICKING = "cherry_picking"
    REVERTING = "reverting"
    BISECTING = "bisecting"


@dataclass(frozen=True)
class RepoState:
    """Where HEAD is and which operation waits for the user; ``message`` says it in a sentence."""

    kind: RepoStateKind
    detached_head: bool
    head_sha: str | None  # None before the first commit
    branch: str | None  # the checked-out branch; None when HEAD is detached
    has_commits: bool
    conflicts_left: int  # files that still have conflicts
    message: str
    # For a rebase (or git am): the branch being rebased, its new base, and how far it got.
    rebasing_branch: str | None = None
    onto: str | None = None
    commits_applied: int | None = None
    commits_total: int | None = None
    # What is being merged, cherry-picked or reverted (a branch name or a short sha).
    incoming: str | None = None

    @property
    def in_progress(self) -> bool:
        return self.kind is not RepoStateKind.CLEAN


def repository_state(repo: Repository) -> RepoState:
    """The state of ``repo`` now, read from its git directory."""
    git_dir = Path(repo.git_dir)
    branch = _run_text(repo, ["symbolic-ref", "--quiet", "--short", "HEAD"])
    head_sha = _run_text(repo, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
    conflicts = count_conflicts(repo)
    base = dict(detached_head=branch is None, head_sha=head_sha, branch=branch, has_commits=head_sha is not None,
                conflicts_left=conflicts)
    left = _conflicts_phrase(conflicts)

    for folder, kind in ((git_dir / "rebase-merge", RepoStateKind.REBASING),
                         (git_dir / "rebase-apply", RepoStateKind.REBASING)):
        if not folder.is_dir():
            continue
        if (folder / "applying").exists():
            kind = RepoStateKind.APPLYING_PATCHES
        if folder.name == "rebase-merge":
            step, total = _read_int(folder / "msgnum"), _read_int(folder / "end")
        else:
            step, total = _read_int(folder / "next"), _read_int(folder / "last")
        # git stops on the step it is applying: an "edit" stop has committed it (amend is written),
        # a conflict has not.
        applied = None if step is None else (step if (folder / "amend").exists() else step - 1)
        rebasing = _branch_name(_read(folder / "head-name")) or "HEAD"
        onto_sha = _read(folder / "onto")
        onto = _name_of(repo, onto_sha) if onto_sha else None
        if kind is RepoStateKind.APPLYING_PATCHES:
            message = f"Applying patches: {_progress(applied, total, 'patches')}{left}"
        else:
            message = f"Rebasing {rebasing}{f' onto {onto}' if onto else ''}: {_progress(applied, total, 'commits')}{left}"
        return RepoState(kind=kind, message=message, rebasing_branch=rebasing, onto=onto,
                         commits_applied=applied, commits_total=total, **base)

    here = branch or "HEAD"
    merge_head = _read(git_dir / "MERGE_HEAD")
    if merge_head:
        incoming = _name_of(repo, merge_head.split()[0])
        return RepoState(kind=RepoStateKind.MERGING, incoming=incoming,
                         message=f"Merging {incoming} into {here}: "
                                 f"{left.removeprefix(', ') or 'conflicts resolved, commit to finish the merge'}",
                         **base)
    for head_file, kind, verb, finish in (("CHERRY_PICK_HEAD", RepoStateKind.CHERRY_PICKING, "Cherry-picking",
                                           "continue the cherry-pick"),
                                          ("REVERT_HEAD", RepoStateKind.REVERTING, "Reverting",
                                           "continue the revert")):
        sha = _read(git_dir / head_file)
        if sha:
            incoming = _describe_commit(repo, sha)
            return RepoState(kind=kind, incoming=incoming,
                             message=f"{verb} {incoming}: {left.removeprefix(', ') or f'conflicts resolved, {finish}'}",
                             **base)
    sequencer_todo = _read(git_dir / "sequencer" / "todo")
    if sequencer_todo:
        # A series of picks or reverts stopped between two commits.
        kind = RepoStateKind.REVERTING if sequencer_todo.startswith("revert") else RepoStateKind.CHERRY_PICKING
        verb, finish = ("Reverting", "revert") if kind is RepoStateKind.REVERTING else ("Cherry-picking", "cherry-pick")
        return RepoState(kind=kind, message=f"{verb} a series of commits: continue the {finish} or abort it{left}",
                         **base)
    if (git_dir / "BISECT_LOG").exists():
        return RepoState(kind=RepoStateKind.BISECTING,
                         message="Bisecting: mark this commit good or bad, or reset the bisect to stop.", **base)

    if head_sha is None:
        message = f"No commits yet on {here}. Make the first commit."
    elif branch is None:
        message = (f"HEAD is detached at {_describe_commit(repo, head_sha)}. "
                   "Create a branch to keep commits made here.")
    else:
        message = f"On branch {branch}."
    return RepoState(kind=RepoStateKind.CLEAN, message=message, **base)


def _conflicts_phrase(count: int) -> str:
    if count == 0:
        return ""
    return f", {count} conflict{'s' if count != 1 else ''} left"


def _progress(applied: int | None, total: int | None, noun: str) -> str:
    if applied is None or total is None:
        return "in progress"
    return f"{applied} of {total} {noun} applied"


def _branch_name(head_name: str | None) -> str | None:
    if not head_name or head_name == "detached HEAD":
        return None
    return head_name.removeprefix("refs/heads/")


def _name_of(repo: Repository, sha: str) -> str:
    """A branch (preferably local) or tag pointing at ``sha``, else its short sha."""
    names = _run_text(repo, ["for-each-ref", f"--points-at={sha}", "--format=%(refname)",
                             "refs/heads", "refs/remotes", "refs/tags"]) or ""
    refs = names.splitlines()
    for prefix in ("refs/heads/", "refs/remotes/", "refs/tags/"):
        for ref in refs:
            if ref.startswith(prefix) and not ref.endswith("/HEAD"):
                return ref[len(prefix):]
    return _run_text(repo, ["rev-parse", "--short", sha]) or sha[:7]


def _describe_commit(repo: Repository, sha: str) -> str:
    described = _run_text(repo, ["log", "-1", "--format=%h “%s”", sha.strip(), "--"])
    return described or sha[:7]


def _run_text(repo: Repository, args: list[str]) -> str | None:
    result = repo.run(args, check=False)
    text = result.text.strip()
    return text if result.returncode == 0 and text else None


def _read(file: Path) -> str | None:
    try:
        return file.read_text(encoding="utf-8", errors="replace").strip() or None
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def _read_int(file: Path) -> int | None:
    text = _read(file)
    return int(text) if text and text.isdigit() else None

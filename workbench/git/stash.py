"""The stash: put local changes aside, list them, look at them, bring them back, throw them away.

Entries are addressed by their index (0 is the newest, ``stash@{0}``); indexes shift when an
entry is dropped or popped, so callers re-list after each change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from workbench.git.errors import GitError
from workbench.git.repository import Repository
from workbench.git.runner import GitResult, describe_failure

__all__ = [
    "StashEntry", "StashedFile",
    "push_stash", "list_stashes", "stash_diff", "stash_files", "apply_stash", "pop_stash", "drop_stash",
]

# "On main: message" (a stash with a message) or "WIP on main: abc1234 subject" (without one).
_SUBJECT = re.compile(r"^(?:WIP on|On) (?P<branch>.+?): (?P<message>.*)$", re.S)


@dataclass(frozen=True)
class StashEntry:
    index: int
    message: str
    branch: str | None
    """The branch that was current when the changes were stashed (None when HEAD was detached)."""
    sha: str


@dataclass(frozen=True)
class StashedFile:
    path: str
    status: str
    """Git's one-letter status: M modified, A added (or untracked), D deleted, R renamed …"""


def push_stash(repo: Repository, message: str | None = None, include_untracked: bool = False,
               keep_index: bool = False) -> StashEntry:
    """Stash the local changes (and untracked files with ``include_untracked``) and clean the
    working tree; ``keep_index`` leaves what is staged in place. Returns the new entry 0."""
    args = ["stash", "push"]
    if message:
        args += ["--message", message]
    if include_untracked:
        args.append("--include-untracked")
    if keep_index:
        args.append("--keep-index")
    before = _top_sha(repo)
    result = repo.run(args, check=False)
    output = result.output
    if result.returncode != 0:
        if "do not have the initial commit" in output:
            raise GitError("This repository has no commits yet, so there is nothing to stash against. "
                           "Make the first commit.", details=output)
        raise GitError(describe_failure(args, output), details=output)
    if _top_sha(repo) == before:
        hint = "" if include_untracked else " (untracked files are stashed only when you include them)"
        raise GitError(f"There are no local changes to stash{hint}.", details=output)
    return list_stashes(repo)[0]


def list_stashes(repo: Repository) -> list[StashEntry]:
    """Every stash entry, newest first."""
    result = repo.run(["stash", "list", "--format=%gd%x00%H%x00%gs"])
    entries = []
    for line in result.text.splitlines():
        selector, sha, subject = line.split("\0", 2)
        index = int(selector[selector.index("{") + 1:-1])
        match = _SUBJECT.match(subject)
        branch, message = (match["branch"], match["message"]) if match else (None, subject)
        entries.append(StashEntry(index=index, message=message,
                                  branch=None if branch == "(no branch)" else branch, sha=sha))
    return entries


def stash_diff(repo: Repository, index: int = 0) -> str:
    """The entry's changes as a unified diff, untracked files included, against the commit it was
    stashed on."""
    return _run(repo, ["stash", "show", "--patch", "--include-untracked", "--no-color", _ref(index)],
                index).text


def stash_files(repo: Repository, index: int = 0) -> list[StashedFile]:
    """The files the entry changes, untracked files included."""
    output = _run(repo, ["stash", "show", "--name-status", "--include-untracked", _ref(index)], index).text
    files = []
    for line in output.splitlines():
        status, *paths = line.split("\t")
        if paths:
            files.append(StashedFile(path=paths[-1], status=status[:1]))
    return files


def apply_stash(repo: Repository, index: int = 0, restore_index: bool = False) -> None:
    """Bring the entry's changes back and keep the entry. ``restore_index`` also restores which
    changes were staged."""
    _apply(repo, "apply", index, restore_index)


def pop_stash(repo: Repository, index: int = 0, restore_index: bool = False) -> None:
    """Bring the entry's changes back and drop it; on conflicts the entry is kept (GitError)."""
    _apply(repo, "pop", index, restore_index)


def drop_stash(repo: Repository, index: int = 0) -> None:
    """Throw the entry away."""
    _run(repo, ["stash", "drop", _ref(index)], index)


def _apply(repo: Repository, command: str, index: int, restore_index: bool) -> None:
    args = ["stash", command] + (["--index"] if restore_index else []) + [_ref(index)]
    result = repo.run(args, check=False)
    if result.returncode == 0:
        return
    output = result.output
    _raise_if_no_entry(output, index)
    conflicted = re.findall(r"^CONFLICT \([^)]*\): .*? in (.+)$", output, re.M)
    kept = "The stash entry is kept: " if command == "pop" else ""
    if conflicted:
        raise GitError(f"Applying the stash made conflicts in {', '.join(conflicted)}. {kept}resolve the "
                       f"conflicts, mark them resolved{', then drop the entry' if kept else ''}.", details=output)
    if "would be overwritten" in output or "already exists, no checkout" in output:
        overwritten = re.search(r"would be overwritten[^\n]*\n((?:\t[^\n]*\n?)+)", output)
        files = [line.strip() for line in overwritten[1].splitlines()] if overwritten else []
        files += re.findall(r"^(\S.*) already exists, no checkout$", output, re.M)
        names = f" ({', '.join(files)})" if files else ""
        raise GitError(f"Applying the stash would overwrite files you have changed{names}. "
                       f"{'The stash entry is kept. ' if kept else ''}"
                       f"Commit or stash your changes first, then try again.", details=output)
    raise GitError(f"{describe_failure(args, output)} {kept}".strip(), details=output)


def _run(repo: Repository, args: list[str], index: int) -> GitResult:
    result = repo.run(args, check=False)
    if result.returncode != 0:
        output = result.output
        _raise_if_no_entry(output, index)
        raise GitError(describe_failure(args, output), details=output)
    return result


def _raise_if_no_entry(output: str, index: int) -> None:
    if "is not a valid reference" in output or "only has" in output or "No stash entries found" in output \
            or "not a stash-like commit" in output:
        raise GitError(f"There is no stash entry {index}. List the stash again: indexes shift when an entry "
                       f"is dropped.", details=output)


def _ref(index: int) -> str:
    return f"stash@{{{index}}}"


def _top_sha(repo: Repository) -> str | None:
    result = repo.run(["rev-parse", "-q", "--verify", "refs/stash"], check=False)
    return result.text.strip() if result.returncode == 0 else None

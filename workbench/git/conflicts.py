"""Conflicts left by a merge, rebase, cherry-pick or revert, and the ways to resolve them.

The conflicted files come from the index (``git ls-files -u``: the stages 1 base, 2 ours,
3 theirs). The hunks of one file are parsed from the conflict markers git wrote into it
(with ``merge.conflictStyle=diff3`` or ``zdiff3`` a hunk also has the base version).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from workbench.git.errors import GitError
from workbench.git.repository import Repository
from workbench.git.status import repo_relative
from workbench.platform.atomic_files import write_text_atomically

Side = Literal["ours", "theirs"]
HunkChoice = Literal["ours", "theirs", "both"]

# What each combination of index stages means, in git status's words.
_KINDS = {
    frozenset({1, 2, 3}): "both modified",
    frozenset({2, 3}): "both added",
    frozenset({1, 3}): "deleted by us",
    frozenset({1, 2}): "deleted by them",
    frozenset({2}): "added by us",
    frozenset({3}): "added by them",
    frozenset({1}): "both deleted",
}

_OURS = re.compile(r"^<{7}(?: (.*))?$")
_BASE = re.compile(r"^\|{7}(?: (.*))?$")
_SPLIT = re.compile(r"^={7}$")
_THEIRS = re.compile(r"^>{7}(?: (.*))?$")
# A marker label that is a bare commit id: what ``git pull`` (which merges the fetched commit) writes.
_FULL_SHA = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")
# The first line of MERGE_MSG: "Merge branch 'main' of https://host/repo", "Merge remote-tracking
# branch 'origin/main'", "Merge tag 'v1.0'", "Merge branches 'a' and 'b'" …
_MERGE_MSG = re.compile(r"^Merge (?:remote-tracking )?(?:branch|tag|commit) '([^']+)'(?: of (\S+))?")


@dataclass(frozen=True)
class ConflictedFile:
    """A file the operation could not merge by itself."""

    path: str
    kind: str  # "both modified", "deleted by them", … as git status says it
    stages: frozenset[int]

    @property
    def has_ours(self) -> bool:
        return 2 in self.stages

    @property
    def has_theirs(self) -> bool:
        return 3 in self.stages


@dataclass(frozen=True)
class LineRange:
    """Lines ``start`` to ``end`` of the file as it is on disk, 1-based and inclusive; an empty
    side has ``end == start - 1``."""

    start: int
    end: int

    def __len__(self) -> int:
        return self.end - self.start + 1


@dataclass(frozen=True)
class ConflictHunk:
    """One ``<<<<<<< … >>>>>>>`` block. Line lists keep their line endings."""

    index: int
    lines: LineRange  # the whole block, markers included
    ours: tuple[str, ...]
    theirs: tuple[str, ...]
    base: tuple[str, ...] | None  # only with the diff3 conflict style
    ours_lines: LineRange
    theirs_lines: LineRange
    base_lines: LineRange | None
    ours_label: str
    theirs_label: str
    base_label: str | None


def conflicted_files(repo: Repository) -> list[ConflictedFile]:
    """The files that still have conflicts, in path order."""
    result = repo.run(["ls-files", "-u", "-z"])
    stages: dict[str, set[int]] = {}
    for record in result.text.split("\0"):
        if not record:
            continue
        info, path = record.split("\t", 1)
        stages.setdefault(path, set()).add(int(info.split()[2]))
    return [ConflictedFile(path=path, kind=_KINDS.get(frozenset(found), "conflicted"), stages=frozenset(found))
            for path, found in sorted(stages.items())]


def conflicts_left(repo: Repository) -> int:
    """How many files still have conflicts."""
    return len(conflicted_files(repo))


def parse_conflicts(text: str) -> list[ConflictHunk]:
    """The conflict hunks in a file's ``text``; GitError for a block with a missing marker."""
    hunks: list[ConflictHunk] = []
    lines = text.splitlines(keepends=True)
    number = 0
    while number < len(lines):
        opening = _OURS.match(lines[number].rstrip("\r\n"))
        if not opening:
            number += 1
            continue
        start = number
        sections: dict[str, list[str]] = {"ours": [], "base": [], "theirs": []}
        starts = {"ours": number + 2}
        labels = {"ours": opening.group(1) or "", "base": None, "theirs": ""}
        section = "ours"
        number += 1
        while True:
            if number >= len(lines):
                raise GitError(f"A conflict that starts on line {start + 1} has no closing >>>>>>> marker. "
                               "Edit the file by hand, then mark it resolved.")
            bare = lines[number].rstrip("\r\n")
            if section == "ours" and _BASE.match(bare):
                section, labels["base"] = "base", _BASE.match(bare).group(1) or ""
                starts["base"] = number + 2
            elif section in ("ours", "base") and _SPLIT.match(bare):
                section = "theirs"
                starts["theirs"] = number + 2
            elif section == "theirs" and _THEIRS.match(bare):
                labels["theirs"] = _THEIRS.match(bare).group(1) or ""
                break
            else:
                sections[section].append(lines[number])
            number += 1
        has_base = "base" in starts
        hunks.append(ConflictHunk(
            index=len(hunks),
            lines=LineRange(start + 1, number + 1),
            ours=tuple(sections["ours"]),
            theirs=tuple(sections["theirs"]),
            base=tuple(sections["base"]) if has_base else None,
            ours_lines=_range(starts["ours"], sections["ours"]),
            theirs_lines=_range(starts["theirs"], sections["theirs"]),
            base_lines=_range(starts["base"], sections["base"]) if has_base else None,
            ours_label=labels["ours"],
            theirs_label=labels["theirs"],
            base_label=labels["base"],
        ))
        number += 1
    return hunks


def file_conflicts(repo: Repository, path: str | Path) -> list[ConflictHunk]:
    """The conflict hunks of the file at ``path`` as it is on disk now."""
    return parse_conflicts(_read(repo, path))


def with_readable_labels(repo: Repository, hunks: list[ConflictHunk]) -> list[ConflictHunk]:
    """``hunks`` with every side label that is a bare commit id replaced by ``readable_label``."""
    names: dict[str, str] = {}

    def name(label: str | None) -> str | None:
        if label is None or not _FULL_SHA.match(label):
            return label
        if label not in names:
            names[label] = readable_label(repo, label)
        return names[label]

    return [replace(hunk, ours_label=name(hunk.ours_label), theirs_label=name(hunk.theirs_label),
                    base_label=name(hunk.base_label)) for hunk in hunks]


def readable_label(repo: Repository, sha: str) -> str:
    """What to call the commit ``sha`` a conflict side came from: the branch MERGE_MSG says was
    merged when ``sha`` is MERGE_HEAD (a pulled branch as its remote-tracking name), else a ref
    name from ``git name-rev``, else a short sha."""
    return _merge_head_name(repo, sha) or _name_rev(repo, sha) or sha[:8]


def _merge_head_name(repo: Repository, sha: str) -> str | None:
    try:
        merge_heads = (repo.git_dir / "MERGE_HEAD").read_text(encoding="utf-8").split()
        first_line = (repo.git_dir / "MERGE_MSG").read_text(encoding="utf-8", errors="replace").partition("\n")[0]
    except OSError:
        return None
    found = _MERGE_MSG.match(first_line.strip())
    # With several heads (an octopus) the message does not say which name is which commit.
    if merge_heads != [sha] or found is None:
        return None
    branch, url = found.groups()
    if re.fullmatch(r"[0-9a-f]{7,64}", branch):
        return None  # "Merge commit '4f4b16cf…'" names no branch
    if url is None:
        return branch
    remote = _remote_for_url(repo, url)
    return f"{remote}/{branch}" if remote else f"{branch} of {url}"


def _remote_for_url(repo: Repository, url: str) -> str | None:
    result = repo.run(["config", "--get-regexp", r"^remote\..*\.url$"], check=False)
    if result.returncode != 0:
        return None

    def bare(text: str) -> str:
        return text.strip().rstrip("/").removesuffix(".git").rstrip("/")

    for line in result.text.splitlines():
        key, _, value = line.partition(" ")
        if bare(value) == bare(url):
            return key.removeprefix("remote.").removesuffix(".url")
    return None


def _name_rev(repo: Repository, sha: str) -> str | None:
    result = repo.run(["name-rev", "--name-only", "--no-undefined", sha], check=False)
    name = result.text.strip() if result.returncode == 0 else ""
    if not name:
        return None
    # "remotes/origin/main" reads as "origin/main"; "tags/v1.0^0" as "v1.0".
    return name.removesuffix("^0").removeprefix("remotes/").removeprefix("tags/")


def resolve_hunk_text(text: str, index: int, choice: HunkChoice) -> str:
    """``text`` with conflict hunk ``index`` replaced by ours, theirs or both (ours first);
    the other hunks keep their markers."""
    hunks = parse_conflicts(text)
    if not 0 <= index < len(hunks):
        raise GitError(f"There is no conflict number {index + 1} in this file any more (it has {len(hunks)}). "
                       "Reload the file.")
    hunk = hunks[index]
    chosen = {"ours": hunk.ours, "theirs": hunk.theirs, "both": hunk.ours + hunk.theirs}.get(choice)
    if chosen is None:
        raise GitError(f"Resolve a conflict with ours, theirs or both, not {choice!r}.")
    lines = text.splitlines(keepends=True)
    return "".join([*lines[:hunk.lines.start - 1], *chosen, *lines[hunk.lines.end:]])


def resolve_hunk(repo: Repository, path: str | Path, index: int, choice: HunkChoice) -> int:
    """Resolve conflict hunk ``index`` of ``path`` with ours, theirs or both, rewriting the file
    (the other hunks keep their markers). Returns how many hunks are left in the file; the file
    is not marked resolved (``mark_resolved``) so the result can be reviewed first."""
    text = resolve_hunk_text(_read(repo, path), index, choice)
    # surrogateescape: bytes that are not UTF-8 go back exactly as they were read.
    write_text_atomically(repo.root / repo_relative(repo, path), text, errors="surrogateescape")
    return len(parse_conflicts(text))


def resolve_file(repo: Repository, path: str | Path, side: Side) -> None:
    """Take the whole file from our side or theirs and mark it resolved. When the chosen side
    deleted the file, the file is deleted."""
    if side not in ("ours", "theirs"):
        raise GitError(f"Take a whole file from ours or theirs, not {side!r}.")
    relative = repo_relative(repo, path)
    conflicted = {item.path: item for item in conflicted_files(repo)}
    item = conflicted.get(relative)
    if item is None:
        raise GitError(f"{relative} has no conflict to resolve. Refresh the list of conflicts.")
    kept = item.has_ours if side == "ours" else item.has_theirs
    if kept:
        repo.run(["checkout", f"--{side}", "--", relative])
        repo.run(["add", "--", relative])
    else:
        repo.run(["rm", "--quiet", "--force", "--", relative])


def mark_resolved(repo: Repository, paths: list[str | Path] | str | Path, force: bool = False) -> None:
    """Mark files resolved (``git add``; a deleted file is removed). Refuses a file that still
    has conflict markers unless ``force``."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    relatives = [repo_relative(repo, path) for path in paths]
    if not force:
        for relative in relatives:
            file = repo.root / relative
            if file.is_file() and has_conflict_markers(file):
                raise GitError(f"{relative} still has conflict markers. Resolve every conflict in it, "
                               "or mark it resolved anyway.")
    for relative in relatives:
        if (repo.root / relative).exists():
            repo.run(["add", "--", relative])
        else:
            repo.run(["rm", "--quiet", "--cached", "--ignore-unmatch", "--", relative])


def has_conflict_markers(file: Path) -> bool:
    """Whether ``file`` still has a conflict marker block (complete or not)."""
    try:
        text = file.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return False
    try:
        return bool(parse_conflicts(text))
    except GitError:
        return True


def abort_merge(repo: Repository) -> None:
    """Stop the merge in progress and go back to the state before it."""
    _run_operation(repo, ["merge", "--abort"], "There is no merge in progress to abort.")


def abort_rebase(repo: Repository) -> None:
    """Stop the rebase in progress and put the branch back where it was."""
    _run_operation(repo, ["rebase", "--abort"], "There is no rebase in progress to abort.")


def continue_rebase(repo: Repository) -> None:
    """Commit the resolved step and go on with the rebase (it may stop again on a conflict)."""
    _require_resolved(repo, "the rebase")
    _run_operation(repo, ["rebase", "--continue"], "There is no rebase in progress to continue.")


def abort_cherry_pick(repo: Repository) -> None:
    """Stop the cherry-pick in progress and go back to the state before it."""
    _run_operation(repo, ["cherry-pick", "--abort"], "There is no cherry-pick in progress to abort.")


def continue_cherry_pick(repo: Repository) -> None:
    """Commit the resolved cherry-pick and go on with the next commit, if any."""
    _require_resolved(repo, "the cherry-pick")
    _run_operation(repo, ["cherry-pick", "--continue"], "There is no cherry-pick in progress to continue.")


def abort_revert(repo: Repository) -> None:
    """Stop the revert in progress and go back to the state before it."""
    _run_operation(repo, ["revert", "--abort"], "There is no revert in progress to abort.")


def _require_resolved(repo: Repository, what: str) -> None:
    left = conflicts_left(repo)
    if left:
        raise GitError(f"{left} file{'s' if left != 1 else ''} still {'have' if left != 1 else 'has'} "
                       f"conflicts. Resolve and mark {'them' if left != 1 else 'it'} resolved before "
                       f"continuing {what}.")


def _run_operation(repo: Repository, args: list[str], nothing_to_do: str) -> None:
    result = repo.run(args, check=False)
    if result.returncode == 0:
        return
    stderr = result.stderr
    if re.search(r"no (merge|rebase|cherry-pick|revert)[^\n]*in progress|There is no merge to abort|"
                 r"MERGE_HEAD missing|No rebase in progress|no cherry-pick or revert in progress", stderr, re.I):
        raise GitError(nothing_to_do, details=stderr)
    from workbench.git.runner import describe_failure

    raise GitError(describe_failure(args, stderr), details=stderr)


def _read(repo: Repository, path: str | Path) -> str:
    relative = repo_relative(repo, path)
    try:
        # surrogateescape: bytes that are not UTF-8 are written back exactly as they were.
        return (repo.root / relative).read_text(encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError:
        raise GitError(f"{relative} is not in the working tree (it was deleted on one side). "
                       "Take ours or theirs for the whole file.") from None


def _range(start: int, lines: list[str]) -> LineRange:
    return LineRange(start, start + len(lines) - 1)

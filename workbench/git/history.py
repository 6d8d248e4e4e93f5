"""The commit history: the log of a branch, of all branches or of one file, and one commit's details.

Everything is read from ``git log`` / ``git diff-tree`` with NUL and unit separators, so names,
summaries and paths with spaces, quotes or non-ASCII letters come through unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from workbench.git.errors import GitError
from workbench.git.repository import Repository
from workbench.git.status import repo_relative
from workbench.tasks import CancelToken

# One record per commit (-z ends records with NUL); fields are split by the ASCII unit separator,
# which git never writes into names, subjects or ref names.
_SEP = "\x1f"
_LOG_FIELDS = ["%H", "%h", "%P", "%an", "%ae", "%aI", "%D", "%s"]
_LOG_FORMAT = _SEP.join(_LOG_FIELDS)
_DETAIL_FIELDS = [*_LOG_FIELDS, "%cn", "%ce", "%cI", "%B"]
_DETAIL_FORMAT = _SEP.join(_DETAIL_FIELDS)


@dataclass(frozen=True)
class CommitEntry:
    """One row of the history view."""

    sha: str
    short_sha: str
    parents: tuple[str, ...]
    author: str
    email: str
    date: datetime  # the author date, timezone-aware
    summary: str
    refs: tuple[str, ...] = ()  # short names of branches, remote branches and tags pointing here
    tags: tuple[str, ...] = ()  # the subset of ``refs`` that are tags
    is_head: bool = False  # HEAD points at this commit

    @property
    def is_merge(self) -> bool:
        return len(self.parents) > 1


@dataclass(frozen=True)
class ChangedFile:
    """A file a commit changed; ``status`` is git's letter: A, M, D, R (renamed), C, T."""

    path: str
    status: str
    old_path: str | None = None  # for renames and copies


@dataclass(frozen=True)
class CommitDetails:
    """Everything the commit panel shows. ``files`` are relative to the first parent."""

    entry: CommitEntry
    message: str  # the full message, with body
    committer: str
    committer_email: str
    committer_date: datetime
    files: tuple[ChangedFile, ...]

    @property
    def sha(self) -> str:
        return self.entry.sha


def log(
    repo: Repository,
    ref: str = "HEAD",
    path: str | Path | None = None,
    limit: int = 500,
    skip: int = 0,
    all_refs: bool = False,
    *,
    cancel: CancelToken | None = None,
) -> list[CommitEntry]:
    """Commits reachable from ``ref`` (or from every branch, tag and HEAD with ``all_refs``),
    newest first and children always before their parents, at most ``limit`` after skipping
    ``skip``. With ``path``, only the commits that changed it; a single file is followed across
    renames. A repository with no commits has an empty history."""
    _check_ref(ref)
    if not all_refs and not has_commits(repo):
        return []
    args = ["log", "-z", f"--format={_LOG_FORMAT}", "--decorate=full", f"--max-count={int(limit)}",
            f"--skip={int(skip)}"]
    relative = repo_relative(repo, path) if path is not None else None
    if relative is None:
        # Children before parents, which the graph lanes rely on.
        args.append("--date-order")
    elif not all_refs and not (repo.root / relative).is_dir():
        # --follow takes exactly one file; it finds the file under its older names.
        args.append("--follow")
    if all_refs:
        # Not --all: it also walks the stash (its "index on main" commits), notes and
        # Workbench's own snapshots of runs' code, which are not part of the project's history.
        args += ["--branches", "--tags", "--remotes"]
        if has_commits(repo):
            args.append("HEAD")  # a detached HEAD too
    else:
        args += ["--end-of-options", ref]
    args += ["--"] if relative is None else ["--", relative or "."]
    result = repo.run(args, check=False, cancel=cancel)
    if result.returncode != 0:
        raise _log_failure(ref, result.stderr)
    return [_parse_entry(record.split(_SEP, len(_LOG_FIELDS) - 1))
            for record in _records(result.text)]


def commit_details(repo: Repository, sha: str, *, cancel: CancelToken | None = None) -> CommitDetails:
    """The full message and the changed files of commit ``sha`` (for a merge, the changes it
    brought into its first parent)."""
    _check_ref(sha)
    result = repo.run(["log", "-1", "-z", f"--format={_DETAIL_FORMAT}", "--decorate=full",
                       "--end-of-options", sha, "--"], check=False, cancel=cancel)
    if result.returncode != 0:
        raise _log_failure(sha, result.stderr)
    records = _records(result.text)
    if not records:
        raise GitError(f"There is no commit {sha}. Refresh the history and pick the commit again.")
    fields = records[0].split(_SEP, len(_DETAIL_FIELDS) - 1)
    entry = _parse_entry(fields[:len(_LOG_FIELDS)])
    committer, committer_email, committer_date, message = fields[len(_LOG_FIELDS):]
    if entry.parents:
        diff = ["diff-tree", "-r", "-z", "-M", "--name-status", entry.parents[0], entry.sha]
    else:
        diff = ["diff-tree", "-r", "-z", "-M", "--name-status", "--root", "--no-commit-id", entry.sha]
    files = _parse_name_status(repo.run(diff, cancel=cancel).text)
    return CommitDetails(entry=entry, message=message.rstrip("\n"), committer=committer,
                         committer_email=committer_email,
                         committer_date=datetime.fromisoformat(committer_date), files=tuple(files))


def has_commits(repo: Repository) -> bool:
    """Whether HEAD points at a commit (false in a fresh repository)."""
    return repo.run(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], check=False).returncode == 0


def parse_refs(decoration: str) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """``(refs, tags, is_head)`` from a ``%D`` decoration written with ``--decorate=full``, for
    example ``HEAD -> refs/heads/main, tag: refs/tags/v1, refs/remotes/origin/main``."""
    refs: list[str] = []
    tags: list[str] = []
    is_head = False
    for item in filter(None, (part.strip() for part in decoration.split(", "))):
        if item.startswith("HEAD -> "):
            is_head = True
            item = item[len("HEAD -> "):]
        elif item == "HEAD":
            is_head = True
            continue
        if item.startswith("tag: "):
            name = _short_ref(item[len("tag: "):])
            tags.append(name)
            refs.append(name)
        elif item.endswith("/HEAD") and item.startswith("refs/remotes/"):
            continue  # origin/HEAD only repeats the remote's default branch
        else:
            refs.append(_short_ref(item))
    return tuple(refs), tuple(tags), is_head


def _short_ref(name: str) -> str:
    for prefix in ("refs/heads/", "refs/tags/", "refs/remotes/"):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def _records(text: str) -> list[str]:
    # Between records git may put a newline after the NUL (when the format ends with a body).
    return [record.lstrip("\n") for record in text.split("\0") if record.strip("\n")]


def _parse_entry(fields: list[str]) -> CommitEntry:
    if len(fields) < len(_LOG_FIELDS):
        raise GitError("Git printed a history this version of Workbench cannot read. Update git or Workbench.",
                       details=repr(fields))
    sha, short_sha, parents, author, email, date, decoration, summary = fields
    refs, tags, is_head = parse_refs(decoration)
    return CommitEntry(sha=sha, short_sha=short_sha, parents=tuple(parents.split()), author=author,
                       email=email, date=datetime.fromisoformat(date), summary=summary, refs=refs,
                       tags=tags, is_head=is_head)


def _parse_name_status(text: str) -> list[ChangedFile]:
    parts = text.split("\0")
    files = []
    index = 0
    while index < len(parts) and parts[index]:
        status = parts[index]
        letter = status[0]
        if letter in "RC":
            files.append(ChangedFile(path=parts[index + 2], status=letter, old_path=parts[index + 1]))
            index += 3
        else:
            files.append(ChangedFile(path=parts[index + 1], status=letter))
            index += 2
    return files


def _check_ref(ref: str) -> None:
    if not ref or ref.startswith("-"):
        raise GitError(f"{ref!r} is not a branch, tag or commit name.")


def _log_failure(ref: str, stderr: str) -> GitError:
    if "unknown revision" in stderr or "bad revision" in stderr or "bad object" in stderr \
            or "ambiguous argument" in stderr:
        return GitError(f"There is no branch, tag or commit named {ref!r}. Check the name, or fetch first.",
                        details=stderr)
    from workbench.git.runner import describe_failure

    return GitError(describe_failure(["log"], stderr), details=stderr)

"""Who last changed each line of a file, from ``git blame --porcelain``.

Without a revision the file is blamed as it is on disk, so lines not committed yet show up as
such (git reports them with a sha of zeros).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

from workbench.git.errors import GitError
from workbench.git.repository import Repository
from workbench.git.status import repo_relative
from workbench.tasks import CancelToken

NOT_COMMITTED_SHA = "0" * 40
NOT_COMMITTED_SUMMARY = "Not committed yet"


@dataclass(frozen=True)
class BlameLine:
    """One line of the file and the commit that last changed it."""

    line_no: int  # 1-based, in the blamed file
    sha: str
    author: str
    email: str
    date: datetime  # the author date, timezone-aware
    summary: str
    text: str  # the line without its line ending
    original_line_no: int  # the line's number in the commit that introduced it
    original_path: str  # the file's name in that commit (differs after a rename)

    @property
    def committed(self) -> bool:
        return self.sha != NOT_COMMITTED_SHA

    @property
    def short_sha(self) -> str:
        return self.sha[:7] if self.committed else ""


@dataclass
class _CommitInfo:
    author: str = ""
    email: str = ""
    date: datetime = datetime.fromtimestamp(0, timezone.utc)
    summary: str = ""
    filename: str = ""


def blame(
    repo: Repository,
    path: str | Path,
    rev: str | None = None,
    *,
    ignore_whitespace: bool = False,
    cancel: CancelToken | None = None,
) -> list[BlameLine]:
    """Each line of ``path`` (at ``rev``, or on disk when ``rev`` is None) with the commit that
    last changed it; lines changed since the last commit have ``committed`` false."""
    relative = repo_relative(repo, path)
    if rev is not None and (not rev or rev.startswith("-")):
        raise GitError(f"{rev!r} is not a branch, tag or commit name.")
    args = ["blame", "--porcelain"]
    if ignore_whitespace:
        args.append("-w")
    if rev is not None:
        args.append(rev)
    args += ["--", relative]
    result = repo.run(args, check=False, cancel=cancel)
    if result.returncode != 0:
        raise _blame_failure(relative, rev, result.stderr, on_disk=(repo.root / relative).exists())
    return parse_porcelain(result.stdout)


def parse_porcelain(output: bytes) -> list[BlameLine]:
    """BlameLines from ``git blame --porcelain`` output (``--line-porcelain`` works too)."""
    commits: dict[str, _CommitInfo] = {}
    lines: list[BlameLine] = []
    current: _CommitInfo | None = None
    sha = ""
    original_line = final_line = 0
    author_time = 0
    for raw in output.split(b"\n"):
        if raw.startswith(b"\t"):
            # The content line ends the entry; it is bytes of the file, possibly not UTF-8.
            text = raw[1:].decode("utf-8", errors="replace").rstrip("\r")
            info = commits[sha]
            lines.append(BlameLine(
                line_no=final_line, sha=sha, author=info.author, email=info.email, date=info.date,
                summary=info.summary, text=text, original_line_no=original_line, original_path=info.filename))
            current = None
            continue
        line = raw.decode("utf-8", errors="replace")
        if current is None:
            if not line:
                continue
            fields = line.split(" ")
            sha, original_line, final_line = fields[0], int(fields[1]), int(fields[2])
            current = commits.setdefault(sha, _CommitInfo())
            continue
        key, _, value = line.partition(" ")
        if key == "author":
            current.author = value
        elif key == "author-mail":
            current.email = value.strip("<>")
        elif key == "author-time":
            author_time = int(value)
        elif key == "author-tz":
            current.date = _aware(author_time, value)
        elif key == "summary":
            current.summary = value
        elif key == "filename":
            current.filename = value
    return [line if line.committed else replace(line, author=NOT_COMMITTED_SUMMARY, summary=NOT_COMMITTED_SUMMARY)
            for line in lines]


def _aware(epoch: int, tz: str) -> datetime:
    sign = -1 if tz.startswith("-") else 1
    digits = tz.lstrip("+-").rjust(4, "0")
    offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:4])) * sign
    return datetime.fromtimestamp(epoch, timezone(offset))


def _blame_failure(relative: str, rev: str | None, stderr: str, on_disk: bool) -> GitError:
    if "no such ref: HEAD" in stderr:
        return GitError("This repository has no commits yet, so there is nothing to blame. Make the first commit.",
                        details=stderr)
    if rev is None and not on_disk:
        return GitError(f"{relative} does not exist in the working tree. Pick a revision to blame it at.",
                        details=stderr)
    if "no such path" in stderr and rev is None:
        return GitError(f"{relative} has never been committed, so there is nothing to blame yet. "
                        "Commit it first.", details=stderr)
    if "no such path" in stderr:
        return GitError(f"{relative} does not exist at {rev or 'HEAD'}. Pick another file or revision.",
                        details=stderr)
    if "bad revision" in stderr or "unknown revision" in stderr or "ambiguous argument" in stderr:
        return GitError(f"There is no branch, tag or commit named {rev!r}.", details=stderr)
    from workbench.git.runner import describe_failure

    return GitError(describe_failure(["blame"], stderr), details=stderr)

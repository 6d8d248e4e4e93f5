"""What a run's code was: the commit, the branch, and a patch of the uncommitted changes.

The patch is ``git diff HEAD`` plus the untracked text files as new files, made with a temporary
copy of the index (``GIT_INDEX_FILE``), so the user's own index, staging and locks are never
touched. ``git apply git.patch`` on the commit gives back the code the run used.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from workbench.project.atomic_file import write_text_atomically

# Untracked files bigger than this (data, weights) are not put in the patch; they are listed.
MAX_UNTRACKED_BYTES = 1_000_000
_DIFF_OPTIONS = ["--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/"]


@dataclass
class GitSnapshot:
    commit: str | None = None
    branch: str | None = None
    dirty: bool = False
    patch: str = ""
    untracked_skipped: list[str] = field(default_factory=list)  # too big, or not text
    error: str = ""  # why there is no snapshot although the folder is in a repository

    def write(self, git_json: Path, git_patch: Path) -> None:
        data = {key: value for key, value in asdict(self).items() if key != "patch"}
        write_text_atomically(git_json, json.dumps(data, indent=1) + "\n")
        write_text_atomically(git_patch, self.patch)


def take_snapshot(project_dir: Path | str) -> GitSnapshot:
    """The snapshot of the repository that holds ``project_dir``; an empty one (commit None)
    when it is not in a repository or git is not installed."""
    from workbench.git.errors import GitError
    from workbench.git.repository import NotARepository, open_repository

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


def _snapshot(repo) -> GitSnapshot:
    head = repo.run(["rev-parse", "--verify", "-q", "HEAD"], check=False)
    commit = head.text.strip() if head.returncode == 0 else None
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
    scratch = tempfile.mkdtemp(prefix="workbench-git-")
    try:
        index = Path(scratch) / "index"
        real_index = Path(repo.run(["rev-parse", "--git-path", "index"]).text.strip())
        real_index = real_index if real_index.is_absolute() else repo.root / real_index
        if real_index.is_file():
            shutil.copyfile(real_index, index)
        env = {"GIT_INDEX_FILE": str(index)}
        if text_files:
            # Intent-to-add: the files show as new in the diff without their content staged.
            repo.run(["add", "--intent-to-add", "--", *text_files], env=env)
        diff = repo.run(["diff", *_DIFF_OPTIONS, base, "--"], env=env)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    snapshot.patch = diff.stdout.decode("utf-8", errors="replace")
    return snapshot


def _is_small_text(path: Path) -> bool:
    try:
        if not path.is_file() or path.stat().st_size > MAX_UNTRACKED_BYTES:
            return False
        with open(path, "rb") as handle:
            return b"\0" not in handle.read(8192)
    except OSError:
        return False

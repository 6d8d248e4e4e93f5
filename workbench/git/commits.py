"""Making commits: the message, amend, sign-off, and the repository's own hooks.

Hooks (pre-commit, commit-msg …) run as they do at a terminal. When one refuses the commit,
git itself says nothing about which one did, so the commit runs with a trace2 event log and the
failed hook is read from it; the hook's output goes to the error's details.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from workbench.git.errors import GitError
from workbench.git.repository import Repository
from workbench.git.runner import GitResult, describe_failure

__all__ = ["CommitInfo", "commit", "last_commit_message"]


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    summary: str


def commit(repo: Repository, message: str, amend: bool = False, sign_off: bool = False,
           allow_empty: bool = False) -> CommitInfo:
    """Commit what is staged with ``message`` (the first commit of a new repository too).

    ``amend`` replaces the last commit, ``sign_off`` adds a Signed-off-by line, ``allow_empty``
    commits even when nothing changed. GitError when the message is empty, nothing is staged, or
    a hook refuses the commit (its output in ``details``)."""
    if not message or not message.strip():
        raise GitError("The commit message is empty. Write a message that says what the change does.")
    options = []
    if amend:
        options.append("--amend")
    if sign_off:
        options.append("--signoff")
    if allow_empty:
        options.append("--allow-empty")
    with tempfile.TemporaryDirectory(prefix="wb-commit-") as folder:
        # A file, not stdin: git may refuse (nothing to amend …) before reading stdin.
        message_file = Path(folder) / "message.txt"
        message_file.write_text(message, encoding="utf-8")
        args = ["commit", f"--file={message_file}", *options]
        trace = Path(folder) / "trace2.json"
        result = repo.run(args, check=False, env={"GIT_TRACE2_EVENT": str(trace)})
        failed_hook = _failed_hook(trace) if result.returncode != 0 else None
    if result.returncode != 0:
        _raise_commit_failure(args, result, failed_hook)
    sha, _, summary = repo.run(["log", "-1", "--format=%H%x00%s"]).text.strip().partition("\0")
    return CommitInfo(sha=sha, summary=summary)


def last_commit_message(repo: Repository) -> str:
    """The full message of the last commit, to start an amend from."""
    result = repo.run(["log", "-1", "--format=%B"], check=False)
    if result.returncode != 0:
        raise GitError("This repository has no commits yet, so there is no last commit to amend.",
                       details=result.stderr)
    return result.text.rstrip("\n")


def _failed_hook(trace: Path) -> tuple[str, int] | None:
    """(hook name, exit code) of the hook that failed, from git's trace2 event log."""
    if not trace.exists():
        return None
    hooks: dict[int, str] = {}
    failed = None
    for line in trace.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == "child_start" and event.get("child_class") == "hook":
            hooks[event["child_id"]] = event.get("hook_name") or os.path.basename(event["argv"][0])
        elif event.get("event") == "child_exit" and event.get("child_id") in hooks and event.get("code"):
            failed = (hooks[event["child_id"]], event["code"])
    return failed


def _raise_commit_failure(args: list[str], result: GitResult, failed_hook: tuple[str, int] | None) -> None:
    # "nothing to commit" and friends go to stdout, so both streams are read.
    output = result.output
    if failed_hook is not None:
        name, code = failed_hook
        raise GitError(f"The {name} hook refused the commit (exit code {code}). "
                       f"Fix what it reports (see details), then commit again.",
                       details=result.stderr.strip() or result.text.strip())
    if "nothing added to commit" in output or "no changes added to commit" in output \
            or "nothing to commit" in output:
        raise GitError("There is nothing to commit: stage the changes you want to commit first.",
                       details=output)
    if "You have nothing to amend" in output:
        raise GitError("This repository has no commits yet, so there is nothing to amend. "
                       "Make the first commit without amend.", details=output)
    raise GitError(describe_failure(args, output), details=output)

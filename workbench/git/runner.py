"""Runs the real ``git`` binary for one repository, with progress, cancel and clear errors.

Commands run with a fixed environment: no terminal prompts (a missing credential is an error,
never a hang), C locale (so messages can be recognised), and no pager or editor.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from workbench.git.errors import GitError
from workbench.tasks import CancelToken, Cancelled, Progress, ProgressCallback

# "Receiving objects:  45% (450/1000)" and the like, as git prints them with --progress.
_PROGRESS = re.compile(rb"([A-Za-z][A-Za-z ]+):\s+(\d{1,3})% \((\d+)/(\d+)\)")


@dataclass(frozen=True)
class GitResult:
    stdout: bytes
    stderr: str
    returncode: int

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", errors="replace")

    @property
    def output(self) -> str:
        """stdout and stderr together: git says some refusals on one, some on the other."""
        return (self.text + self.stderr).strip()


def git_executable() -> str:
    found = shutil.which("git")
    if found is None:
        raise GitError("The git program is not installed. Install git (for example `apt install git`).")
    return found


def git_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "",
        "SSH_ASKPASS": "",
        "GIT_PAGER": "cat",
        "GIT_EDITOR": "true",
        "GIT_MERGE_AUTOEDIT": "no",
        "LC_ALL": "C",
        "LANGUAGE": "C",
        # Background reads (status, diff) must never hold .git/index.lock against the user's own
        # add or commit; only the optional lock for refreshing the index is skipped.
        "GIT_OPTIONAL_LOCKS": "0",
    })
    if extra:
        env.update(extra)
    return env


class GitRunner:
    """``run(["status", "--porcelain=v2"])`` in the repository at ``root``."""

    def __init__(self, root: Path | str, env: dict[str, str] | None = None):
        self.root = Path(root)
        self._env = env or {}

    def run(
        self,
        args: list[str],
        *,
        input: bytes | None = None,
        check: bool = True,
        progress: ProgressCallback | None = None,
        cancel: CancelToken | None = None,
        env: dict[str, str] | None = None,
    ) -> GitResult:
        """Run git with ``args``; GitError (with git's stderr as details) when it fails and
        ``check`` is true. With ``progress``, stderr progress lines are reported as they come;
        with ``cancel``, the process is terminated when the token is cancelled (Cancelled)."""
        command = [git_executable(), "-c", "core.quotepath=off", *args]
        process = subprocess.Popen(
            command,
            cwd=self.root,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=git_environment({**self._env, **(env or {})}),
            # No controlling terminal: ssh cannot ask for a password or a host key and fails
            # instead of hanging. (Not GIT_SSH_COMMAND: it would override core.sshCommand.)
            start_new_session=True,
        )
        stderr_chunks: list[bytes] = []
        reader = threading.Thread(target=self._read_stderr, args=(process, stderr_chunks, progress), daemon=True)
        reader.start()
        stdout = self._communicate(process, input, cancel)
        reader.join()
        stderr = b"".join(stderr_chunks).decode("utf-8", errors="replace")
        result = GitResult(stdout, stderr, process.returncode)
        if check and process.returncode != 0:
            raise GitError(describe_failure(args, stderr), details=stderr)
        return result

    @staticmethod
    def _communicate(process: subprocess.Popen, input: bytes | None, cancel: CancelToken | None) -> bytes:
        if input is not None:
            # From a thread: a large patch could fill the pipe while git fills stdout.
            threading.Thread(target=GitRunner._feed, args=(process, input), daemon=True).start()
        chunks = []
        while True:
            if cancel is not None and cancel.cancelled:
                process.terminate()
                process.wait()
                raise Cancelled()
            chunk = process.stdout.read1(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        process.wait()
        return b"".join(chunks)

    @staticmethod
    def _feed(process: subprocess.Popen, data: bytes) -> None:
        try:
            process.stdin.write(data)
            process.stdin.close()
        except (BrokenPipeError, ValueError):
            pass  # git stopped reading (it failed early); its exit status says why

    @staticmethod
    def _read_stderr(process: subprocess.Popen, sink: list[bytes], progress: ProgressCallback | None) -> None:
        pending = b""
        while True:
            chunk = process.stderr.read1(4096)
            if not chunk:
                break
            sink.append(chunk)
            if progress is None:
                continue
            pending += chunk
            # git redraws its progress line with \r; each piece is one report.
            *pieces, pending = re.split(rb"[\r\n]", pending)
            for piece in pieces:
                match = _PROGRESS.search(piece)
                if match:
                    phase, percent = match.group(1).decode().strip(), int(match.group(2))
                    progress(Progress(f"{phase} {percent}%", percent / 100))


# Recognised failures, in the order they are tried: (pattern in git's stderr, message for the user).
_FAILURES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"index\.lock': File exists"),
     "Another Git process seems to be running in this repository (.git/index.lock exists). "
     "If none is, delete .git/index.lock and try again."),
    (re.compile(r"not a git repository", re.I),
     "This folder is not a Git repository. Initialise one (git init) to track it."),
    (re.compile(r"\[rejected\].*(non-fast-forward|fetch first)|Updates were rejected", re.S),
     "The remote has commits you do not have, so the push was rejected. Pull first, then push again."),
    (re.compile(r"Permission denied \(publickey|Authentication failed|could not read Username", re.I),
     "Authentication failed. Check that your SSH key (or credentials) is accepted by the remote."),
    (re.compile(r"Host key verification failed", re.I),
     "The remote's SSH host key is not known on this machine yet. Run Git: Trust Remote Host Key… "
     "to check its fingerprint and accept it, then try again."),
    (re.compile(r"does not appear to be a git repository", re.I),
     "The remote's address does not lead to a Git repository. Check the remote's URL."),
    (re.compile(r"Could not resolve hostname|Connection refused|Network is unreachable|No route to host|"
                r"Connection timed out|Could not read from remote repository", re.I),
     "The remote cannot be reached. Check the remote's address and your network, then try again."),
    (re.compile(r"Your local changes to the following files would be overwritten", re.I),
     "Your local changes would be overwritten. Commit or stash them first."),
    (re.compile(r"CONFLICT|Automatic merge failed|could not apply", re.I),
     "There are conflicts. Resolve them (take ours or theirs, or edit), mark them resolved, then continue."),
    (re.compile(r"does not have any commits yet|bad default revision 'HEAD'|ambiguous argument 'HEAD'", re.I),
     "This repository has no commits yet. Make the first commit."),
    (re.compile(r"nothing to commit", re.I), "There is nothing to commit."),
    (re.compile(r"There is no tracking information for the current branch|has no upstream branch", re.I),
     "This branch has no upstream branch on a remote. Push it first (that sets its upstream), "
     "or choose the remote branch to pull from."),
    (re.compile(r"No configured push destination|No remote repository specified", re.I),
     "This repository has no remote to push to. Add a remote (for example origin) first."),
    (re.compile(r"Not possible to fast-forward", re.I),
     "Your branch and the remote's have both moved on, and only fast-forward pulls are allowed "
     "(pull.ff=only). Pull with merge or rebase instead."),
    (re.compile(r"cannot (pull with rebase|rebase): You have unstaged changes|"
                r"cannot (pull with rebase|rebase): Your index contains uncommitted changes", re.I),
     "You have local changes, and a rebase needs a clean working tree. Commit or stash them first."),
    (re.compile(r"Please tell me who you are|Author identity unknown|empty ident name", re.I),
     "Git does not know who you are. Set your name and email (user.name, user.email), then commit again."),
    (re.compile(r"Aborting commit due to empty commit message", re.I),
     "The commit message is empty. Write a message that says what the change does."),
    (re.compile(r"refusing to update checked out branch", re.I),
     "The remote is a working copy with this branch checked out, so it refuses the push. "
     "Push to a bare repository, or to another branch."),
]


def describe_failure(args: list[str], stderr: str) -> str:
    """A message a user can act on for a failed ``git args`` with this stderr."""
    for pattern, message in _FAILURES:
        if pattern.search(stderr):
            return message
    last = next((line.strip() for line in reversed(stderr.splitlines()) if line.strip()), "")
    last = re.sub(r"^(fatal|error): ", "", last)
    return f"git {args[0] if args else ''} failed: {last or 'no message'}"

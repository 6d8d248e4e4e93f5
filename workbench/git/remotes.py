"""Remotes: list and add them; fetch, pull and push over any transport git speaks (file://, ssh://).

Network commands report progress (git's ``--progress`` lines, parsed by the runner) and stop on
the cancel token. git runs without a terminal (see runner.py): a key the server refuses is an
error, never a prompt. The ssh command is the user's (core.sshCommand, ~/.ssh/config), or a
``GIT_SSH_COMMAND`` passed through the repository's runner environment.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.git.errors import GitError
from workbench.git.repository import Repository
from workbench.git.runner import GitResult, describe_failure
from workbench.tasks import CancelToken, ProgressCallback

__all__ = [
    "Remote", "PullResult", "PushResult",
    "list_remotes", "add_remote", "remove_remote", "fetch", "pull", "push", "pull_mode",
    "pull_mode_configured", "push_tags", "default_remote",
]


@dataclass(frozen=True)
class Remote:
    name: str
    fetch_url: str
    push_url: str


@dataclass(frozen=True)
class PullResult:
    mode: str
    """"merge" or "rebase": how local and remote commits were combined (from the config)."""
    before: str | None
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True)
class PushResult:
    remote: str
    branch: str
    remote_branch: str
    upstream_set: bool
    """True when this push made ``remote/remote_branch`` the branch's upstream (its first push)."""
    up_to_date: bool


def list_remotes(repo: Repository) -> list[Remote]:
    """The repository's remotes with their fetch and push URLs, by name."""
    urls: dict[str, dict[str, str]] = {}
    for line in repo.run(["remote", "-v"]).text.splitlines():
        name, rest = line.split("\t", 1)
        url, _, kind = rest.rpartition(" ")
        urls.setdefault(name, {})[kind.strip("()")] = url
    return [Remote(name, found.get("fetch", ""), found.get("push", found.get("fetch", "")))
            for name, found in sorted(urls.items())]


def add_remote(repo: Repository, name: str, url: str) -> Remote:
    """Add the remote ``name`` at ``url`` (nothing is fetched yet)."""
    if not url.strip():
        raise GitError("The remote's URL is empty. Give the address of the repository to connect to.")
    args = ["remote", "add", name, url]
    result = repo.run(args, check=False)
    if result.returncode != 0:
        output = result.output
        if "already exists" in output:
            raise GitError(f"A remote named {name} already exists. Choose another name, or change its URL.",
                           details=output)
        if "not a valid remote name" in output:
            raise GitError(f"'{name}' is not a valid remote name. Use letters, digits, '.', '-' or '_'.",
                           details=output)
        raise GitError(describe_failure(args, output), details=output)
    return next(remote for remote in list_remotes(repo) if remote.name == name)


def remove_remote(repo: Repository, name: str) -> None:
    """Remove the remote ``name`` and its remote-tracking branches."""
    args = ["remote", "remove", name]
    result = repo.run(args, check=False)
    if result.returncode != 0:
        output = result.output
        if "No such remote" in output:
            raise GitError(f"There is no remote called {name}.", details=output)
        raise GitError(describe_failure(args, output), details=output)


def fetch(repo: Repository, remote: str | None = None, *, prune: bool = False,
          progress: ProgressCallback | None = None, cancel: CancelToken | None = None) -> None:
    """Fetch ``remote`` (every remote when None) with its tags; ``prune`` drops remote-tracking
    branches deleted on the remote."""
    if remote is None and not list_remotes(repo):
        raise GitError("This repository has no remote to fetch from. Add a remote first.")
    args = ["fetch", "--progress", "--tags"]
    if prune:
        args.append("--prune")
    args += [remote] if remote else ["--all"]
    _run(repo, args, progress=progress, cancel=cancel)


def pull_mode(repo: Repository, branch: str) -> str:
    """"rebase" or "merge": what pulling ``branch`` does, from ``branch.<name>.rebase``, else
    ``pull.rebase``, else merge (git's own default)."""
    for key in (f"branch.{branch}.rebase", "pull.rebase"):
        value = _config(repo, key)
        if value is None:
            continue
        value = value.strip().lower()
        if value in ("merges", "m"):
            return "rebase-merges"
        if value in ("true", "yes", "on", "1", "interactive", "i"):
            return "rebase"
        return "merge"
    return "merge"


def pull_mode_configured(repo: Repository, branch: str) -> bool:
    """True when ``branch.<name>.rebase`` or ``pull.rebase`` says how to pull (else a diverged
    branch is merged only because that is git's default, and the user should choose)."""
    return any(_config(repo, key) is not None for key in (f"branch.{branch}.rebase", "pull.rebase"))


def default_remote(repo: Repository) -> str:
    """The remote a push goes to: the current branch's, else "origin" or the only one."""
    result = repo.run(["symbolic-ref", "-q", "--short", "HEAD"], check=False)
    branch = result.text.strip() if result.returncode == 0 else ""
    return _remote_for_push(repo, branch or "HEAD")


def push_tags(repo: Repository, remote: str | None = None, *, progress: ProgressCallback | None = None,
              cancel: CancelToken | None = None) -> str:
    """Push every tag (``git push --tags``) to ``remote`` (``default_remote`` when None); returns
    the remote."""
    remote = remote or default_remote(repo)
    _run(repo, ["push", "--progress", "--tags", remote], progress=progress, cancel=cancel)
    return remote


def pull(repo: Repository, remote: str | None = None, branch: str | None = None, *,
         rebase: bool | None = None, progress: ProgressCallback | None = None,
         cancel: CancelToken | None = None) -> PullResult:
    """Bring the remote's commits into the current branch: from its upstream, or from
    ``remote``/``branch`` when given. Merge or rebase as the config says (``pull_mode``), unless
    ``rebase`` says otherwise."""
    current = _current_branch(repo, "pull into")
    if remote is None and branch is None and _upstream(repo, current) is None:
        raise GitError(f"Branch {current} has no upstream branch to pull from. Push it first (that sets its "
                       f"upstream), or pull from a chosen remote branch.")
    mode = pull_mode(repo, current) if rebase is None else ("rebase" if rebase else "merge")
    args = ["pull", "--progress"]
    args.append({"merge": "--no-rebase", "rebase": "--rebase", "rebase-merges": "--rebase=merges"}[mode])
    if remote is not None or branch is not None:
        target_remote = remote or _remote_for_push(repo, current)
        args += [target_remote] + ([branch] if branch else [])
    before = _head(repo)
    _run(repo, args, progress=progress, cancel=cancel)
    return PullResult(mode="merge" if mode == "merge" else "rebase", before=before, after=_head(repo) or "")


def push(repo: Repository, remote: str | None = None, branch: str | None = None, *,
         force: bool = False, tags: bool = False, progress: ProgressCallback | None = None,
         cancel: CancelToken | None = None) -> PushResult:
    """Push ``branch`` (the current one by default) to its upstream; on its first push, to a branch
    of the same name on ``remote`` (the branch's or the only/"origin" remote), which becomes its
    upstream. ``force`` overwrites the remote branch only if nobody pushed to it since our last
    fetch (``--force-with-lease``); ``tags`` also pushes the tags."""
    branch = branch or _current_branch(repo, "push")
    if repo.run(["rev-parse", "-q", "--verify", f"refs/heads/{branch}"], check=False).returncode != 0:
        raise GitError(f"There is no local branch called {branch} to push. Make a commit on it first.")
    upstream = _upstream(repo, branch)
    remote = remote or _remote_for_push(repo, branch)
    if upstream is not None and upstream[0] == remote:
        destination, set_upstream = upstream[1], False
    else:
        destination, set_upstream = f"refs/heads/{branch}", upstream is None
    args = ["push", "--progress"]
    if set_upstream:
        args.append("--set-upstream")
    if force:
        args.append("--force-with-lease")
    if tags:
        args.append("--tags")
    args += [remote, f"refs/heads/{branch}:{destination}"]
    result = _run(repo, args, progress=progress, cancel=cancel)
    return PushResult(remote=remote, branch=branch, remote_branch=destination.removeprefix("refs/heads/"),
                      upstream_set=set_upstream, up_to_date="Everything up-to-date" in result.stderr)


def _run(repo: Repository, args: list[str], **options) -> GitResult:
    result = repo.run(args, check=False, **options)
    if result.returncode != 0:
        # Merge conflicts are reported on stdout, so both streams are read.
        output = result.output
        raise GitError(describe_failure(args, output), details=output)
    return result



def _config(repo: Repository, key: str) -> str | None:
    result = repo.run(["config", "--get", key], check=False)
    return result.text.strip() if result.returncode == 0 else None


def _head(repo: Repository) -> str | None:
    result = repo.run(["rev-parse", "-q", "--verify", "HEAD^{commit}"], check=False)
    return result.text.strip() if result.returncode == 0 else None


def _current_branch(repo: Repository, action: str) -> str:
    result = repo.run(["symbolic-ref", "-q", "--short", "HEAD"], check=False)
    if result.returncode != 0:
        raise GitError(f"HEAD is detached (not on a branch), so there is no branch to {action}. "
                       f"Create a branch here or switch to one first.")
    return result.text.strip()


def _upstream(repo: Repository, branch: str) -> tuple[str, str] | None:
    """(remote, remote ref) the branch tracks, from ``branch.<name>.remote`` and ``.merge``."""
    remote, merge = _config(repo, f"branch.{branch}.remote"), _config(repo, f"branch.{branch}.merge")
    if not remote or not merge or remote == ".":
        return None
    return remote, merge


def _remote_for_push(repo: Repository, branch: str) -> str:
    for key in (f"branch.{branch}.pushRemote", "remote.pushDefault", f"branch.{branch}.remote"):
        value = _config(repo, key)
        if value and value != ".":
            return value
    names = [remote.name for remote in list_remotes(repo)]
    if "origin" in names:
        return "origin"
    if len(names) == 1:
        return names[0]
    if not names:
        raise GitError("This repository has no remote. Add a remote (for example origin) first.")
    raise GitError(f"Branch {branch} has no remote yet and there are several ({', '.join(names)}). "
                   f"Choose the remote to push to.")

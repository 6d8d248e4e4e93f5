"""Branches and tags: list, create, switch, rename, delete.

Read from ``git for-each-ref`` (one call for every branch with its upstream and ahead/behind);
changed with ``git branch``, ``git switch`` and ``git tag``. Failures git explains in terms of
its own commands are rewritten to say what to do in the app's terms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from workbench.git.errors import GitError
from workbench.git.repository import Repository
from workbench.git.runner import GitResult, describe_failure

__all__ = [
    "Branch", "Head", "Tag",
    "list_branches", "current_head", "current_branch",
    "create_branch", "switch_branch", "rename_branch", "delete_branch",
    "list_tags", "create_tag", "delete_tag",
]

_SEP = "%00"


@dataclass(frozen=True)
class Branch:
    """A local branch (``refs/heads/…``) or a remote-tracking one (``origin/main``)."""

    name: str
    sha: str
    upstream: str | None = None
    ahead: int = 0
    behind: int = 0
    is_current: bool = False
    is_remote: bool = False
    upstream_gone: bool = False


@dataclass(frozen=True)
class Head:
    """Where HEAD is: on ``branch``, or detached at ``sha``; ``sha`` is None before the first commit."""

    branch: str | None
    sha: str | None

    @property
    def detached(self) -> bool:
        return self.branch is None and self.sha is not None

    @property
    def unborn(self) -> bool:
        return self.sha is None


@dataclass(frozen=True)
class Tag:
    name: str
    sha: str
    """The commit the tag points at."""
    annotated: bool = False
    message: str = ""


def list_branches(repo: Repository, include_remote: bool = True) -> list[Branch]:
    """Local branches, then remote-tracking branches (without the ``origin/HEAD`` alias)."""
    fields = ["%(refname)", "%(refname:short)", "%(objectname)", "%(upstream:short)",
              "%(upstream:track,nobracket)", "%(HEAD)", "%(symref)"]
    refs = ["refs/heads"] + (["refs/remotes"] if include_remote else [])
    output = repo.run(["for-each-ref", f"--format={_SEP.join(fields)}", *refs]).text
    branches = []
    for line in output.splitlines():
        refname, short, sha, upstream, track, head, symref = line.split("\0")
        if symref:
            continue
        ahead = re.search(r"ahead (\d+)", track)
        behind = re.search(r"behind (\d+)", track)
        branches.append(Branch(
            name=short, sha=sha, upstream=upstream or None,
            ahead=int(ahead.group(1)) if ahead else 0, behind=int(behind.group(1)) if behind else 0,
            is_current=head == "*", is_remote=refname.startswith("refs/remotes/"),
            upstream_gone=track == "gone",
        ))
    return branches


def current_head(repo: Repository) -> Head:
    """The current branch, or the detached commit, or an unborn branch before the first commit."""
    symbolic = repo.run(["symbolic-ref", "-q", "--short", "HEAD"], check=False)
    branch = symbolic.text.strip() if symbolic.returncode == 0 else None
    commit = repo.run(["rev-parse", "-q", "--verify", "HEAD^{commit}"], check=False)
    return Head(branch=branch, sha=commit.text.strip() if commit.returncode == 0 else None)


def current_branch(repo: Repository) -> str | None:
    """The current branch's name; None when HEAD is detached."""
    return current_head(repo).branch


def create_branch(repo: Repository, name: str, start_point: str | None = None, switch: bool = False) -> Branch:
    """A new branch at ``start_point`` (HEAD by default); switched to when ``switch``.

    From a remote-tracking branch (``origin/x``) the new branch tracks it."""
    _check_branch_name(repo, name)
    args = ["switch", "-c", name] if switch else ["branch", name]
    if start_point:
        args.append(start_point)
    result = repo.run(args, check=False)
    if result.returncode != 0:
        output = result.output
        if "already exists" in output:
            raise GitError(f"A branch named {name} already exists. Choose another name, or switch to it.",
                           details=output)
        if "not a valid object name" in output or "invalid reference" in output:
            raise GitError(f"There is no branch, tag or commit called {start_point or 'HEAD'} to start "
                           f"{name} from. Make a commit first, or pick an existing start point.", details=output)
        if switch:
            _raise_switch_failure(name, args, result)
        raise GitError(describe_failure(args, output), details=output)
    return _branch(repo, name)


def switch_branch(repo: Repository, name: str) -> None:
    """Switch to the local branch ``name``; a remote branch of that name gets a local tracking
    branch. GitError naming the files when local changes would be overwritten."""
    args = ["switch", name]
    result = repo.run(args, check=False)
    if result.returncode != 0:
        _raise_switch_failure(name, args, result)


@dataclass(frozen=True)
class MergeResult:
    """What merging a branch did: ``conflicts`` lists the files left to resolve (the merge is
    then in progress); ``fast_forward`` when no merge commit was needed."""

    branch: str
    fast_forward: bool
    up_to_date: bool
    conflicts: tuple[str, ...] = ()


def merge_branch(repo: Repository, name: str, no_ff: bool = False, message: str | None = None) -> MergeResult:
    """Merge branch ``name`` into the current one. Conflicts are not an error: the merge stays in
    progress and ``conflicts`` names the files (resolve them, then commit)."""
    args = ["merge", "--no-ff" if no_ff else "--ff", "--no-edit"]
    if message:
        args += ["-m", message]
    result = repo.run([*args, name], check=False)
    output = result.output
    if result.returncode == 0:
        return MergeResult(name, fast_forward="Fast-forward" in output, up_to_date="Already up to date" in output)
    from workbench.git.conflicts import conflicted_files  # only when a merge stopped

    conflicts = tuple(c.path for c in conflicted_files(repo))
    if conflicts:
        return MergeResult(name, fast_forward=False, up_to_date=False, conflicts=conflicts)
    if "not something we can merge" in output:
        raise GitError(f"There is no branch or commit called {name} to merge.", details=output)
    raise GitError(describe_failure(args, output), details=output)


def rename_branch(repo: Repository, old: str, new: str) -> Branch:
    """Rename branch ``old`` to ``new`` (its upstream setting moves with it)."""
    _check_branch_name(repo, new)
    args = ["branch", "-m", old, new]
    result = repo.run(args, check=False)
    if result.returncode != 0:
        output = result.output
        if "already exists" in output:
            raise GitError(f"A branch named {new} already exists. Choose another name.", details=output)
        if "No branch named" in output:
            raise GitError(f"There is no branch called {old} to rename.", details=output)
        raise GitError(describe_failure(args, output), details=output)
    return _branch(repo, new)


def delete_branch(repo: Repository, name: str, force: bool = False) -> None:
    """Delete the local branch ``name``. Without ``force`` a branch whose commits are not merged
    is kept (GitError); with ``force`` it is deleted and those commits are left unreferenced."""
    args = ["branch", "-D" if force else "-d", name]
    result = repo.run(args, check=False)
    if result.returncode != 0:
        output = result.output
        if "not fully merged" in output:
            raise GitError(f"Branch {name} has commits that are not merged anywhere else. Merge it first, "
                           f"or delete it with force to throw those commits away.", details=output)
        if "Cannot delete branch" in output:
            raise GitError(f"Branch {name} is the current branch. Switch to another branch, then delete it.",
                           details=output)
        if "not found" in output:
            raise GitError(f"There is no branch called {name}.", details=output)
        raise GitError(describe_failure(args, output), details=output)


def list_tags(repo: Repository) -> list[Tag]:
    """Every tag, by name, with the commit it points at; annotated tags carry their message."""
    fields = ["%(refname:short)", "%(objecttype)", "%(objectname)", "%(*objectname)", "%(contents)"]
    output = repo.run(["for-each-ref", "--sort=refname", f"--format={_SEP.join(fields)}%01",
                       "refs/tags"]).text
    tags = []
    for record in output.split("\x01"):
        record = record.lstrip("\n")
        if not record:
            continue
        name, kind, sha, target, message = record.split("\0")
        annotated = kind == "tag"
        tags.append(Tag(name=name, sha=target if annotated else sha, annotated=annotated,
                        message=message.strip() if annotated else ""))
    return tags


def create_tag(repo: Repository, name: str, target: str = "HEAD", message: str | None = None) -> Tag:
    """Tag ``target``: annotated when ``message`` is given, lightweight otherwise."""
    if repo.run(["check-ref-format", f"refs/tags/{name}"], check=False).returncode != 0:
        raise GitError(f"'{name}' is not a valid tag name. Use letters, digits, '.', '-', '_' or '/' "
                       f"(no spaces, no '..').")
    args = ["tag"]
    if message is not None:
        if not message.strip():
            raise GitError("The tag message is empty. Write one, or make a lightweight tag without a message.")
        args += ["--annotate", "--cleanup=whitespace", "--message", message]
    args += [name, target]
    result = repo.run(args, check=False)
    if result.returncode != 0:
        output = result.output
        if "already exists" in output:
            raise GitError(f"A tag named {name} already exists. Choose another name, or delete the old tag first.",
                           details=output)
        if "Failed to resolve" in output or "not a valid" in output:
            raise GitError(f"There is no commit called {target} to tag. Make a commit first.", details=output)
        raise GitError(describe_failure(args, output), details=output)
    return next(tag for tag in list_tags(repo) if tag.name == name)


def delete_tag(repo: Repository, name: str) -> None:
    """Delete the local tag ``name`` (a tag already pushed stays on the remote)."""
    args = ["tag", "--delete", name]
    result = repo.run(args, check=False)
    if result.returncode != 0:
        output = result.output
        if "not found" in output:
            raise GitError(f"There is no tag called {name}.", details=output)
        raise GitError(describe_failure(args, output), details=output)


def _branch(repo: Repository, name: str) -> Branch:
    return next(branch for branch in list_branches(repo, include_remote=False) if branch.name == name)


def _check_branch_name(repo: Repository, name: str) -> None:
    if repo.run(["check-ref-format", "--branch", name], check=False).returncode != 0:
        raise GitError(f"'{name}' is not a valid branch name. Use letters, digits, '.', '-', '_' or '/' "
                       f"(no spaces, no '..', not starting with '-').")



def _listed_files(output: str, heading: str) -> list[str]:
    """The tab-indented file names git lists under ``heading``."""
    start = output.find(heading)
    if start < 0:
        return []
    files = []
    for line in output[start:].splitlines()[1:]:
        if not line.startswith("\t"):
            break
        files.append(line.strip())
    return files


def _raise_switch_failure(name: str, args: list[str], result: GitResult) -> None:
    output = result.output
    changed = _listed_files(output, "Your local changes to the following files would be overwritten")
    untracked = _listed_files(output, "untracked working tree files would be")
    if changed or untracked:
        parts = []
        if changed:
            parts.append(f"your local changes to {', '.join(changed)}")
        if untracked:
            parts.append(f"the untracked files {', '.join(untracked)}")
        raise GitError(f"Switching to {name} would overwrite {' and '.join(parts)}. "
                       f"Commit or stash your changes first, then switch.", details=output)
    if "invalid reference" in output or "did not match any" in output:
        raise GitError(f"There is no branch called {name}. Create it, or fetch to see the remote's branches.",
                       details=output)
    raise GitError(describe_failure(args, output), details=output)

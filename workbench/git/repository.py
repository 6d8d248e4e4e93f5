"""A Git repository on disk: finding it, creating it, and the runner bound to it.

The other service modules (status, diff, commits, remotes, stash, history, flow …) take a
``Repository`` as their first argument.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from workbench.git.errors import GitError
from workbench.git.runner import GitRunner


class NotARepository(GitError):
    """The folder is not inside a Git repository; widgets offer ``init_repository`` then."""


@dataclass
class Repository:
    root: Path
    git_dir: Path
    runner: GitRunner = field(repr=False)

    def run(self, args: list[str], **options):
        return self.runner.run(args, **options)


def open_repository(path: Path | str) -> Repository:
    """The repository that holds ``path``; NotARepository when there is none."""
    path = Path(path)
    if not path.exists():
        raise GitError(f"{path} does not exist.")
    folder = path if path.is_dir() else path.parent
    result = GitRunner(folder).run(["rev-parse", "--show-toplevel", "--absolute-git-dir"], check=False)
    if result.returncode != 0:
        raise NotARepository(f"{folder} is not in a Git repository. Initialise one to track its files.",
                             details=result.stderr)
    top, git_dir = result.text.splitlines()[:2]
    root = Path(top)
    return Repository(root=root, git_dir=Path(git_dir), runner=GitRunner(root))


def init_repository(path: Path | str, initial_branch: str = "main") -> Repository:
    """Make ``path`` a new repository (``git init``) and return it."""
    path = Path(path)
    GitRunner(path).run(["init", f"--initial-branch={initial_branch}", str(path)])
    return open_repository(path)

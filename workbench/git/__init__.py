"""The Git capability: a repository service over the real git binary (no Qt), one module per
concern (status, diff, staging, commits, branches, remotes, stash, history, graph, blame,
conflicts, repo_state, flow), and its widgets in ``workbench.git.widgets``.

Import what you need from the module that holds it; this package loads none of them itself.
"""

from workbench.git.errors import GitError
from workbench.git.repository import NotARepository, Repository, init_repository, open_repository
from workbench.git.runner import GitResult, GitRunner, describe_failure

__all__ = [
    "GitError",
    "GitResult",
    "GitRunner",
    "NotARepository",
    "Repository",
    "describe_failure",
    "init_repository",
    "open_repository",
]

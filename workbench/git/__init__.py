"""The Git capability: repository service over the real git binary (no Qt) and its widgets."""

from workbench.git.errors import GitError
from workbench.git.runner import GitResult, GitRunner, describe_failure

__all__ = ["GitError", "GitResult", "GitRunner", "describe_failure"]

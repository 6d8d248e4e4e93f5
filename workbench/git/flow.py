"""The git-flow branching model, over the real git binary.

Our own implementation, not a wrapper of the ``git flow`` CLI, but with the same git config keys
and conventions as git-flow 1.12.3 (AVH edition), so a repository set up with ``git flow init -d``
works here and the reverse:

- ``gitflow.branch.master``, ``gitflow.branch.develop``: the production and integration branches;
- ``gitflow.prefix.feature|bugfix|release|hotfix|support``: branch prefixes (``feature/`` …);
- ``gitflow.prefix.versiontag``: put before a release or hotfix name to make its tag;
- ``gitflow.path.hooks``: where ``pre-flow-*``, ``post-flow-*`` and ``filter-flow-*`` hooks live;
- ``gitflow.branch.<branch>.base``: the branch a feature/bugfix/release/hotfix started from;
- ``gitflow.<kind>.finish.no-ff``, ``gitflow.multi-hotfix``, ``gitflow.allowdirty``: honoured.

Finishing follows the CLI step by step, and each step is skipped when it is already done, so after
a conflict the user resolves, commits, and finishes again, exactly as with the CLI.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from workbench.git.errors import GitError
from workbench.git.repository import Repository
from workbench.tasks import CancelToken, ProgressCallback

KINDS = ("feature", "bugfix", "release", "hotfix", "support")
DEFAULT_PREFIXES: dict[str, str] = {kind: f"{kind}/" for kind in KINDS}
# Kinds whose name is a version: their finish tags, and only one may be open at a time.
VERSIONED_KINDS = ("release", "hotfix")
INIT_HINT = "Set it up with `workbench git flow init` (or `git flow init -d`)."


class FlowNotInitialised(GitError):
    """The repository has no (complete) git-flow configuration."""


class FlowConflict(GitError):
    """A finish stopped on merge conflicts; ``files`` are the conflicted paths."""

    def __init__(self, message: str, files: list[str], details: str = ""):
        super().__init__(message, details)
        self.files = files


@dataclass(frozen=True)
class FlowConfig:
    """The git-flow settings of a repository, as ``git flow init`` writes them."""

    master: str
    develop: str
    prefixes: dict[str, str] = field(default_factory=dict)
    version_tag_prefix: str = ""
    hooks_path: str = ""

    def prefix(self, kind: str) -> str:
        _check_kind(kind)
        if kind not in self.prefixes:
            raise FlowNotInitialised(f"No {kind} branch prefix is set (gitflow.prefix.{kind}). {INIT_HINT}")
        return self.prefixes[kind]

    def branch_name(self, kind: str, name: str) -> str:
        return self.prefix(kind) + name

    def tag_name(self, name: str) -> str:
        return self.version_tag_prefix + name


@dataclass(frozen=True)
class FlowBranch:
    """One git-flow branch: ``kind`` feature, ``name`` login, ``branch`` feature/login."""

    kind: str
    name: str
    branch: str
    base: str | None = None
    current: bool = False


@dataclass(frozen=True)
class FinishResult:
    """What a finish did: the branches merged into, the tag made, and where HEAD is now."""

    kind: str
    name: str
    branch: str
    merged_into: list[str]
    tag: str | None
    deleted: bool
    current_branch: str


# ---------------------------------------------------------------------------------------------
# Reading the configuration


def _config_values(repo: Repository) -> dict[str, str]:
    """Every ``gitflow.*`` key, from all config scopes as ``git config --get`` sees them."""
    result = repo.run(["config", "-z", "--get-regexp", r"^gitflow\."], check=False)
    values: dict[str, str] = {}
    for entry in result.text.split("\0"):
        if entry:
            key, _, value = entry.partition("\n")
            values[key] = value
    return values


def _config_bool(repo: Repository, key: str) -> bool:
    result = repo.run(["config", "--bool", "--get", key], check=False)
    return result.returncode == 0 and result.text.strip() == "true"


def flow_config(repo: Repository) -> FlowConfig | None:
    """The repository's git-flow settings; None when it is not initialised for git-flow (the
    same test as the CLI: both base branches configured, existing and different, a prefix and the
    version tag prefix set)."""
    values = _config_values(repo)
    master, develop = values.get("gitflow.branch.master", ""), values.get("gitflow.branch.develop", "")
    if not master or not develop or master == develop:
        return None
    if not (_local_branch_exists(repo, master) and _local_branch_exists(repo, develop)):
        return None
    if "gitflow.prefix.versiontag" not in values:
        return None
    prefixes = {kind: values[f"gitflow.prefix.{kind}"] for kind in KINDS if f"gitflow.prefix.{kind}" in values}
    if not prefixes:
        return None
    hooks = values.get("gitflow.path.hooks") or str(repo.git_dir / "hooks")
    return FlowConfig(master, develop, prefixes, values["gitflow.prefix.versiontag"], hooks)


def _require_config(repo: Repository) -> FlowConfig:
    config = flow_config(repo)
    if config is None:
        raise FlowNotInitialised(f"{repo.root} is not set up for git-flow. {INIT_HINT}")
    return config


# ---------------------------------------------------------------------------------------------
# Small questions to git


def _local_branches(repo: Repository) -> list[str]:
    out = repo.run(["for-each-ref", "--sort", "refname", "--format=%(refname:short)", "refs/heads"]).text
    return out.split()


def _local_branch_exists(repo: Repository, branch: str) -> bool:
    return _ref_exists(repo, f"refs/heads/{branch}")


def _remote_branch_exists(repo: Repository, remote_branch: str) -> bool:
    return _ref_exists(repo, f"refs/remotes/{remote_branch}")


def _tag_exists(repo: Repository, tag: str) -> bool:
    return _ref_exists(repo, f"refs/tags/{tag}")


def _ref_exists(repo: Repository, ref: str) -> bool:
    return repo.run(["show-ref", "--verify", "--quiet", ref], check=False).returncode == 0


def _has_head(repo: Repository) -> bool:
    return repo.run(["rev-parse", "--quiet", "--verify", "HEAD"], check=False).returncode == 0


def _current_branch(repo: Repository) -> str:
    result = repo.run(["symbolic-ref", "--quiet", "--short", "HEAD"], check=False)
    return result.text.strip() if result.returncode == 0 else ""


def _sha(repo: Repository, rev: str) -> str:
    return repo.run(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"]).text.strip()


def _is_merged_into(repo: Repository, branch: str, target: str) -> bool:
    """True when every commit of ``branch`` is in ``target`` (the CLI's git_is_branch_merged_into)."""
    return repo.run(["merge-base", "--is-ancestor", f"{branch}^{{commit}}", f"{target}^{{commit}}"],
                    check=False).returncode == 0


def _compare_refs(repo: Repository, first: str, second: str) -> int:
    """The CLI's git_compare_refs: 0 equal, 1 first is behind, 2 first is ahead, 3 diverged,
    4 no common ancestor."""
    a, b = _sha(repo, first), _sha(repo, second)
    if a == b:
        return 0
    result = repo.run(["merge-base", a, b], check=False)
    if result.returncode != 0:
        return 4
    base = result.text.strip()
    return 1 if base == a else 2 if base == b else 3


def _conflicted_files(repo: Repository) -> list[str]:
    return repo.run(["diff", "--name-only", "--diff-filter=U"], check=False).text.split()


def _changed_files(repo: Repository) -> list[str]:
    """Tracked files with unstaged or staged changes (untracked files do not count, as in the CLI)."""
    repo.run(["update-index", "-q", "--ignore-submodules", "--refresh"], check=False)
    unstaged = repo.run(["diff-files", "--name-only", "--ignore-submodules"], check=False).text.split()
    staged = repo.run(["diff-index", "--cached", "--name-only", "--ignore-submodules", "HEAD", "--"],
                      check=False).text.split()
    return sorted(set(unstaged) | set(staged))


def _require_clean_tree(repo: Repository, doing: str) -> None:
    conflicted = _conflicted_files(repo)
    if conflicted:
        raise FlowConflict(
            f"A merge is in progress with conflicts in {_file_list(conflicted)}. Resolve them, "
            f"mark them resolved and commit (or abort the merge) before you {doing}.", conflicted)
    changed = _changed_files(repo)
    if changed:
        raise GitError(f"You have uncommitted changes in {_file_list(changed)}. "
                       f"Commit or stash them before you {doing}.")


def _file_list(files: list[str], limit: int = 5) -> str:
    shown = ", ".join(files[:limit])
    return shown + (f" and {len(files) - limit} more" if len(files) > limit else "")


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise GitError(f"Unknown git-flow branch kind {kind!r}; use one of {', '.join(KINDS)}.")


def _check_name(repo: Repository, kind: str, name: str, branch: str) -> None:
    if not name or not name.strip():
        raise GitError(f"Give the {kind} a name.")
    if re.search(r"\s", name):
        suggestion = re.sub(r"\s+", "-", name.strip())
        raise GitError(f"A {kind} name cannot contain spaces or other whitespace: {name!r}. "
                       f"Use - or _ instead, for example {suggestion!r}.")
    result = repo.run(["check-ref-format", "--branch", branch], check=False)
    if result.returncode != 0:
        raise GitError(f"{name!r} cannot be part of a branch name ({branch!r} is not valid). Avoid '..', "
                       "'~', '^', ':', '?', '*', '[', '\\', '@{', a trailing '.' or '.lock', and empty parts.")


def _require_branches_equal(repo: Repository, local: str, remote: str) -> None:
    """The CLI's require_branches_equal: a local branch may be ahead of its remote, not behind."""
    state = _compare_refs(repo, local, remote)
    if state == 1:
        raise GitError(f"{local} is behind {remote}. Pull (fast-forward {local}) first.")
    if state >= 3:
        raise GitError(f"{local} and {remote} have diverged. Merge or rebase {local} with {remote} first.")


def _origin(repo: Repository) -> str:
    return _config_values(repo).get("gitflow.origin") or "origin"


def _base_of(repo: Repository, branch: str) -> str | None:
    result = repo.run(["config", "--local", "--get", f"gitflow.branch.{branch}.base"], check=False)
    return result.text.strip() or None


def _remove_base_section(repo: Repository, branch: str) -> None:
    repo.run(["config", "--local", "--remove-section", f"gitflow.branch.{branch}"], check=False)


# ---------------------------------------------------------------------------------------------
# Hooks: the CLI's pre-flow-<kind>-<action>, post-flow-<kind>-<action> and filter-flow-* scripts


def _hook(config: FlowConfig, name: str) -> Path | None:
    path = Path(config.hooks_path) / name
    return path if path.is_file() and os.access(path, os.X_OK) else None


def _run_hook(repo: Repository, config: FlowConfig, when: str, kind: str, action: str, *args: str) -> None:
    script = _hook(config, f"{when}-flow-{kind}-{action}")
    if script is None:
        return
    result = subprocess.run([str(script), *args], cwd=repo.root, capture_output=True, text=True)
    if when == "pre" and result.returncode != 0:
        raise GitError(f"The hook {script} stopped the {kind} {action} (exit code {result.returncode}).",
                       details=result.stdout + result.stderr)


def _tag_message(repo: Repository, config: FlowConfig, kind: str, message: str | None, tag: str) -> str:
    """The CLI passes the message and the tag to filter-flow-<kind>-finish-tag-message; without
    that hook it echoes both, so ``-m 'rel'`` on 1.0 gives "rel 1.0". Without a message the CLI
    opens an editor; we use the tag name."""
    if not message:
        return tag
    script = _hook(config, f"filter-flow-{kind}-finish-tag-message")
    if script is None:
        return f"{message} {tag}"
    result = subprocess.run([str(script), message, tag], cwd=repo.root, capture_output=True, text=True)
    if result.returncode == 127:
        raise GitError(f"The hook {script} refused the tag message: {result.stdout.strip()}")
    return result.stdout.strip()


# ---------------------------------------------------------------------------------------------
# init


def init(
    repo: Repository,
    master: str | None = None,
    develop: str | None = None,
    prefixes: dict[str, str] | None = None,
    version_tag_prefix: str = "",
) -> FlowConfig:
    """Set the repository up for git-flow, as ``git flow init -d`` does.

    ``master``/``develop`` None pick what the CLI picks: in a repository with no branches,
    ``master`` and ``develop``; otherwise an existing production branch (``production``,
    ``main``, ``master``) and integration branch (``develop``, ``int``, ``integration``). Makes an
    empty initial commit when there is none, creates develop from master and checks it out when
    it is new, and writes the config keys not yet set. An initialised repository is left as it is.
    """
    existing = flow_config(repo)
    if existing is not None:
        return existing
    chosen_prefixes = dict(prefixes or {})
    prefixes = {**DEFAULT_PREFIXES, **chosen_prefixes}
    values = _config_values(repo)
    if _has_head(repo):
        _require_clean_tree(repo, "set up git-flow")
    branches = _local_branches(repo)
    master = master or _guess_branch(repo, values.get("gitflow.branch.master"),
                                     ("production", "main", "master"), branches, exclude=None) or "master"
    if branches and not _local_branch_exists(repo, master):
        if _remote_branch_exists(repo, f"origin/{master}"):
            repo.run(["branch", master, f"origin/{master}"])
        else:
            raise GitError(f"There is no local branch {master!r} to use for production releases. "
                           f"Choose one of: {', '.join(branches)}.")
    others = [b for b in branches if b != master]
    develop = develop or _guess_branch(repo, values.get("gitflow.branch.develop"),
                                       ("develop", "int", "integration", "master"), others,
                                       exclude=master) or "develop"
    if master == develop:
        raise GitError("The production and integration branches must differ.")
    for name in (master, develop):
        _check_name(repo, "branch", name, name)
    repo.run(["config", "gitflow.branch.master", master])
    repo.run(["config", "gitflow.branch.develop", develop])
    created = False
    if not _has_head(repo):
        repo.run(["symbolic-ref", "HEAD", f"refs/heads/{master}"])
        repo.run(["commit", "--allow-empty", "--quiet", "-m", "Initial commit"])
        created = True
    if not _local_branch_exists(repo, develop):
        if _remote_branch_exists(repo, f"origin/{develop}"):
            repo.run(["branch", develop, f"origin/{develop}"])
        else:
            repo.run(["branch", "--no-track", develop, master])
        created = True
    if created:
        repo.run(["checkout", "-q", develop])
    for kind in KINDS:
        if kind in chosen_prefixes or f"gitflow.prefix.{kind}" not in values:
            repo.run(["config", f"gitflow.prefix.{kind}", prefixes[kind]])
    if version_tag_prefix or "gitflow.prefix.versiontag" not in values:
        repo.run(["config", "gitflow.prefix.versiontag", version_tag_prefix])
    if "gitflow.path.hooks" not in values:
        hooks_path = repo.run(["config", "--get", "core.hooksPath"], check=False).text.strip()
        repo.run(["config", "gitflow.path.hooks", hooks_path or str(repo.git_dir / "hooks")])
    return _require_config(repo)


def propose(repo: Repository) -> tuple[FlowConfig, list[str]]:
    """What ``init`` with no choices would write (the branch names it would pick, the prefixes
    already set or the usual ones), and the local branches: for a dialog to offer before
    anything is written."""
    values = _config_values(repo)
    branches = _local_branches(repo)
    master = _guess_branch(repo, values.get("gitflow.branch.master"), ("production", "main", "master"),
                           branches, exclude=None) or (branches[0] if branches else "master")
    develop = _guess_branch(repo, values.get("gitflow.branch.develop"), ("develop", "int", "integration"),
                            [b for b in branches if b != master], exclude=master) or "develop"
    prefixes = {kind: values.get(f"gitflow.prefix.{kind}", DEFAULT_PREFIXES[kind]) for kind in KINDS}
    return FlowConfig(master, develop, prefixes, values.get("gitflow.prefix.versiontag", "")), branches


def _guess_branch(repo: Repository, configured: str | None, guesses: tuple[str, ...],
                  branches: list[str], exclude: str | None) -> str | None:
    if not branches:
        return configured
    for guess in ([configured] if configured else []) + list(guesses):
        if guess != exclude and _local_branch_exists(repo, guess):
            return guess
    return None


# ---------------------------------------------------------------------------------------------
# start


def start(repo: Repository, kind: str, name: str, base: str | None = None) -> FlowBranch:
    """Start the ``kind`` branch ``name`` from ``base`` and check it out.

    ``base`` defaults to develop (feature, bugfix, release) or master (hotfix); a support branch
    needs one: a tag or commit on master. Only one release (and one hotfix, unless
    ``gitflow.multi-hotfix``) may be open at a time.
    """
    config = _require_config(repo)
    _check_kind(kind)
    branch = config.branch_name(kind, name)
    _check_name(repo, kind, name, branch)
    origin = _origin(repo)
    if kind == "support":
        if not base:
            raise GitError(f"A support branch starts from a release: give the base, for example the tag "
                           f"{config.tag_name('1.0')!r}.")
        if repo.run(["rev-parse", "--verify", "--quiet", f"{base}^{{commit}}"], check=False).returncode != 0:
            raise GitError(f"There is no tag, branch or commit named {base!r} to start support {name} from.")
        if not _is_merged_into(repo, base, config.master):
            raise GitError(f"{base!r} is not on {config.master}; a support branch starts from a release there.")
    else:
        base = base or (config.master if kind == "hotfix" else config.develop)
        if not _local_branch_exists(repo, base):
            raise GitError(f"There is no local branch {base!r} to start {kind} {name} from.")
    if kind == "release" or (kind == "hotfix" and not _config_bool(repo, "gitflow.multi-hotfix")):
        open_ones = list_branches(repo, kind)
        if open_ones:
            other = open_ones[0].name
            raise GitError(f"{kind.capitalize()} {other} is still open. Finish {kind} {other} first.")
    if kind != "feature" and kind != "bugfix" and not _config_bool(repo, "gitflow.allowdirty"):
        _require_clean_tree(repo, f"start {kind} {name}")
    if _local_branch_exists(repo, branch) or _remote_branch_exists(repo, f"{origin}/{branch}"):
        verb = "finish it" if kind != "support" else "use it"
        raise GitError(f"There is already a {kind} named {name} ({branch}); {verb} or pick another name.")
    if kind in VERSIONED_KINDS and _tag_exists(repo, config.tag_name(name)):
        raise GitError(f"The tag {config.tag_name(name)} already exists; pick another version.")
    if kind != "support" and _remote_branch_exists(repo, f"{origin}/{base}"):
        _require_branches_equal(repo, base, f"{origin}/{base}")
    hook_name = config.tag_name(name) if kind in VERSIONED_KINDS else name
    if kind != "support":
        _run_hook(repo, config, "pre", kind, "start", hook_name, origin, branch, base)
        repo.run(["config", "--local", f"gitflow.branch.{branch}.base", base])
    repo.run(["checkout", "-q", "-b", branch, base])
    if kind != "support":
        _run_hook(repo, config, "post", kind, "start", hook_name, origin, branch, base)
    return FlowBranch(kind, name, branch, base if kind != "support" else None, current=True)


# ---------------------------------------------------------------------------------------------
# finish


def finish(repo: Repository, kind: str, name: str, message: str | None = None,
           keep: bool = False, squash: bool = False) -> FinishResult:
    """Finish the ``kind`` branch ``name`` as the CLI does.

    feature/bugfix: merge into its base (develop), fast-forward when it is exactly one commit
    ahead and ``gitflow.<kind>.finish.no-ff`` is not set, ``--no-ff`` otherwise. release: merge
    ``--no-ff`` into master, tag it (annotated; the message is "``message`` <tag>"), merge the tag
    into develop. hotfix: the same from master. Then delete the branch unless ``keep``.
    On conflicts, FlowConflict names the files: resolve them, commit, and finish again.
    """
    config = _require_config(repo)
    _check_kind(kind)
    if kind == "support":
        raise GitError("Support branches are not finished: they stay to maintain an old release.")
    branch = config.branch_name(kind, name)
    if not name or not _local_branch_exists(repo, branch):
        open_ones = ", ".join(b.name for b in list_branches(repo, kind)) or "none"
        raise GitError(f"There is no {kind} named {name!r} ({branch}). Open {kind}s: {open_ones}.")
    if kind in ("feature", "bugfix"):
        return _finish_topic(repo, config, kind, name, branch, keep, squash)
    return _finish_versioned(repo, config, kind, name, branch, message, keep, squash)


def _merge_marker(repo: Repository) -> Path:
    return repo.git_dir / ".gitflow" / "MERGE_BASE"


def _finish_topic(repo, config, kind, name, branch, keep, squash) -> FinishResult:
    base = _base_of(repo, branch) or config.develop
    if not _local_branch_exists(repo, base):
        raise GitError(f"{kind.capitalize()} {name} was started from {base!r}, which no longer exists locally.")
    marker = _merge_marker(repo)
    if marker.exists():
        # A previous finish stopped on conflicts; like the CLI, a clean tree means the user
        # either committed the merge (then only the clean-up is left) or gave it up.
        _require_clean_tree(repo, f"finish {kind} {name}")
        finish_base = marker.read_text().strip()
        marker.unlink()
        if _is_merged_into(repo, branch, finish_base):
            deleted = _delete_branch(repo, branch, base, keep, force=squash)
            return FinishResult(kind, name, branch, [finish_base], None, deleted, _current_branch(repo))
    _require_clean_tree(repo, f"finish {kind} {name}")
    origin = _origin(repo)
    for local in (branch, base):
        if _remote_branch_exists(repo, f"{origin}/{local}"):
            _require_branches_equal(repo, local, f"{origin}/{local}")
    _run_hook(repo, config, "pre", kind, "finish", name, origin, branch)
    repo.run(["checkout", "-q", base])
    try:
        if squash:
            repo.run(["merge", "--squash", branch])
            repo.run(["commit", "--no-edit"])
        else:
            ahead = repo.run(["rev-list", "-n2", f"{base}..{branch}"]).text.split()
            no_ff = _config_bool(repo, f"gitflow.{kind}.finish.no-ff") or len(ahead) != 1
            repo.run(["merge", "--no-ff" if no_ff else "--ff", branch])
    except GitError as exc:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(base + "\n")
        raise _conflict(repo, exc, f"Merging {branch} into {base}", f"finish {kind} {name}") from None
    _run_hook(repo, config, "post", kind, "finish", name, origin, branch)
    deleted = _delete_branch(repo, branch, base, keep, force=squash)
    return FinishResult(kind, name, branch, [base], None, deleted, _current_branch(repo))


def _finish_versioned(repo, config, kind, name, branch, message, keep, squash) -> FinishResult:
    base = _base_of(repo, branch) or (config.develop if kind == "release" else config.master)
    if not _local_branch_exists(repo, base):
        raise GitError(f"{kind.capitalize()} {name} was started from {base!r}, which no longer exists locally.")
    _require_clean_tree(repo, f"finish {kind} {name}")
    origin = _origin(repo)
    tag = config.tag_name(name)
    # A release from develop lands on master; any other base (a hotfix's master, or a support
    # branch) takes the branch itself.
    target = config.master if kind == "release" and base == config.develop else base
    # Back into develop only from the standard flow (release from develop, hotfix from master).
    to_develop = (kind == "release" and base == config.develop) or (kind == "hotfix" and base == config.master)
    checks = {branch, target, config.develop} if to_develop else {branch, target}
    for local in sorted(checks):
        if _remote_branch_exists(repo, f"{origin}/{local}"):
            _require_branches_equal(repo, local, f"{origin}/{local}")
    if kind == "hotfix" and not _is_merged_into(repo, branch, target):
        state = _compare_refs(repo, branch, target)
        if state == 0:
            raise GitError(f"Hotfix {name} has no commits yet; commit the fix on {branch} first.")
        if state == 1:
            raise GitError(f"Hotfix {name} is not ahead of {target}; there is nothing to merge.")
        if state == 4:
            raise GitError(f"Hotfix {name} has no common ancestor with {target}.")
    if _tag_exists(repo, tag) and _compare_refs_or_none(repo, branch, f"{tag}^2") != 0:
        raise GitError(f"The tag {tag} already exists and is not the finish of {branch}; "
                       f"delete the tag or finish under another version.")
    _run_hook(repo, config, "pre", kind, "finish", tag, origin, branch)
    doing = f"finish {kind} {name}"
    merged_into = [target]
    if not _is_merged_into(repo, branch, target):
        repo.run(["checkout", "-q", target])
        _merge(repo, branch, target, squash, doing)
    if not _tag_exists(repo, tag):
        if kind == "release":
            repo.run(["checkout", "-q", target])
        # The hotfix CLI tags without checking out: HEAD stays where it is (on the hotfix branch
        # when it had nothing to merge), which decides where the finish ends up.
        repo.run(["tag", "-a", "-m", _tag_message(repo, config, kind, message, tag), tag, target])
    if to_develop:
        merged_into.append(config.develop)
        if not _is_merged_into(repo, config.master, config.develop):
            repo.run(["checkout", "-q", config.develop])
            _merge(repo, tag, config.develop, False, doing)
    _run_hook(repo, config, "post", kind, "finish", tag, origin, branch)
    # Where the CLI goes when the finished branch is checked out: master for a release, develop
    # for a hotfix, the base for a release from another base.
    away = config.develop if kind == "hotfix" else target
    deleted = _delete_branch(repo, branch, away, keep, force=squash)
    return FinishResult(kind, name, branch, merged_into, tag, deleted, _current_branch(repo))


def _compare_refs_or_none(repo: Repository, first: str, second: str) -> int | None:
    if repo.run(["rev-parse", "--verify", "--quiet", f"{second}^{{commit}}"], check=False).returncode != 0:
        return None
    return _compare_refs(repo, first, second)


def _merge(repo: Repository, source: str, target: str, squash: bool, doing: str) -> None:
    try:
        if squash:
            repo.run(["merge", "--squash", source])
            repo.run(["commit", "--no-edit"])
        else:
            repo.run(["merge", "--no-ff", source])
    except GitError as exc:
        raise _conflict(repo, exc, f"Merging {source} into {target}", doing) from None


def _conflict(repo: Repository, exc: GitError, what: str, doing: str) -> GitError:
    files = _conflicted_files(repo)
    if not files:
        return exc
    return FlowConflict(
        f"{what} stopped on conflicts in {_file_list(files)}. Resolve them, mark them resolved and "
        f"commit the merge, then {doing} again to complete it.", files, details=exc.details)


def _delete_branch(repo: Repository, branch: str, away: str, keep: bool, force: bool) -> bool:
    if keep:
        return False
    if _current_branch(repo) == branch:
        repo.run(["checkout", "-q", away])
    repo.run(["branch", "-D" if force else "-d", branch])
    if not _remote_branch_exists(repo, f"{_origin(repo)}/{branch}"):
        _remove_base_section(repo, branch)
    return True


# ---------------------------------------------------------------------------------------------
# publish and list


def publish(repo: Repository, kind: str, name: str, remote: str = "origin", *,
            progress: ProgressCallback | None = None, cancel: CancelToken | None = None) -> FlowBranch:
    """Push the ``kind`` branch ``name`` to ``remote`` with upstream tracking and check it out
    (the CLI's ``publish``); an error when the remote already has it."""
    config = _require_config(repo)
    _check_kind(kind)
    branch = config.branch_name(kind, name)
    _require_clean_tree(repo, f"publish {kind} {name}")
    if not _local_branch_exists(repo, branch):
        raise GitError(f"There is no {kind} named {name!r} ({branch}) to publish.")
    if remote not in repo.run(["remote"]).text.split():
        raise GitError(f"There is no remote named {remote!r}. Add one first (git remote add {remote} URL).")
    hook_name = config.tag_name(name) if kind in VERSIONED_KINDS else name
    repo.run(["fetch", "-q", remote], progress=progress, cancel=cancel)
    if _remote_branch_exists(repo, f"{remote}/{branch}"):
        raise GitError(f"{branch} is already published on {remote}. Push to it instead.")
    _run_hook(repo, config, "pre", kind, "publish", hook_name, remote, branch)
    repo.run(["push", "--progress", "-u", remote, f"{branch}:{branch}"], progress=progress, cancel=cancel)
    repo.run(["fetch", "-q", remote, branch], cancel=cancel)
    repo.run(["checkout", "-q", branch])
    _run_hook(repo, config, "post", kind, "publish", hook_name, remote, branch)
    return FlowBranch(kind, name, branch, _base_of(repo, branch), current=True)


def list_branches(repo: Repository, kind: str) -> list[FlowBranch]:
    """The local ``kind`` branches, sorted by name."""
    config = _require_config(repo)
    prefix = config.prefix(kind)
    current = _current_branch(repo)
    return [FlowBranch(kind, branch[len(prefix):], branch, _base_of(repo, branch), branch == current)
            for branch in _local_branches(repo) if branch.startswith(prefix) and branch != prefix]

"""``workbench git …``: the Git service for scripts and headless use.

Errors and ``--json`` are the CLI kit's (workbench.clikit): an error (GitError) is one line and
exit status 1 (with ``--json``, stdout gets ``{"error": …}`` too).
"""

from __future__ import annotations

from pathlib import Path

import click

from workbench.clikit import emit, reports_errors

# The service modules are imported inside the commands: `workbench git --help` needs none of them.

_PATH = click.argument("path", required=False, default=".", type=click.Path(path_type=Path))
_JSON = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")


def _open(path: Path):
    from workbench.git.repository import open_repository

    return open_repository(path.expanduser())


@click.group("git", context_settings={"help_option_names": ["-h", "--help"]})
def git_group() -> None:
    """Git: status, and the git-flow branching model."""


# ---------------------------------------------------------------------------------------------
# status


@git_group.command("status")
@_PATH
@_JSON
@reports_errors
def status_command(path: Path, as_json: bool) -> None:
    """Show the branch and the changed files of the repository at PATH (default: here)."""
    from dataclasses import asdict

    from workbench.git.status import read_status

    status = read_status(_open(path))
    data = {**asdict(status), "is_clean": status.is_clean, "is_detached": status.is_detached}
    del data["pull_mode_configured"]  # not read here: only the window asks it
    emit(data, as_json, _status_text(status))


def _status_text(status) -> str:
    if status.branch is None:
        lines = [f"HEAD detached at {status.head[:12] if status.head else '?'}"]
    elif status.head is None:
        lines = [f"No commits yet on {status.branch}"]
    else:
        lines = [f"On branch {status.branch}"]
    if status.upstream:
        if status.upstream_gone:
            lines[0] += f", upstream {status.upstream} is gone"
        else:
            lines[0] += f", {status.ahead} ahead and {status.behind} behind {status.upstream}"
    for group, changes in (("conflicted", status.conflicted), ("staged", status.staged),
                           ("unstaged", status.unstaged), ("untracked", status.untracked)):
        for change in changes:
            state = change.index_state + change.worktree_state
            renamed = f" (from {change.orig_path})" if change.orig_path else ""
            lines.append(f"  {group:<10} {state}  {change.path}{renamed}")
    if status.is_clean:
        lines.append("Nothing to commit; the working tree is clean.")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# flow


@git_group.group("flow")
def flow_group() -> None:
    """The git-flow branching model (the same config as the `git flow` command, AVH edition)."""


@flow_group.command("init")
@_PATH
@click.option("-d", "--defaults", is_flag=True,
              help="Use the default names (as `git flow init -d`; Workbench never asks, so this is the default).")
@click.option("--master", help="Production branch (default: main or master, whichever exists).")
@click.option("--develop", help="Integration branch (default: develop).")
@click.option("--tag-prefix", default="", help="Put before a version to make its tag, for example v.")
@_JSON
@reports_errors
def flow_init_command(path: Path, defaults: bool, master: str | None, develop: str | None, tag_prefix: str,
                      as_json: bool) -> None:
    """Set the repository at PATH up for git-flow, as `git flow init -d` does.

    Creates develop (and a first commit in an empty repository) and writes the gitflow.* config.
    An initialised repository is left as it is.
    """
    from workbench.git import flow

    config = flow.init(_open(path), master=master, develop=develop, version_tag_prefix=tag_prefix)
    emit(_config_data(config), as_json,
          f"git-flow is set up: releases on {config.master}, development on {config.develop}.")


def _config_data(config) -> dict:
    return {"master": config.master, "develop": config.develop, "prefixes": config.prefixes,
            "version_tag_prefix": config.version_tag_prefix, "hooks_path": config.hooks_path}


@flow_group.command("list")
@_PATH
@_JSON
@reports_errors
def flow_list_command(path: Path, as_json: bool) -> None:
    """List the open feature, bugfix, release, hotfix and support branches of PATH."""
    from workbench.git import flow

    repo = _open(path)
    config = flow.flow_config(repo)
    if config is None:
        raise flow.FlowNotInitialised(f"{repo.root} is not set up for git-flow. {flow.INIT_HINT}")
    listed = {kind: flow.list_branches(repo, kind) for kind in flow.KINDS if kind in config.prefixes}
    data = {kind: [_branch_data(b) for b in branches] for kind, branches in listed.items()}
    lines = [f"{'*' if b.current else ' '} {kind:<8} {b.name}" + (f"  (from {b.base})" if b.base else "")
             for kind, branches in listed.items() for b in branches]
    emit(data, as_json, "\n".join(lines) or "No feature, bugfix, release, hotfix or support branches are open.")


def _branch_data(branch) -> dict:
    return {"kind": branch.kind, "name": branch.name, "branch": branch.branch, "base": branch.base,
            "current": branch.current}


def _kind_group(kind: str, what: str) -> click.Group:
    """``workbench git flow <kind> start|finish|publish``."""

    @click.group(kind, help=f"{what}: start, finish or publish one.")
    def group() -> None:
        pass

    @group.command("start")
    @click.argument("name")
    @_PATH
    @click.option("--base", help=_START_BASE[kind])
    @_JSON
    @reports_errors
    def start_command(name: str, path: Path, base: str | None, as_json: bool) -> None:
        from workbench.git import flow

        started = flow.start(_open(path), kind, name, base)
        emit(_branch_data(started), as_json, f"Started {kind} {name} on {started.branch}"
              + (f", from {started.base}" if started.base else f", from {base}") + ".")

    start_command.help = f"Start the {kind} NAME in the repository at PATH and check it out."

    @group.command("finish")
    @click.argument("name")
    @_PATH
    @click.option("-m", "--message", help="Tag message (release, hotfix); the version is appended, as git flow does.")
    @click.option("-k", "--keep", is_flag=True, help="Keep the branch after finishing.")
    @click.option("-S", "--squash", is_flag=True, help="Squash the branch into one commit when merging.")
    @_JSON
    @reports_errors
    def finish_command(name: str, path: Path, message: str | None, keep: bool, squash: bool, as_json: bool) -> None:
        from dataclasses import asdict

        from workbench.git import flow

        result = flow.finish(_open(path), kind, name, message=message, keep=keep, squash=squash)
        text = f"Finished {kind} {name}: merged into {', '.join(result.merged_into)}"
        text += f"; tagged {result.tag}" if result.tag else ""
        text += f"; deleted {result.branch}" if result.deleted else f"; kept {result.branch}"
        emit(asdict(result), as_json, text + f". You are on {result.current_branch}.")

    finish_command.help = _FINISH_HELP[kind]

    @group.command("publish")
    @click.argument("name")
    @_PATH
    @click.option("--remote", default="origin", show_default=True, help="Remote to push to.")
    @_JSON
    @reports_errors
    def publish_command(name: str, path: Path, remote: str, as_json: bool) -> None:
        from workbench.git import flow

        published = flow.publish(_open(path), kind, name, remote)
        emit(_branch_data(published), as_json, f"Published {published.branch} on {remote}, with tracking.")

    publish_command.help = f"Push the {kind} NAME to the remote and track it there."
    return group


_START_BASE = {
    "feature": "Branch to start from (default: develop).",
    "bugfix": "Branch to start from (default: develop).",
    "release": "Branch to start from (default: develop).",
    "hotfix": "Branch to start from (default: master).",
    "support": "Tag or commit on master to start from (required), for example 1.0.",
}
_FINISH_HELP = {
    "feature": "Merge the feature NAME into develop (fast-forward when it is one commit) and delete it.",
    "bugfix": "Merge the bugfix NAME into develop (fast-forward when it is one commit) and delete it.",
    "release": "Merge the release NAME into master, tag it, merge the tag into develop, and delete it.",
    "hotfix": "Merge the hotfix NAME into master, tag it, merge the tag into develop, and delete it.",
    "support": "Support branches are never finished; this says so.",
}
_WHAT = {"feature": "Feature branches", "bugfix": "Bugfix branches", "release": "Release branches",
         "hotfix": "Hotfix branches", "support": "Support branches (maintenance of an old release)"}

for _kind, _what in _WHAT.items():
    flow_group.add_command(_kind_group(_kind, _what))

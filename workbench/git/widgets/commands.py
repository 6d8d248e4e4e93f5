"""The Git and Git Flow commands: palette, "Git" menu and scripts.

Every command takes keyword arguments, so a script or a test runs it without a dialog
(``commands.execute("git.commit", message="Add the CNN")``); run without them (from the palette
or the menu) it asks with a small dialog. Commands that start an operation return its
``Operation`` (``finished``, ``result``, ``error``); the operation itself runs off the GUI thread.
"""

from __future__ import annotations

from typing import Any, Callable

from workbench.git.widgets import dialogs
from workbench.git.widgets.session import GitSession

FLOW_KINDS = ("feature", "bugfix", "release", "hotfix", "support")
FLOW_LABELS = {"release": "version", "hotfix": "version"}


class GitCommands:
    """Declares the commands of one window and runs them through its session and widgets."""

    def __init__(self, window, session: GitSession, panel, stashes, branch_button):
        self.window = window
        self.session = session
        self.panel = panel
        self.stashes = stashes
        self.branch_button = branch_button
        self.flow_push = None
        """The push a finished release or hotfix started (an ``Operation``), for scripts and tests."""
        self.last_trusted = None
        """The SSH host key the user last accepted (a ``HostKey``)."""

    # --- registration -------------------------------------------------------------------------

    def register(self) -> list[str]:
        """Add every command to the window's registry; returns their ids."""
        has_repo = lambda: self.session.repo is not None  # noqa: E731
        no_repo = lambda: self.session.opened and self.session.repo is None  # noqa: E731
        entries: list[tuple[str, str, Callable, dict[str, Any]]] = [
            ("git.commit", "Commit", self.commit, {}),
            ("git.commitAmend", "Commit (Amend)", self.commit_amend, {}),
            ("git.stageAll", "Stage All Changes", self.stage_all, {}),
            ("git.unstageAll", "Unstage All Changes", self.unstage_all, {}),
            ("git.discardAll", "Discard All Changes…", self.discard_all, {}),
            ("git.pull", "Pull", self.pull, {}),
            ("git.push", "Push", self.push, {}),
            ("git.fetch", "Fetch", self.fetch, {}),
            ("git.sync", "Sync", self.sync, {}),
            ("git.stash", "Stash…", self.stash, {}),
            ("git.stashIncludeUntracked", "Stash (Include Untracked)…", self.stash_include_untracked, {}),
            ("git.stashPopLatest", "Pop Latest Stash", self.pop_latest_stash, {}),
            ("git.createBranch", "Create Branch…", self.create_branch, {}),
            ("git.switchBranch", "Switch Branch…", self.switch_branch, {}),
            ("git.renameBranch", "Rename Branch…", self.rename_branch, {}),
            ("git.deleteBranch", "Delete Branch…", self.delete_branch, {}),
            ("git.mergeBranch", "Merge Branch…", self.merge_branch, {}),
            ("git.createTag", "Create Tag…", self.create_tag, {}),
            ("git.addRemote", "Add Remote…", self.add_remote, {}),
            ("git.trustHostKey", "Trust Remote Host Key…", self.trust_host_key, {}),
            ("git.removeRemote", "Remove Remote…", self.remove_remote, {}),
            ("git.pushTo", "Push To…", self.push_to, {}),
            ("git.pushTags", "Push Tags", self.push_tags, {}),
            ("git.forcePush", "Force Push (With Lease)…", self.force_push, {}),
            ("git.setIdentity", "Set Identity…", self.set_identity, {}),
            ("git.refresh", "Refresh", self.refresh, {}),
        ]
        ids = []
        for command_id, title, run, options in entries:
            self.window.commands.add(command_id, title, run, category="Git", menu="Git", enabled=has_repo, **options)
            ids.append(command_id)
        self.window.commands.add("git.init", "Initialise Repository", self.init, category="Git", menu="Git",
                                 enabled=no_repo)
        ids.append("git.init")

        flow: list[tuple[str, str, Callable]] = [("git.flow.init", "Init…", self.flow_init)]
        for kind in FLOW_KINDS:
            noun = kind.capitalize()
            flow.append((f"git.flow.start{noun}", f"Start {noun}…",
                         lambda name=None, base=None, kind=kind: self.flow_start(kind, name, base)))
            if kind != "support":
                flow.append((f"git.flow.finish{noun}", f"Finish {noun}…",
                             lambda name=None, message=None, keep=False, push=None, kind=kind:
                             self.flow_finish(kind, name, message, keep, push)))
            if kind == "feature":
                flow.append(("git.flow.publishFeature", "Publish Feature",
                             lambda name=None, remote="origin": self.flow_publish("feature", name, remote)))
        for command_id, title, run in flow:
            self.window.commands.add(command_id, title, run, category="Git Flow", menu="Git/Git Flow",
                                     enabled=has_repo)
            ids.append(command_id)
        return ids

    # --- helpers ------------------------------------------------------------------------------

    def say(self, text: str) -> None:
        """A short confirmation in the window's status bar."""
        status_bar = getattr(self.window, "statusBar", None)
        if status_bar is not None:
            status_bar().showMessage(text, 6000)

    def _parent(self):
        return self.window

    # --- commit and staging -------------------------------------------------------------------

    def commit(self, message: str | None = None, amend: bool = False, sign_off: bool | None = None):
        """Commit what is staged; without ``message``, the panel's message box (or a dialog)."""
        if message is None:
            if self.panel.message.toPlainText().strip():
                return self._commit_from_panel(amend, sign_off)
            message = dialogs.ask_multiline(self._parent(), "Commit", "Commit message:")
            if message is None:
                return None
        function = self.session.commit_function(amend)
        if function is None:
            return None
        sign_off = self.panel.signoff_box.isChecked() if sign_off is None else sign_off
        return self.session.run("commit", function, message, amend=amend, sign_off=sign_off, title="Committing")

    def _commit_from_panel(self, amend: bool, sign_off: bool | None):
        if amend:
            self.panel.amend_box.setChecked(True)
        if sign_off is not None:
            self.panel.signoff_box.setChecked(sign_off)
        return self.panel.commit()

    def commit_amend(self, message: str | None = None, sign_off: bool | None = None):
        """Replace the last commit; without ``message``, asks with the last message filled in."""
        from workbench.git.commits import last_commit_message

        if message is not None:
            function = self.session.commit_function(amend=True)
            if function is None:
                return None
            return self.session.run("commit", function, message, amend=True,
                                    sign_off=bool(sign_off), title="Amending the last commit")

        def ask(last: str) -> None:
            answer = dialogs.ask_multiline(self._parent(), "Commit (Amend)", "Message of the amended commit:", last)
            if answer is not None:
                self.commit_amend(answer, sign_off)

        self.session.query("lastMessage", last_commit_message, on_done=ask)
        return None

    def stage_all(self):
        from workbench.git.staging import stage_paths

        return self.session.run("stageAll", stage_paths, ["."])

    def unstage_all(self):
        from workbench.git.staging import unstage_paths

        return self.session.run("unstageAll", unstage_paths, ["."])

    def discard_all(self, confirmed: bool = False):
        from workbench.git.staging import discard_paths

        if not confirmed and not self.session.confirm(
                "Discard ALL unstaged changes? Changed files go back to their staged content and new "
                "files are moved to .workbench/trash. Staged changes are kept."):
            return None
        return self.session.run("discardAll", discard_paths, ["."], title="Discarding changes")

    # --- remotes ------------------------------------------------------------------------------

    def pull(self, remote: str | None = None, branch: str | None = None, rebase: bool | None = None):
        """Pull; a diverged branch with no pull.rebase setting asks Merge or Rebase, and a pull that
        stops on conflicts opens the conflict view."""
        from workbench.git.remotes import pull

        if rebase is None and remote is None and branch is None:
            go, rebase = self.session.ask_pull_rebase()
            if not go:
                return None
        return self.session.run("pull", pull, remote, branch, rebase=rebase, title="Pulling",
                                on_error=lambda _error: self.session.show_pull_conflicts("Pulling"))

    def push(self, remote: str | None = None, branch: str | None = None, force: bool = False,
             tags: bool = False):
        from workbench.git.remotes import push

        if force and not self.session.confirm(
                "Force-push? The remote branch is overwritten with yours (only if nobody pushed to it "
                "since your last fetch)."):
            return None
        return self.session.run("forcePush" if force else "push", push, remote, branch, force=force, tags=tags,
                                title="Force-pushing" if force else "Pushing")

    def force_push(self, remote: str | None = None, branch: str | None = None):
        """Push over the remote branch, only if nobody pushed to it since the last fetch (asks first)."""
        return self.push(remote, branch, force=True)

    def push_to(self, remote: str | None = None, branch: str | None = None):
        """Push the current branch to a chosen remote."""
        if remote is None:
            self._ask_remote("Push To", "Push to which remote?", lambda chosen: self.push_to(chosen, branch))
            return None
        return self.push(remote, branch)

    def push_tags(self, remote: str | None = None):
        """Push every tag (``git push --tags``) to ``remote``, or to the branch's/default remote."""
        from workbench.git.remotes import push_tags

        return self.session.run("pushTags", push_tags, remote, refresh=False, title="Pushing tags",
                                on_done=lambda to: self.window.statusBar().showMessage(f"Pushed the tags to {to}",
                                                                                        5000))

    def remove_remote(self, name: str | None = None):
        from workbench.git.remotes import remove_remote

        if name is None:
            self._ask_remote("Remove Remote", "Remove which remote?", self.remove_remote)
            return None
        if not self.session.confirm(f"Remove the remote {name}? Its remote-tracking branches go too; nothing "
                                    f"changes on the remote itself."):
            return None
        return self.session.run("removeRemote", remove_remote, name, title=f"Removing remote {name}")

    def _ask_remote(self, title: str, label: str, then: Callable[[str], Any]) -> None:
        from workbench.git.remotes import list_remotes

        def ask(remotes) -> None:
            if not remotes:
                self.window.show_error("This repository has no remote. Add one first (Git: Add Remote…).")
                return
            answer = dialogs.ask_choice(self._parent(), title, label, [r.name for r in remotes])
            if answer is not None:
                then(answer)

        self.session.query("remotes", list_remotes, on_done=ask)

    def set_identity(self, name: str | None = None, email: str | None = None, everywhere: bool = False):
        """Set user.name and user.email (what commits are signed with) in this repository's
        config, or with ``everywhere`` in the user's global one. Without a name and e-mail, one
        dialog asks for both, filled with what git uses now."""
        if name is None or email is None:
            def ask(current) -> None:
                answer = dialogs.ask_identity(self._parent(), name or current[0], email or current[1],
                                              self.session.repo.root.name)
                if answer is not None:
                    self.set_identity(*answer)

            self.session.query("identity", current_identity, on_done=ask)
            return None
        scope = "every repository on this computer" if everywhere else "this repository"
        return self.session.run("setIdentity", set_identity, name, email, everywhere, refresh=False,
                                title="Setting your identity",
                                on_done=lambda _r: self.say(f"Commits in {scope} are now signed "
                                                            f"{name} <{email}>"))

    def fetch(self, remote: str | None = None, prune: bool = False):
        from workbench.git.remotes import fetch

        return self.session.run("fetch", fetch, remote, prune=prune, title="Fetching")

    def sync(self):
        return self.panel.sync()

    def add_remote(self, name: str | None = None, url: str | None = None):
        from workbench.git.remotes import add_remote

        if name is None:
            name = dialogs.ask_text(self._parent(), "Add Remote", "Remote name:", "origin")
            if name is None:
                return None
        if url is None:
            url = dialogs.ask_text(self._parent(), "Add Remote", f"URL of {name}:")
            if url is None:
                return None
        return self.session.run("addRemote", add_remote, name, url, title=f"Adding remote {name}")

    def trust_host_key(self, remote: str | None = None, confirmed: bool | None = None, known_hosts=None):
        """Fetch the SSH host key of ``remote`` (default origin), show its fingerprint, and add it
        to ~/.ssh/known_hosts once the user accepts it: what ssh asks at a terminal."""
        from workbench.git.errors import GitError
        from workbench.git.remotes import list_remotes
        from workbench.git.ssh_hosts import scan_host_key, ssh_host_of, trust_host_key

        def scan(repo):
            remotes = {r.name: r for r in list_remotes(repo)}
            chosen = remotes.get(remote or "origin") or (next(iter(remotes.values())) if remotes else None)
            if chosen is None:
                raise GitError("This repository has no remote. Add one first (Git: Add Remote…).")
            where = ssh_host_of(chosen.push_url or chosen.fetch_url)
            if where is None:
                raise GitError(f"Remote {chosen.name} ({chosen.fetch_url}) does not use SSH; it has no host key.")
            return chosen.name, scan_host_key(*where)

        def ask(found) -> None:
            name, key = found
            accepted = confirmed if confirmed is not None else self.session.confirm(
                f"The host of remote {name} is {key.host}:{key.port}. Its {key.key_type} key fingerprint is\n"
                f"{key.fingerprint}\nCompare it with the fingerprint the server's owner gives you. Trust this host?")
            if accepted:
                path = trust_host_key(key, known_hosts)
                self.window.statusBar().showMessage(f"Trusted {key.host}:{key.port} (added to {path})", 8000)
                self.last_trusted = key

        self.session.query("hostKey", scan, on_done=ask)
        return None

    # --- stash --------------------------------------------------------------------------------

    def stash(self, message: str | None = None, include_untracked: bool = False):
        return self.stashes.stash(message, include_untracked)

    def stash_include_untracked(self, message: str | None = None):
        return self.stashes.stash(message, True)

    def pop_latest_stash(self):
        return self.stashes.pop(0)

    # --- branches and tags --------------------------------------------------------------------

    def create_branch(self, name: str | None = None, start_point: str | None = None, switch: bool = True):
        from workbench.git.branches import create_branch

        if name is None:
            name = dialogs.ask_text(self._parent(), "Create Branch", "New branch name:")
            if name is None:
                return None
        said = f"Created branch {name}" + (" and switched to it" if switch else "")
        return self.session.run("createBranch", create_branch, name, start_point, switch=switch,
                                title=f"Creating branch {name}", on_done=lambda _r: self.say(said))

    def switch_branch(self, name: str | None = None):
        from workbench.git.branches import list_branches

        if name is not None:
            return self.branch_button.switch(name)

        def ask(branches) -> None:
            remote = {b.name for b in branches if b.is_remote}
            answer = dialogs.ask_choice(self._parent(), "Switch Branch", "Switch to:",
                                        [b.name for b in branches if not b.is_current])
            if answer is not None:
                # ``git switch x`` makes a local x that tracks origin/x.
                self.switch_branch(answer.split("/", 1)[1] if answer in remote else answer)

        self.session.query("branches", list_branches, on_done=ask)
        return None

    def rename_branch(self, old: str | None = None, new: str | None = None):
        """Rename ``old`` (default: the current branch) to ``new``; its upstream setting follows."""
        from workbench.git.branches import rename_branch

        status = self.session.status
        old = old or (status.branch if status is not None else None)
        if old is None:
            self.window.show_error("HEAD is detached: there is no branch to rename. Create a branch instead.")
            return None
        if new is None:
            new = dialogs.ask_text(self._parent(), "Rename Branch", f"New name for {old}:", old)
            if new is None or new == old:
                return None
        return self.session.run("renameBranch", rename_branch, old, new, title=f"Renaming {old} to {new}",
                                on_done=lambda _r: self.say(f"Renamed branch {old} to {new}"))

    def delete_branch(self, name: str | None = None, force: bool = False):
        from workbench.git.branches import delete_branch, list_branches

        if name is None:
            def ask(branches) -> None:
                names = [b.name for b in branches if not b.is_remote and not b.is_current]
                answer = dialogs.ask_choice(self._parent(), "Delete Branch", "Delete branch:", names)
                if answer is not None:
                    self.delete_branch(answer, force)

            self.session.query("branches", list_branches, False, on_done=ask)
            return None
        if force and not self.session.confirm(f"Delete branch {name} even though its commits are not merged? "
                                              "Those commits are then only reachable by their sha."):
            return None
        return self.session.run("deleteBranch", delete_branch, name, force=force, title=f"Deleting {name}",
                                on_done=lambda _r: self.say(f"Deleted branch {name}"))

    def merge_branch(self, name: str | None = None, no_ff: bool = False):
        from workbench.git.branches import list_branches, merge_branch

        if name is None:
            def ask(branches) -> None:
                names = [b.name for b in branches if not b.is_current]
                answer = dialogs.ask_choice(self._parent(), "Merge Branch", "Merge into the current branch:", names)
                if answer is not None:
                    self.merge_branch(answer, no_ff)

            self.session.query("branches", list_branches, on_done=ask)
            return None

        def merged(result) -> None:
            if result.conflicts:
                self.window.show_error(
                    f"Merging {name} left {len(result.conflicts)} conflicted file(s): "
                    f"{', '.join(result.conflicts[:5])}. Resolve them (Git: Resolve Conflicts…), then commit.")
                if "git.resolveConflicts" in self.window.commands:
                    self.window.commands.execute("git.resolveConflicts")

        return self.session.run("mergeBranch", merge_branch, name, no_ff=no_ff, title=f"Merging {name}",
                                on_done=merged)

    def create_tag(self, name: str | None = None, target: str = "HEAD", message: str | None = None):
        from workbench.git.branches import create_tag

        if name is None:
            name = dialogs.ask_text(self._parent(), "Create Tag", "Tag name (for example v1.0):")
            if name is None:
                return None
            message = dialogs.ask_optional_text(self._parent(), "Create Tag",
                                                "Message (leave empty for a lightweight tag):")
            if message is None:
                return None
        return self.session.run("createTag", create_tag, name, target, message or None, refresh=False,
                                title=f"Tagging {name}")

    # --- repository ---------------------------------------------------------------------------

    def init(self):
        return self.session.init_repository()

    def refresh(self):
        self.session.refresh(force=True)

    # --- git-flow -----------------------------------------------------------------------------

    def flow_init(self, master: str | None = None, develop: str | None = None,
                  prefixes: dict[str, str] | None = None, version_tag_prefix: str | None = None):
        """Set the repository up for git-flow. Given nothing, a dialog offers the branch names
        and prefixes ``git flow init -d`` would pick; given any, the rest are those defaults."""
        from workbench.git import flow

        if master is None and develop is None and prefixes is None and version_tag_prefix is None:
            def ask(proposed) -> None:
                answer = dialogs.ask_flow_setup(self._parent(), *proposed)
                if answer is not None:
                    self.flow_init(**answer)

            self.session.query("flowProposal", flow.propose, on_done=ask)
            return None

        def done(config) -> None:
            self.say(f"Git flow is set up: releases on {config.master}, the next release on {config.develop}")

        return self.session.run("flowInit", flow.init, master, develop, prefixes, version_tag_prefix or "",
                                title="Setting up git-flow", on_done=done)

    def flow_start(self, kind: str, name: str | None = None, base: str | None = None):
        from workbench.git import flow

        noun = FLOW_LABELS.get(kind, "name")
        if name is None:
            name = dialogs.ask_text(self._parent(), f"Start {kind.capitalize()}", f"{kind.capitalize()} {noun}:")
            if name is None:
                return None
        if kind == "support" and base is None:
            base = dialogs.ask_text(self._parent(), "Start Support", "Start from which release tag or commit?")
            if base is None:
                return None
        return self.session.run(f"flowStart.{kind}", flow.start, kind, name, base, title=f"Starting {kind} {name}",
                                on_done=lambda branch: self.say(f"Started {kind} {name} on {branch.branch}"))

    def flow_finish(self, kind: str, name: str | None = None, message: str | None = None, keep: bool = False,
                    push: bool | None = None):
        """Finish a flow branch; a release or hotfix then offers to push master, develop and the tags
        (``push`` True/False answers without asking)."""
        from workbench.git import flow

        if name is None:
            self._ask_flow_branch(kind, "Finish", lambda chosen: self.flow_finish(kind, chosen, message, keep, push))
            return None

        def finished(result) -> None:
            self.say(f"Finished {kind} {name}: merged into {', '.join(result.merged_into)}")
            if kind in ("release", "hotfix") and push is not False:
                self.session.query("flowPushTargets", flow_push_targets, on_done=lambda targets:
                                   self._offer_flow_push(result, targets, push))

        return self.session.run(f"flowFinish.{kind}", flow.finish, kind, name, message, keep=keep,
                                title=f"Finishing {kind} {name}", on_done=finished)

    def _offer_flow_push(self, result, targets, push: bool | None) -> None:
        remote, branches = targets
        if remote is None:
            return  # nowhere to push
        if push is None and not self.session.confirm(
                f"{result.kind.capitalize()} {result.name} is finished. Push {' and '.join(branches)} and the "
                f"tags to {remote}?"):
            return
        self.flow_push = self.session.run("flowPush", push_branches_and_tags, remote, branches,
                                          title=f"Pushing {', '.join(branches)} and tags")

    def flow_publish(self, kind: str, name: str | None = None, remote: str = "origin"):
        from workbench.git import flow

        if name is None:
            self._ask_flow_branch(kind, "Publish", lambda chosen: self.flow_publish(kind, chosen, remote))
            return None
        return self.session.run(f"flowPublish.{kind}", flow.publish, kind, name, remote,
                                title=f"Publishing {kind} {name}")

    def _ask_flow_branch(self, kind: str, verb: str, then: Callable[[str], Any]) -> None:
        """Ask which open ``kind`` to act on (the current one first), then call ``then(name)``."""
        from workbench.git import flow

        def ask(branches) -> None:
            if not branches:
                self.window.show_error(f"There is no open {kind} to {verb.lower()}. Start one first.")
                return
            names = [b.name for b in branches]
            current = next((b.name for b in branches if b.current), None)
            answer = dialogs.ask_choice(self._parent(), f"{verb} {kind.capitalize()}",
                                        f"{verb} which {kind}?", names, current)
            if answer is not None:
                then(answer)

        self.session.query(f"flowBranches.{kind}", flow.list_branches, kind, on_done=ask)


def set_identity(repo, name: str, email: str, everywhere: bool = False) -> None:
    """Write user.name and user.email into the repository's own config (the user's global one
    with ``everywhere``)."""
    scope = ["--global"] if everywhere else ["--local"]
    repo.run(["config", *scope, "user.name", name])
    repo.run(["config", *scope, "user.email", email])


def current_identity(repo) -> tuple[str, str]:
    """The name and e-mail git signs commits with here now ("" for what is not set)."""
    name = repo.run(["config", "user.name"], check=False).text.strip()
    email = repo.run(["config", "user.email"], check=False).text.strip()
    return name, email


def flow_push_targets(repo) -> tuple[str | None, list[str]]:
    """(remote, [master, develop]) a finished release or hotfix is pushed to; remote None when
    the repository has none."""
    from workbench.git import flow
    from workbench.git.errors import GitError
    from workbench.git.remotes import default_remote

    config = flow.flow_config(repo)
    branches = [config.master, config.develop] if config is not None else []
    try:
        return default_remote(repo), branches
    except GitError:
        return None, branches


def push_branches_and_tags(repo, remote: str, branches: list[str], progress=None, cancel=None) -> None:
    from workbench.git.remotes import push, push_tags

    for branch in branches:
        push(repo, remote, branch, progress=progress, cancel=cancel)
    push_tags(repo, remote, progress=progress, cancel=cancel)


def install_commands(window, session: GitSession, panel, stashes, branch_button) -> GitCommands:
    commands = GitCommands(window, session, panel, stashes, branch_button)
    commands.register()
    return commands

"""Pushing, pulling and syncing from the panel: the commit box locked while they run, the
question on a diverged branch, conflicts after a pull, and the remote commands."""

from __future__ import annotations

import threading

from tests.git.conftest import git
from tests.git.test_git_widgets_support import finish, open_window, panel_of, session_of, wait_for  # noqa: F401
from workbench.git.widgets import dialogs


def _published(make_repo, tmp_path, files=None):
    root = make_repo(files=files or {"a.py": "a\n"})
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "--initial-branch=main", str(remote))
    git(root, "remote", "add", "origin", str(remote))
    git(root, "push", "-q", "-u", "origin", "main")
    return root, remote


def _diverge(root, remote, tmp_path, their_text="b\n", our_text="c\n", path="b.py"):
    """One commit of theirs on the remote, one of ours here, fetched: ahead 1, behind 1."""
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    (other / path).write_text(their_text)
    git(other, "add", path)
    git(other, "commit", "-qm", "Theirs")
    git(other, "push", "-q")
    (root / ("c.py" if path == "b.py" and our_text == "c\n" else path)).write_text(our_text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "Ours")
    git(root, "fetch", "-q")


def test_the_commit_box_is_locked_while_a_push_runs(make_repo, open_window, qtbot):
    root = make_repo(files={"a.py": "a\n"})
    (root / "a.py").write_text("b\n")
    window = open_window(root)
    session, panel = session_of(window), panel_of(window)
    wait_for(qtbot, lambda: panel.commit_button.isEnabled())
    release = threading.Event()

    # Another operation already running: the push must still lock the box when it starts.
    other = session.run("stage", lambda repo: release.wait(10), refresh=False)
    assert session.busy and not session.remote_busy and panel.message.isEnabled()
    operation = session.run("push", lambda repo: release.wait(10), refresh=False)
    assert session.remote_busy
    assert not panel.message.isEnabled() and not panel.commit_button.isEnabled()
    assert not panel.amend_box.isEnabled()
    assert panel.busy_label.isVisibleTo(panel)
    assert window.commands.execute("git.commit", message="During the push") is None
    release.set()
    finish(qtbot, operation)
    finish(qtbot, other)
    wait_for(qtbot, lambda: panel.message.isEnabled() and panel.amend_box.isEnabled()
             and panel.commit_button.isEnabled())
    wait_for(qtbot, lambda: not panel.busy_label.isVisibleTo(panel))


def test_amending_a_pushed_commit_asks_first(make_repo, tmp_path, open_window, qtbot):
    root, _remote = _published(make_repo, tmp_path)
    window = open_window(root)
    session, panel = session_of(window), panel_of(window)
    wait_for(qtbot, lambda: session.status.upstream == "origin/main")
    session.confirm = lambda question: session.questions.append(question) and False

    panel.amend_box.setChecked(True)
    panel.message.setPlainText("reworded")
    assert panel.commit() is None
    assert window.commands.execute("git.commitAmend", message="reworded") is None
    assert session.questions == [
        "This commit is already pushed to origin/main; amending it will make your branch diverge. "
        "Amend anyway?"] * 2
    assert git(root, "log", "--format=%s").splitlines() == ["initial"]


def test_sync_of_a_diverged_branch_asks_merge_or_rebase_and_rebases(make_repo, tmp_path, open_window, qtbot):
    root, remote = _published(make_repo, tmp_path)
    _diverge(root, remote, tmp_path)
    window = open_window(root)
    session, panel = session_of(window), panel_of(window)
    wait_for(qtbot, lambda: (session.status.ahead, session.status.behind) == (1, 1))
    asked = []
    session.choose = lambda question, choices: asked.append((question, choices)) or None
    assert panel.sync() is None  # cancelled: nothing happens

    session.choose = lambda question, choices: asked.append((question, choices)) or "Rebase"
    finish(qtbot, panel.sync())
    assert "have diverged" in asked[0][0] and asked[0][1] == ["Merge", "Rebase"]
    assert git(root, "rev-list", "--merges", "HEAD") == ""
    assert git(remote, "log", "--format=%s", "main").splitlines() == ["Ours", "Theirs", "initial"]


def test_pull_of_a_diverged_branch_merges_when_asked_to(make_repo, tmp_path, open_window, qtbot):
    root, remote = _published(make_repo, tmp_path)
    _diverge(root, remote, tmp_path)
    window = open_window(root)
    session = session_of(window)
    wait_for(qtbot, lambda: (session.status.ahead, session.status.behind) == (1, 1))
    session.choose = lambda question, choices: "Merge"
    finish(qtbot, window.commands.execute("git.pull"))
    assert git(root, "rev-list", "--merges", "HEAD").strip() != ""


def test_a_configured_pull_rebase_is_not_asked_about(make_repo, tmp_path, open_window, qtbot):
    root, remote = _published(make_repo, tmp_path)
    _diverge(root, remote, tmp_path)
    git(root, "config", "pull.rebase", "true")
    window = open_window(root)
    session = session_of(window)
    wait_for(qtbot, lambda: (session.status.ahead, session.status.behind) == (1, 1))
    session.choose = lambda question, choices: (_ for _ in ()).throw(AssertionError("asked"))
    finish(qtbot, window.commands.execute("git.pull"))
    assert git(root, "rev-list", "--merges", "HEAD") == ""


def test_a_pull_that_stops_on_conflicts_opens_the_conflict_view(make_repo, tmp_path, open_window, qtbot):
    root, remote = _published(make_repo, tmp_path)
    _diverge(root, remote, tmp_path, their_text="theirs\n", our_text="ours\n", path="a.py")
    window = open_window(root)
    session = session_of(window)
    errors, executed = [], []
    window.show_error = lambda message, details="": errors.append(message)
    execute = window.commands.execute
    window.commands.execute = lambda command_id, **kw: (executed.append(command_id), execute(command_id, **kw))[1]
    session.choose = lambda question, choices: "Merge"

    operation = window.commands.execute("git.pull")
    wait_for(qtbot, lambda: operation.finished)
    wait_for(qtbot, lambda: any("stopped on 1 conflicted file(s): a.py" in e for e in errors))
    if "git.resolveConflicts" in window.commands:
        assert "git.resolveConflicts" in executed


def test_push_tags_push_to_force_push_and_remove_remote(make_repo, tmp_path, open_window, qtbot, monkeypatch):
    root, remote = _published(make_repo, tmp_path)
    second = tmp_path / "second.git"
    git(tmp_path, "init", "-q", "--bare", "--initial-branch=main", str(second))
    git(root, "remote", "add", "backup", str(second))
    git(root, "tag", "v1.0")
    window = open_window(root)
    session = session_of(window)

    finish(qtbot, window.commands.execute("git.pushTags"))
    assert git(remote, "tag").split() == ["v1.0"]

    monkeypatch.setattr(dialogs, "ask_choice", lambda parent, title, label, choices, *a, **k: "backup")
    assert window.commands.execute("git.pushTo") is None  # asks which remote, then pushes
    wait_for(qtbot, lambda: git(second, "branch", "--list", "main").strip() != "" and not session.busy)

    git(root, "commit", "-q", "--amend", "-m", "rewritten")
    finish(qtbot, window.commands.execute("git.forcePush"))
    assert any("Force-push?" in q for q in session.questions)
    assert git(remote, "log", "-1", "--format=%s", "main").strip() == "rewritten"

    finish(qtbot, window.commands.execute("git.removeRemote", name="backup"))
    assert git(root, "remote").split() == ["origin"]
    labels = {c.label for c in window.commands.all() if c.in_palette}
    assert {"Git: Push Tags", "Git: Push To…", "Git: Remove Remote…", "Git: Set Identity…",
            "Git: Force Push (With Lease)…"} <= labels


def test_set_identity_writes_the_repository_config_and_the_missing_identity_error_names_it(
        make_repo, open_window, qtbot):
    from workbench.git.errors import GitError

    root = make_repo(files={"a.py": "a\n"})
    window = open_window(root)
    session = session_of(window)
    finish(qtbot, window.commands.execute("git.setIdentity", name="Grace Hopper", email="grace@example.com"))
    assert git(root, "config", "--local", "user.name").strip() == "Grace Hopper"
    assert git(root, "config", "--local", "user.email").strip() == "grace@example.com"
    assert window.statusBar().currentMessage() == ("Commits in this repository are now signed "
                                                   "Grace Hopper <grace@example.com>")

    window.show_error = lambda message, details="": None
    session._report(GitError("Git does not know who you are. Set your name and email (user.name, user.email), "
                             "then commit again."))
    assert "Git: Set Identity" in session.last_error


def test_set_identity_asks_for_name_and_email_in_one_dialog_filled_with_the_current_ones(
        make_repo, open_window, qtbot, monkeypatch, tmp_path):
    from workbench.git.widgets import dialogs

    root = make_repo(files={"a.py": "a\n"})
    git(root, "config", "user.name", "Old Name")
    git(root, "config", "user.email", "old@example.com")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "global.gitconfig"))
    window = open_window(root)
    seen = []

    def answer(parent, name, email, repository):
        dialog = dialogs.IdentityDialog(parent, name, email, repository)
        seen.append((dialog.name.text(), dialog.email.text()))
        dialog.email.setText("a.long.address@users.noreply.example.com")
        dialog.show()
        assert dialog.email.width() > dialog.email.fontMetrics().horizontalAdvance(dialog.email.text())
        dialog.hide()
        ok = dialog.buttons.button(dialog.buttons.StandardButton.Ok)
        dialog.email.setText("not an address")
        assert not ok.isEnabled()
        dialog.name.setText("Ada Lovelace")
        dialog.email.setText("ada@example.com")
        dialog.everywhere.setChecked(True)
        assert ok.isEnabled()
        return dialog.answer()

    monkeypatch.setattr(dialogs, "ask_identity", answer)
    assert window.commands.execute("git.setIdentity") is None
    wait_for(qtbot, lambda: "Ada Lovelace" in window.statusBar().currentMessage())
    assert seen == [("Old Name", "old@example.com")]
    assert "every repository on this computer" in window.statusBar().currentMessage()
    assert "Ada Lovelace" in (tmp_path / "global.gitconfig").read_text()
    assert git(root, "config", "--local", "user.name").strip() == "Old Name"  # the repository's own stays


def test_finishing_a_release_offers_to_push_master_develop_and_the_tag(make_repo, tmp_path, open_window, qtbot):
    root, remote = _published(make_repo, tmp_path)
    window = open_window(root)
    session = session_of(window)
    commands = window.commands
    finish(qtbot, commands.execute("git.flow.init", master="main"))
    finish(qtbot, commands.execute("git.flow.startRelease", name="1.0"))
    (root / "version.txt").write_text("1.0\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "Version 1.0")
    finish(qtbot, commands.execute("git.flow.finishRelease", name="1.0", message="Release 1.0", push=True))

    wait_for(qtbot, lambda: "1.0" in git(remote, "tag") and not session.busy)
    assert "Version 1.0" in git(remote, "log", "--format=%s", "main")
    assert git(remote, "branch", "--list", "develop").strip() != ""
    assert session.questions == []  # push=True: nothing asked

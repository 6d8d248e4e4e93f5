"""Push, pull and sync against a bare repository over file://."""

from __future__ import annotations

from tests.git.conftest import git
from tests.git.test_git_widgets_support import finish, open_window, panel_of, session_of, wait_for  # noqa: F401
from workbench.git.widgets.branch_button import BranchButton


def test_the_first_push_sets_the_upstream_and_ahead_behind_go_to_zero(make_repo, tmp_path, open_window, qtbot):
    root = make_repo(files={"train.py": "epochs = 1\n"})
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "--initial-branch=main", str(remote))
    window = open_window(root)
    session, panel = session_of(window), panel_of(window)
    button = window.findChild(BranchButton)
    assert panel.sync_button.text() == "Publish"

    finish(qtbot, window.commands.execute("git.addRemote", name="origin", url=f"file://{remote}"))
    result = finish(qtbot, window.commands.execute("git.push", remote="origin"))
    assert result.upstream_set
    wait_for(qtbot, lambda: session.status.upstream == "origin/main")
    assert (session.status.ahead, session.status.behind) == (0, 0)
    assert panel.sync_button.text() == "⟳ 0↓ 0↑" and button.text() == "⎇ main  0↓ 0↑"

    (root / "train.py").write_text("epochs = 5\n")
    git(root, "commit", "-qam", "Five epochs")
    session.refresh(force=True)
    wait_for(qtbot, lambda: session.status.ahead == 1 and panel.sync_button.text() == "⟳ 0↓ 1↑")

    panel.sync_button.click()  # pull, then push
    wait_for(qtbot, lambda: session.status.ahead == 0 and not session.busy)
    assert git(remote, "log", "-1", "--format=%s", "main").strip() == "Five epochs"


def test_fetch_shows_commits_to_pull_and_pull_brings_them(make_repo, tmp_path, open_window, qtbot):
    root = make_repo(files={"a.py": "a\n"})
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "--initial-branch=main", str(remote))
    git(root, "remote", "add", "origin", str(remote))
    git(root, "push", "-q", "-u", "origin", "main")
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    (other / "b.py").write_text("b\n")
    git(other, "add", "b.py")
    git(other, "commit", "-qm", "Add b")
    git(other, "push", "-q")
    window = open_window(root)
    session = session_of(window)

    finish(qtbot, window.commands.execute("git.fetch"))
    wait_for(qtbot, lambda: session.status.behind == 1)
    finish(qtbot, window.commands.execute("git.pull"))
    wait_for(qtbot, lambda: session.status.behind == 0)
    assert (root / "b.py").read_text() == "b\n"


def test_an_unknown_ssh_host_is_trusted_from_the_window_and_the_push_then_works(
        make_repo, tmp_path, open_window, qtbot):
    from tests.git.test_git_widgets_support import fail
    from tests.services.sshd import start_sshd, stop_sshd_process

    server = start_sshd(tmp_path / "sshd")
    try:
        root = make_repo(files={"train.py": "epochs = 1\n"})
        remote = tmp_path / "remote.git"
        git(tmp_path, "init", "-q", "--bare", "--initial-branch=main", str(remote))
        known_hosts = tmp_path / "known_hosts"
        strict = (f"ssh -F /dev/null -i {server.client_key} -o IdentitiesOnly=yes -o BatchMode=yes "
                  f"-o StrictHostKeyChecking=yes -o UserKnownHostsFile={known_hosts}")
        git(root, "config", "core.sshCommand", strict)
        window = open_window(root)
        finish(qtbot, window.commands.execute("git.addRemote", name="origin", url=server.url(remote)))
        message = fail(qtbot, window.commands.execute("git.push", remote="origin"))
        assert "Trust Remote Host Key" in message

        window.commands.execute("git.trustHostKey", remote="origin", confirmed=True, known_hosts=known_hosts)
        wait_for(qtbot, lambda: known_hosts.exists() and "Trusted" in window.statusBar().currentMessage())
        assert finish(qtbot, window.commands.execute("git.push", remote="origin")).upstream_set
    finally:
        stop_sshd_process(server.process)

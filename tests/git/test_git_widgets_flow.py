"""git-flow through the command palette's commands."""

from __future__ import annotations

from tests.git.conftest import git
from tests.git.test_git_widgets_support import fail, finish, open_window, session_of, wait_for  # noqa: F401


def test_flow_init_then_a_feature_started_and_finished_through_commands(make_repo, open_window, qtbot):
    root = make_repo(files={"train.py": "epochs = 1\n"})
    window = open_window(root)
    session = session_of(window)
    assert window.commands.get("git.flow.startFeature").label == "Git Flow: Start Feature…"

    finish(qtbot, window.commands.execute("git.flow.init"))
    assert git(root, "config", "gitflow.branch.develop").strip() == "develop"
    finish(qtbot, window.commands.execute("git.flow.startFeature", name="tiny-cnn"))
    wait_for(qtbot, lambda: session.status.branch == "feature/tiny-cnn")

    (root / "model.py").write_text("class TinyCNN: ...\n")
    finish(qtbot, window.commands.execute("git.stageAll"))
    finish(qtbot, window.commands.execute("git.commit", message="Add a tiny CNN"))
    result = finish(qtbot, window.commands.execute("git.flow.finishFeature", name="tiny-cnn"))

    assert result.merged_into == ["develop"] and result.deleted
    wait_for(qtbot, lambda: session.status.branch == "develop")
    assert "Add a tiny CNN" in git(root, "log", "--format=%s", "develop")
    assert "feature/tiny-cnn" not in git(root, "branch")


def test_flow_commands_before_init_say_how_to_set_it_up(make_repo, open_window, qtbot):
    root = make_repo(files={"a.py": "a\n"})
    window = open_window(root)
    message = fail(qtbot, window.commands.execute("git.flow.startFeature", name="x"))
    assert "flow init" in message
    assert session_of(window).last_error == message


def test_every_git_and_git_flow_command_is_in_the_palette(make_repo, open_window):
    window = open_window(make_repo(files={"a.py": "a\n"}))
    labels = {c.label for c in window.commands.all() if c.in_palette}
    for label in ("Git: Commit", "Git: Commit (Amend)", "Git: Stage All Changes", "Git: Unstage All Changes",
                  "Git: Discard All Changes…", "Git: Pull", "Git: Push", "Git: Fetch", "Git: Sync", "Git: Stash…",
                  "Git: Stash (Include Untracked)…", "Git: Pop Latest Stash", "Git: Create Branch…",
                  "Git: Switch Branch…", "Git: Delete Branch…", "Git: Create Tag…", "Git: Add Remote…",
                  "Git: Initialise Repository", "Git Flow: Init", "Git Flow: Start Feature…",
                  "Git Flow: Finish Feature…", "Git Flow: Publish Feature", "Git Flow: Start Bugfix…",
                  "Git Flow: Finish Bugfix…", "Git Flow: Start Release…", "Git Flow: Finish Release…",
                  "Git Flow: Start Hotfix…", "Git Flow: Finish Hotfix…", "Git Flow: Start Support…",
                  "View: Toggle Source Control"):
        assert label in labels
    assert "Git" in [a.text() for a in window.menuBar().actions() if a.isVisible()]

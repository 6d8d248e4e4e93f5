"""git-flow through the command palette's commands."""

from __future__ import annotations

from tests.git.conftest import git
from tests.git.test_git_widgets_support import fail, finish, open_window, session_of, wait_for  # noqa: F401


def test_flow_init_then_a_feature_started_and_finished_through_commands(make_repo, open_window, qtbot):
    root = make_repo(files={"train.py": "epochs = 1\n"})
    window = open_window(root)
    session = session_of(window)
    assert window.commands.get("git.flow.startFeature").label == "Git Flow: Start Feature…"

    finish(qtbot, window.commands.execute("git.flow.init", master="main"))
    assert git(root, "config", "gitflow.branch.develop").strip() == "develop"
    assert window.statusBar().currentMessage() == ("Git flow is set up: releases on main, the next release "
                                                   "on develop")
    finish(qtbot, window.commands.execute("git.flow.startFeature", name="tiny-cnn"))
    wait_for(qtbot, lambda: session.status.branch == "feature/tiny-cnn")
    assert window.statusBar().currentMessage() == "Started feature tiny-cnn on feature/tiny-cnn"

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
    fail(qtbot, window.commands.execute("git.flow.startFeature", name="x"))
    message = session_of(window).last_error
    assert "is not set up for git-flow" in message
    assert "Git Flow: Init…" in message and "`" not in message  # the dialog, not a shell command


def test_every_git_and_git_flow_command_is_in_the_palette(make_repo, open_window):
    window = open_window(make_repo(files={"a.py": "a\n"}))
    labels = {c.label for c in window.commands.all() if c.in_palette}
    for label in ("Git: Commit", "Git: Commit (Amend)", "Git: Stage All Changes", "Git: Unstage All Changes",
                  "Git: Discard All Changes…", "Git: Pull", "Git: Push", "Git: Fetch", "Git: Sync", "Git: Stash…",
                  "Git: Stash (Include Untracked)…", "Git: Pop Latest Stash", "Git: Create Branch…",
                  "Git: Switch Branch…", "Git: Delete Branch…", "Git: Create Tag…", "Git: Add Remote…",
                  "Git: Initialise Repository", "Git Flow: Init…", "Git Flow: Start Feature…",
                  "Git Flow: Finish Feature…", "Git Flow: Publish Feature", "Git Flow: Start Bugfix…",
                  "Git Flow: Finish Bugfix…", "Git Flow: Start Release…", "Git Flow: Finish Release…",
                  "Git Flow: Start Hotfix…", "Git Flow: Finish Hotfix…", "Git Flow: Start Support…",
                  "View: Toggle Source Control"):
        assert label in labels
    assert "Git" in [a.text() for a in window.menuBar().actions() if a.isVisible()]


def test_flow_init_asks_in_one_dialog_with_git_flows_usual_names_filled_in(make_repo, open_window, qtbot,
                                                                          monkeypatch):
    from workbench.git.widgets import dialogs

    root = make_repo(files={"train.py": "epochs = 1\n"})
    window = open_window(root)
    shown = []

    def answer(parent, proposal, branches):
        dialog = dialogs.FlowSetupDialog(parent, proposal, branches)
        shown.append(dialog)
        assert dialog.master.currentText() == "main" and dialog.develop.currentText() == "develop"
        assert dialog.prefixes["feature"].text() == "feature/" and dialog.version_tag.text() == ""
        dialog.develop.setCurrentText("main")
        assert dialog.problem_text() == "The production and integration branches must differ."
        dialog.develop.setCurrentText("next")
        dialog.prefixes["feature"].setText("feat/")
        dialog.version_tag.setText("v")
        assert dialog.problem_text() == ""
        return dialog.answer()

    monkeypatch.setattr(dialogs, "ask_flow_setup", answer)
    assert window.commands.execute("git.flow.init") is None  # asks first
    wait_for(qtbot, lambda: "next release on next" in window.statusBar().currentMessage())
    assert shown
    assert git(root, "config", "gitflow.branch.develop").strip() == "next"
    assert git(root, "config", "gitflow.prefix.feature").strip() == "feat/"
    assert git(root, "config", "gitflow.prefix.versiontag").strip() == "v"

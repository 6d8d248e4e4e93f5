"""The branch button in the status bar: create and switch branches, and a switch that local
changes would overwrite is refused with a message that says what to do."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from tests.git.conftest import git
from tests.git.test_git_widgets_support import finish, open_window, panel_of, session_of, wait_for  # noqa: F401
from workbench.git.widgets import dialogs
from workbench.git.widgets.branch_button import BranchButton


def _menu_action(qtbot, button, text_or_branch):
    button.menu = None
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    wait_for(qtbot, lambda: button.menu is not None and button.menu.isVisible())
    for action in button.menu.actions():
        if action.text() == text_or_branch or action.data() == text_or_branch:
            return action
    raise AssertionError(f"{text_or_branch} is not in {[a.text() for a in button.menu.actions()]}")


def test_create_and_switch_branches_through_the_status_bar_button(make_repo, open_window, qtbot, monkeypatch):
    root = make_repo(files={"train.py": "epochs = 1\n"})
    window = open_window(root)
    session = session_of(window)
    button = window.findChild(BranchButton)
    assert button.isVisible() and button.text() == "⎇ main"
    assert window.statusBar().isAncestorOf(button)

    monkeypatch.setattr(dialogs, "ask_text", lambda *args, **kwargs: "experiment")
    _menu_action(qtbot, button, "Create Branch…").trigger()
    wait_for(qtbot, lambda: session.status.branch == "experiment")
    assert button.text() == "⎇ experiment"
    assert git(root, "symbolic-ref", "--short", "HEAD").strip() == "experiment"

    main = _menu_action(qtbot, button, "main")
    current = next(a for a in button.menu.actions() if a.data() == "experiment")
    assert not current.isEnabled() and current.text().startswith("●")
    main.trigger()
    wait_for(qtbot, lambda: session.status.branch == "main" and button.text() == "⎇ main")


def test_local_changes_that_a_switch_would_overwrite_block_it_with_a_clear_error(make_repo, open_window, qtbot):
    root = make_repo(files={"train.py": "epochs = 1\n"})
    git(root, "switch", "-q", "-c", "experiment")
    (root / "train.py").write_text("epochs = 50\n")
    git(root, "commit", "-qam", "More epochs")
    git(root, "switch", "-q", "main")
    (root / "train.py").write_text("epochs = 2\n")  # not committed
    window = open_window(root)
    session = session_of(window)
    button = window.findChild(BranchButton)

    _menu_action(qtbot, button, "experiment").trigger()
    wait_for(qtbot, lambda: session.last_error is not None)

    assert "would overwrite your local changes to train.py" in session.last_error
    assert "Commit or stash your changes first" in session.last_error
    assert session.last_error in [box.text() for box in window.findChildren(QMessageBox)]
    assert git(root, "symbolic-ref", "--short", "HEAD").strip() == "main"
    assert (root / "train.py").read_text() == "epochs = 2\n"


def test_branch_commands_create_switch_and_delete_with_arguments(make_repo, open_window, qtbot):
    root = make_repo(files={"a.py": "a\n"})
    window = open_window(root)
    session = session_of(window)

    finish(qtbot, window.commands.execute("git.createBranch", name="spike"))
    finish(qtbot, window.commands.execute("git.switchBranch", name="main"))
    finish(qtbot, window.commands.execute("git.deleteBranch", name="spike"))
    finish(qtbot, window.commands.execute("git.createTag", name="v0.1", message="First"))
    assert git(root, "branch", "--format=%(refname:short)").split() == ["main"]
    assert git(root, "tag").split() == ["v0.1"]
    wait_for(qtbot, lambda: session.status.branch == "main")


def test_the_current_branch_is_renamed_from_the_palette(make_repo, open_window, qtbot):
    root = make_repo(files={"a.py": "a\n"})
    window = open_window(root)
    session = session_of(window)
    wait_for(qtbot, lambda: session.status is not None and session.status.branch == "main")
    finish(qtbot, window.commands.execute("git.renameBranch", new="trunk"))
    wait_for(qtbot, lambda: session.status.branch == "trunk")
    assert git(root, "branch", "--show-current").strip() == "trunk"

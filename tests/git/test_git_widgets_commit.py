"""Staging by click and committing from the Source Control panel."""

from __future__ import annotations

from PySide6.QtCore import Qt

from tests.git.conftest import git
from tests.git.test_git_widgets_support import (  # noqa: F401
    click_action_column, finish, open_window, panel_of, session_of, wait_for)


def test_a_click_on_plus_stages_and_ctrl_enter_commits_it_into_the_history(make_repo, open_window, qtbot):
    root = make_repo(files={"train.py": "epochs = 1\n", "model.py": "x = 1\n"})
    (root / "train.py").write_text("epochs = 10\n")
    (root / "model.py").write_text("x = 2\n")
    window = open_window(root)
    panel = panel_of(window)
    wait_for(qtbot, lambda: panel.group_paths("unstaged") == ["model.py", "train.py"])

    click_action_column(qtbot, panel, panel.file_item("train.py", "unstaged"))
    wait_for(qtbot, lambda: panel.group_paths("staged") == ["train.py"])
    assert panel.group_paths("unstaged") == ["model.py"]

    panel.message.setFocus()
    qtbot.keyClicks(panel.message, "Train for ten epochs")
    qtbot.keyClick(panel.message, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)

    wait_for(qtbot, lambda: git(root, "log", "-1", "--format=%s").strip() == "Train for ten epochs")
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == ["train.py"]
    wait_for(qtbot, lambda: panel.group_paths("staged") == [] and panel.message.toPlainText() == "")
    assert panel.group_paths("unstaged") == ["model.py"]


def test_double_click_unstages_and_the_minus_button_of_a_group_unstages_all(make_repo, open_window, qtbot):
    root = make_repo(files={"a.py": "a\n", "b.py": "b\n"})
    (root / "a.py").write_text("A\n")
    (root / "b.py").write_text("B\n")
    git(root, "add", "-A")
    window = open_window(root)
    panel = panel_of(window)
    wait_for(qtbot, lambda: panel.group_paths("staged") == ["a.py", "b.py"])

    item = panel.file_item("a.py", "staged")
    rect = panel.files.visualItemRect(item)
    # A person's double-click: press and release, then the second press that Qt reports as double.
    qtbot.mouseClick(panel.files.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.mouseDClick(panel.files.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    wait_for(qtbot, lambda: panel.group_paths("staged") == ["b.py"])

    group = panel.file_item("b.py", "staged").parent()
    click_action_column(qtbot, panel, group)
    wait_for(qtbot, lambda: panel.group_paths("staged") == [])
    assert panel.group_paths("unstaged") == ["a.py", "b.py"]


def test_amend_fills_in_the_last_message_and_replaces_the_last_commit(make_repo, open_window, qtbot):
    root = make_repo(files={"a.py": "a\n"})
    window = open_window(root)
    panel = panel_of(window)

    panel.amend_box.setChecked(True)
    wait_for(qtbot, lambda: panel.message.toPlainText() == "initial")
    panel.message.setPlainText("initial, reworded")
    finish(qtbot, panel.commit())

    assert git(root, "log", "--format=%s").splitlines() == ["initial, reworded"]
    assert not panel.amend_box.isChecked() and panel.message.toPlainText() == ""


def test_commit_and_stage_all_commands_take_their_arguments(make_repo, open_window, qtbot):
    root = make_repo(files={"a.py": "a\n"})
    (root / "a.py").write_text("changed\n")
    (root / "notes.md").write_text("notes\n")
    window = open_window(root)

    finish(qtbot, window.commands.execute("git.stageAll"))
    finish(qtbot, window.commands.execute("git.commit", message="Everything", sign_off=True))
    body = git(root, "log", "-1", "--format=%B")
    assert body.startswith("Everything") and "Signed-off-by: Ada Tester <ada@example.com>" in body
    assert git(root, "status", "--porcelain") == ""


def test_the_context_menu_discards_after_asking(make_repo, open_window, qtbot):
    root = make_repo(files={"a.py": "a\n"})
    (root / "a.py").write_text("oops\n")
    window = open_window(root)
    panel, session = panel_of(window), session_of(window)
    wait_for(qtbot, lambda: panel.group_paths("unstaged") == ["a.py"])

    panel.file_item("a.py", "unstaged").setSelected(True)
    menu = panel.context_menu()
    assert [a.text() for a in menu.actions() if a.text()] == [
        "Stage", "Unstage", "Discard Changes…", "Open File", "Open Diff"]
    next(a for a in menu.actions() if a.text() == "Discard Changes…").trigger()

    wait_for(qtbot, lambda: panel.group_paths("unstaged") == [])
    assert (root / "a.py").read_text() == "a\n"
    assert "Discard the changes to a.py" in session.questions[0]


def test_discard_all_asks_first_and_keeps_everything_when_the_answer_is_no(make_repo, open_window, qtbot):
    root = make_repo(files={"a.py": "a\n"})
    (root / "a.py").write_text("changed\n")
    window = open_window(root)
    session = session_of(window)

    session.confirm = lambda question: False
    assert window.commands.execute("git.discardAll") is None
    assert (root / "a.py").read_text() == "changed\n"

    session.confirm = lambda question: "Discard ALL unstaged changes?" in question
    finish(qtbot, window.commands.execute("git.discardAll"))
    assert (root / "a.py").read_text() == "a\n"

"""The stash list: stash with untracked files, show, pop, drop."""

from __future__ import annotations

from PySide6.QtWidgets import QPlainTextEdit

from tests.git.conftest import git
from tests.git.test_git_widgets_support import finish, open_window, panel_of, session_of, wait_for  # noqa: F401
from workbench.git.widgets.stash_panel import StashPanel


def test_stash_with_untracked_files_then_pop_brings_them_back(make_repo, open_window, qtbot):
    root = make_repo(files={"train.py": "epochs = 1\n"})
    (root / "train.py").write_text("epochs = 3\n")
    (root / "scratch.ipynb").write_text("{}\n")
    window = open_window(root)
    panel = panel_of(window)
    stashes = window.findChild(StashPanel)

    finish(qtbot, window.commands.execute("git.stashIncludeUntracked", message="try lr"))
    wait_for(qtbot, lambda: len(stashes.entries) == 1 and panel.group_paths("untracked") == [])
    assert stashes.toggle.text() == "Stashes (1)"
    assert stashes.list.item(0).text() == "stash@{0}  try lr (main)"
    assert not (root / "scratch.ipynb").exists() and (root / "train.py").read_text() == "epochs = 1\n"
    assert panel.group_paths("unstaged") == []

    stashes.show_entry(0)
    wait_for(qtbot, lambda: isinstance(window.tabs.currentWidget(), QPlainTextEdit))
    view = window.tabs.currentWidget()
    assert view.isReadOnly() and "+epochs = 3" in view.toPlainText() and "scratch.ipynb" in view.toPlainText()
    assert window.tabs.tabText(window.tabs.currentIndex()) == "stash@{0}"

    finish(qtbot, window.commands.execute("git.stashPopLatest"))
    wait_for(qtbot, lambda: stashes.entries == [] and panel.group_paths("untracked") == ["scratch.ipynb"])
    assert (root / "train.py").read_text() == "epochs = 3\n"
    assert panel.group_paths("unstaged") == ["train.py"]


def test_drop_asks_first_and_apply_keeps_the_entry(make_repo, open_window, qtbot):
    root = make_repo(files={"a.py": "a\n"})
    (root / "a.py").write_text("changed\n")
    window = open_window(root)
    session = session_of(window)
    stashes = window.findChild(StashPanel)

    finish(qtbot, stashes.stash(message="keep me", include_untracked=False))
    wait_for(qtbot, lambda: len(stashes.entries) == 1)
    finish(qtbot, stashes.apply())
    wait_for(qtbot, lambda: (root / "a.py").read_text() == "changed\n")
    assert len(stashes.entries) == 1

    session.confirm = lambda question: False  # the user says no
    assert stashes.drop() is None
    session.confirm = lambda question: "Drop stash@{0} (keep me)" in question
    finish(qtbot, stashes.drop())
    wait_for(qtbot, lambda: stashes.entries == [])
    assert git(root, "stash", "list") == ""

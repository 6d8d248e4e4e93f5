"""The history, file history, blame and conflict commands in a real project window."""

from __future__ import annotations

import pytest
import shiboken6
from PySide6.QtCore import Qt

from tests.git.conftest import git
from tests.git.test_git_history_view import commit_file
from workbench.git.repository import open_repository
from workbench.git.widgets.conflict_view import ConflictView
from workbench.git.widgets.history_install import install_history
from workbench.git.widgets.history_view import HistoryView
from workbench.project import load_project
from workbench.ui.commands import CommandError
from workbench.ui.project_window import ProjectWindow


@pytest.fixture
def make_window(qtbot):
    def make(root, repo_holder):
        window = ProjectWindow(load_project(root))
        qtbot.addWidget(window)
        window.install_capabilities(())  # only the views under test, not the whole Git capability
        window.resize(1100, 700)
        window.show()
        install_history(window, lambda: repo_holder[0])
        return window

    return make


def test_commands_are_in_the_git_menu_and_disabled_without_a_repository(make_window, make_repo):
    root = make_repo("plain", {"a.txt": "a\n"})
    holder = [None]
    window = make_window(root, holder)
    for command_id, label in (("git.showHistory", "Git: Show History"),
                              ("git.showFileHistory", "Git: Show File History"),
                              ("git.toggleBlame", "Git: Toggle Blame"),
                              ("git.resolveConflicts", "Git: Resolve Conflicts…")):
        command = window.commands.get(command_id)
        assert command.label == label and command.menu == "Git"
        assert not command.is_enabled()
    with pytest.raises(CommandError):
        window.commands.execute("git.showHistory")
    holder[0] = open_repository(root)
    assert window.commands.get("git.showHistory").is_enabled()
    assert [c.id for c in window.commands.for_context("explorer", root / "a.txt")] == ["git.showFileHistory"]
    assert window.commands.for_context("explorer", root) == []


def test_show_history_opens_one_tab_and_brings_it_back(qtbot, make_window, make_repo):
    root = make_repo("tabs", {"a.txt": "a\n"})
    window = make_window(root, [open_repository(root)])
    view = window.commands.execute("git.showHistory")
    assert isinstance(view, HistoryView) and window.tabs.currentWidget() is view
    qtbot.waitUntil(lambda: len(view.model.entries) == 1)
    window.tabs.setCurrentIndex(0)
    assert window.commands.execute("git.showHistory") is view
    assert window.tabs.currentWidget() is view
    window.close_tab(window.tabs.indexOf(view))
    assert window.tabs.indexOf(view) < 0
    qtbot.waitUntil(lambda: not shiboken6.isValid(view))  # the window deletes closed tabs
    again = window.commands.execute("git.showHistory")
    assert again is not view and window.tabs.currentWidget() is again


def test_file_history_from_the_editor_and_from_the_explorer(qtbot, make_window, make_repo):
    root = make_repo("files", {"train.py": "epochs = 1\n", "other.txt": "o\n"})
    commit_file(root, "train.py", "epochs = 2\n", "more epochs")
    window = make_window(root, [open_repository(root)])
    window.open_file(root / "train.py")
    view = window.commands.execute("git.showFileHistory")
    assert view.path == "train.py" and window.tabs.tabText(window.tabs.currentIndex()) == "History: train.py"
    qtbot.waitUntil(lambda: [e.summary for e in view.model.entries] == ["more epochs", "initial"])
    from_explorer = window.commands.execute("git.showFileHistory", path=root / "other.txt")
    assert from_explorer.path == "other.txt"
    qtbot.waitUntil(lambda: len(from_explorer.model.entries) == 1)


def test_resolve_conflicts_opens_the_conflict_view(qtbot, make_window, make_repo):
    root = make_repo("merge", {"a.txt": "base\n"})
    git(root, "checkout", "-q", "-b", "other")
    commit_file(root, "a.txt", "theirs\n", "theirs")
    git(root, "checkout", "-q", "main")
    commit_file(root, "a.txt", "ours\n", "ours")
    git(root, "merge", "other", check=False)
    window = make_window(root, [open_repository(root)])
    view = window.commands.execute("git.resolveConflicts")
    assert isinstance(view, ConflictView)
    qtbot.waitUntil(lambda: view.snapshot is not None)
    assert view.count_label.text() == "1 conflict left"
    with qtbot.waitSignal(view.sig_conflicts_changed):
        qtbot.mouseClick(view.hunk_widgets[0].take_theirs_button, Qt.MouseButton.LeftButton)
    assert (root / "a.txt").read_text() == "theirs\n"
    qtbot.mouseClick(view.open_button, Qt.MouseButton.LeftButton)
    assert window.current_editor().path == (root / "a.txt").resolve()

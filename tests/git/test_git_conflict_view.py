"""The conflict view resolving real merge conflicts, hunk by hunk and file by file."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from tests.git.conftest import git
from tests.git.test_git_history_view import FakeWindow
from workbench.git.repository import open_repository
from workbench.git.widgets.conflict_view import ConflictView

LINES = [f"line {n}\n" for n in range(1, 11)]


def with_changes(changes: dict[int, str]) -> str:
    return "".join(changes.get(number, line) for number, line in enumerate(LINES, 1))


@pytest.fixture
def conflicted_repo(make_repo):
    """A merge of ``feature`` into ``main`` stopped on two files: notes.txt with two conflicts
    (lines 2 and 9), config.txt with one."""
    root = make_repo("conflicted", {"notes.txt": "".join(LINES), "config.txt": "lr = 0.1\n"})
    git(root, "checkout", "-q", "-b", "feature")
    (root / "notes.txt").write_text(with_changes({2: "theirs two\n", 9: "theirs nine\n"}))
    (root / "config.txt").write_text("lr = 0.3\n")
    git(root, "commit", "-q", "-am", "feature edits")
    git(root, "checkout", "-q", "main")
    (root / "notes.txt").write_text(with_changes({2: "ours two\n", 9: "ours nine\n"}))
    (root / "config.txt").write_text("lr = 0.2\n")
    git(root, "commit", "-q", "-am", "main edits")
    git(root, "merge", "feature", check=False)
    assert "notes.txt" in git(root, "diff", "--name-only", "--diff-filter=U")
    return root


def make_view(qtbot, root):
    window = FakeWindow()
    view = ConflictView(window, open_repository(root))
    qtbot.addWidget(view)
    view.resize(1000, 640)
    qtbot.waitUntil(lambda: view.snapshot is not None)
    return view, window


def click_and_wait(qtbot, view, button):
    with qtbot.waitSignal(view.sig_conflicts_changed):
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def test_resolving_hunks_and_files_brings_the_count_to_zero_and_the_merge_commits(qtbot, conflicted_repo):
    view, window = make_view(qtbot, conflicted_repo)
    assert view.count_label.text() == "2 conflicts left"
    assert view.abort_button.text() == "Abort Merge" and not view.abort_button.isHidden()
    assert [view.file_list.item(i).data(Qt.ItemDataRole.UserRole) for i in range(view.file_list.count())] == \
        ["config.txt", "notes.txt"]

    with qtbot.waitSignal(view.sig_conflicts_changed):
        view.select_file("notes.txt")
    assert len(view.hunk_widgets) == 2
    first = view.hunk_widgets[0]
    assert first.side_texts["ours"].toPlainText() == "ours two"
    assert first.side_texts["theirs"].toPlainText() == "theirs two"
    view.show()
    view.grab().save("/tmp/conflicts.png")

    click_and_wait(qtbot, view, first.take_ours_button)
    assert len(view.hunk_widgets) == 1 and view.count_label.text() == "2 conflicts left"
    click_and_wait(qtbot, view, view.hunk_widgets[0].take_both_button)
    assert view.hunk_widgets == []
    assert (conflicted_repo / "notes.txt").read_text() == with_changes(
        {2: "ours two\n", 9: "ours nine\ntheirs nine\n"})
    click_and_wait(qtbot, view, view.mark_resolved_button)
    assert view.count_label.text() == "1 conflict left"
    assert ("git.index_changed", {}) in window.events

    assert view.selected_path == "config.txt"
    click_and_wait(qtbot, view, view.take_theirs_file_button)
    assert view.count_label.text() == "No conflicts left"
    assert (conflicted_repo / "config.txt").read_text() == "lr = 0.3\n"
    assert window.errors == []

    git(conflicted_repo, "commit", "-q", "--no-edit")
    assert git(conflicted_repo, "log", "-1", "--format=%P").split().__len__() == 2


def test_mark_resolved_is_refused_while_markers_are_left(qtbot, conflicted_repo):
    view, window = make_view(qtbot, conflicted_repo)
    with qtbot.waitSignal(view.sig_conflicts_changed):
        view.select_file("notes.txt")
    click_and_wait(qtbot, view, view.mark_resolved_button)
    assert window.errors and "still has conflict markers" in window.errors[0]
    assert view.count_label.text() == "2 conflicts left"


def test_abort_merge_from_the_view_restores_the_branch(qtbot, conflicted_repo):
    view, window = make_view(qtbot, conflicted_repo)
    view.ask_abort = lambda label: True
    click_and_wait(qtbot, view, view.abort_button)
    assert view.count_label.text() == "No conflicts left"
    assert view.abort_button.isHidden()
    assert not (conflicted_repo / ".git" / "MERGE_HEAD").exists()
    assert (conflicted_repo / "notes.txt").read_text() == with_changes({2: "ours two\n", 9: "ours nine\n"})
    assert git(conflicted_repo, "status", "--porcelain") == ""
    assert window.errors == []


def test_open_in_editor_goes_to_the_first_conflict(qtbot, conflicted_repo):
    view, window = make_view(qtbot, conflicted_repo)
    with qtbot.waitSignal(view.sig_conflicts_changed):
        view.select_file("notes.txt")
    qtbot.mouseClick(view.open_button, Qt.MouseButton.LeftButton)
    assert window.opened == [(conflicted_repo / "notes.txt", 2)]


def test_a_stash_pop_conflict_says_so_and_offers_no_abort(qtbot, make_repo):
    root = make_repo("stashed", {"notes.txt": "base\n"})
    (root / "notes.txt").write_text("stashed\n")
    git(root, "stash", "-q")
    (root / "notes.txt").write_text("committed\n")
    git(root, "commit", "-q", "-am", "edit after stashing")
    git(root, "stash", "pop", check=False)
    view, window = make_view(qtbot, root)
    assert view.count_label.text() == "1 conflict left"
    assert view.state_label.text() == ("Conflicts from applying a stash: resolve them and mark them resolved "
                                       "(the stash entry was kept).")
    assert "No merge" not in view.state_label.text()
    assert view.abort_button.isHidden()
    assert git(root, "stash", "list").strip()  # the entry really was kept


def test_a_pull_conflict_names_their_side_by_branch_not_by_full_sha(qtbot, make_repo, tmp_path):
    upstream = make_repo("upstream", {"notes.txt": "base\n"})
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(upstream), str(clone))
    (upstream / "notes.txt").write_text("upstream\n")
    git(upstream, "commit", "-q", "-am", "upstream edit")
    (clone / "notes.txt").write_text("local\n")
    git(clone, "commit", "-q", "-am", "local edit")
    git(clone, "pull", "-q", "--no-rebase", "origin", "main", check=False)
    view, _window = make_view(qtbot, clone)
    [hunk] = view.hunk_widgets
    assert hunk.hunk.theirs_label == "origin/main"
    assert not any(len(word) >= 40 for word in hunk.hunk.theirs_label.split())

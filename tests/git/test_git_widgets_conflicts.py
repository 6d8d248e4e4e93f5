"""A merge stopped on conflicts: the banner says so, and Abort goes back."""

from __future__ import annotations

from tests.git.conftest import git
from tests.git.test_git_widgets_support import finish, open_window, panel_of, session_of, wait_for  # noqa: F401


def _conflicting_merge(make_repo):
    root = make_repo(files={"train.py": "lr = 0.1\n"})
    git(root, "switch", "-q", "-c", "tuning")
    (root / "train.py").write_text("lr = 0.01\n")
    git(root, "commit", "-qam", "Lower lr")
    git(root, "switch", "-q", "main")
    (root / "train.py").write_text("lr = 0.5\n")
    git(root, "commit", "-qam", "Raise lr")
    git(root, "merge", "tuning", check=False)
    return root


def test_a_merge_conflict_shows_the_banner_and_abort_goes_back(make_repo, open_window, qtbot):
    root = _conflicting_merge(make_repo)
    window = open_window(root)
    panel, session = panel_of(window), session_of(window)
    wait_for(qtbot, lambda: panel.banner.isVisible())
    assert panel.banner_label.text() == "Merging tuning into main: 1 conflict left"
    assert panel.group_paths("conflicted") == ["train.py"]
    assert panel.file_item("train.py", "conflicted").text(1) == "U"
    assert not panel.continue_button.isEnabled()  # conflicts are left

    panel.abort_button.click()
    wait_for(qtbot, lambda: not panel.banner.isVisible())
    assert "Abort it" in session.questions[-1]
    assert (root / "train.py").read_text() == "lr = 0.5\n"
    assert not (root / ".git" / "MERGE_HEAD").exists()
    assert panel.group_paths("conflicted") == []


def test_resolving_and_marking_resolved_lets_the_merge_be_committed(make_repo, open_window, qtbot):
    root = _conflicting_merge(make_repo)
    window = open_window(root)
    panel = panel_of(window)
    wait_for(qtbot, lambda: panel.banner.isVisible())
    assert panel.message.toPlainText().startswith("Merge branch 'tuning'")

    (root / "train.py").write_text("lr = 0.05\n")
    finish(qtbot, panel.toggle_stage("conflicted", ["train.py"]))  # the "+" of a conflict: mark resolved
    wait_for(qtbot, lambda: panel.continue_button.isEnabled())
    panel.continue_button.click()

    wait_for(qtbot, lambda: not panel.banner.isVisible() and session_of(window).state is not None
             and not session_of(window).state.in_progress)
    assert git(root, "log", "-1", "--format=%P").count(" ") == 1  # a merge commit


def test_merging_a_branch_from_the_palette_stops_on_conflicts_and_opens_the_conflict_view(
        make_repo, open_window, qtbot):
    root = make_repo(files={"train.py": "lr = 0.1\n"})
    git(root, "switch", "-q", "-c", "tuning")
    (root / "train.py").write_text("lr = 0.01\n")
    git(root, "commit", "-qam", "Lower lr")
    git(root, "switch", "-q", "main")
    (root / "train.py").write_text("lr = 0.5\n")
    git(root, "commit", "-qam", "Raise lr")
    window = open_window(root)
    panel = panel_of(window)
    result = finish(qtbot, window.commands.execute("git.mergeBranch", name="tuning"))
    assert result.conflicts == ("train.py",)
    wait_for(qtbot, lambda: panel.banner.isVisible())
    from PySide6.QtWidgets import QMessageBox

    shown = [box.text() for box in window.findChildren(QMessageBox)]
    assert any("left 1 conflicted file(s): train.py" in text for text in shown)
    titles = [window.tabs.tabText(i) for i in range(window.tabs.count())]
    assert any("onflict" in title for title in titles)

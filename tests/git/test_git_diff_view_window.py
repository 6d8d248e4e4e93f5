"""The diff editor as a tab of a real project window."""

from __future__ import annotations

from tests.git.conftest import git
from workbench.git.diff import INDEX_VS_HEAD, WORKTREE_VS_INDEX
from workbench.git.repository import open_repository
from workbench.git.widgets.diff_view import DiffView, open_diff_tab
from workbench.project import load_project
from workbench.ui.project_window import ProjectWindow

TWENTY = "".join(f"line {i}\n" for i in range(1, 21))


def test_a_diff_tab_in_the_project_window_is_reused_and_announces_index_changes(qtbot, make_repo):
    root = make_repo(files={"a.txt": TWENTY})
    (root / "a.txt").write_text(TWENTY.replace("line 2\n", "line two\n").replace("line 18\n", "line eighteen\n"))
    window = ProjectWindow(load_project(root))
    qtbot.addWidget(window)
    window.install_capabilities(())
    window.resize(1100, 600)
    window.show()
    heard = []
    window.on_event("git.index_changed", heard.append)
    repo = open_repository(root)

    view = open_diff_tab(window, repo, "a.txt", WORKTREE_VS_INDEX)
    with qtbot.waitSignal(view.sig_loaded, timeout=10_000):
        pass
    assert window.tabs.currentWidget() is view
    assert window.tabs.tabText(window.tabs.currentIndex()) == "a.txt (Working Tree)"
    assert open_diff_tab(window, repo, root / "a.txt", WORKTREE_VS_INDEX) is view
    with qtbot.waitSignal(view.sig_loaded, timeout=10_000):
        pass
    assert sum(isinstance(window.tabs.widget(i), DiffView) for i in range(window.tabs.count())) == 1

    with qtbot.waitSignal(view.sig_loaded, timeout=10_000):
        view.stage_hunk(0)
    assert heard == [{}] and view.hunk_count() == 1

    staged = open_diff_tab(window, repo, "a.txt", INDEX_VS_HEAD)
    with qtbot.waitSignal(staged.sig_loaded, timeout=10_000):
        pass
    assert staged is not view and window.tabs.tabText(window.tabs.currentIndex()) == "a.txt (Staged)"
    # Unstaging in the Staged tab refreshes the Working Tree tab through the window's event.
    with qtbot.waitSignals([staged.sig_loaded, view.sig_loaded], timeout=10_000):
        staged.unstage_hunk(0)
    assert view.hunk_count() == 2 and staged.hunk_count() == 0
    assert git(root, "diff", "--cached") == ""
    window.tasks.wait(5000)

"""The Source Control panel follows the working tree: edits saved in the editor, and a folder
that is not yet a repository."""

from __future__ import annotations

from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication

from tests.git.conftest import git
from tests.git.test_git_widgets_support import finish, open_window, panel_of, session_of, wait_for  # noqa: F401


def test_saving_a_file_in_the_editor_lists_it_under_changes_with_a_path_limited_refresh(
        make_repo, open_window, qtbot):
    root = make_repo(files={"train.py": "print('train')\n", "model.py": "x = 1\n"})
    window = open_window(root)
    panel, session = panel_of(window), session_of(window)
    assert panel.group_paths("unstaged") == []
    refreshed = []
    original = session.cache.refresh
    session.cache.refresh = lambda paths=None, **kw: (refreshed.append(paths), original(paths, **kw))[1]

    window.open_file(root / "model.py")
    window.commands.execute("editor.insertText", text="# tuned\n")
    window.commands.execute("file.save")

    wait_for(qtbot, lambda: panel.group_paths("unstaged") == ["model.py"])
    assert [str(root / "model.py")] in refreshed  # only the saved file was re-read
    assert panel.file_item("model.py", "unstaged").text(1) == "M"


def test_new_files_are_untracked_and_a_window_activation_refreshes_everything(make_repo, open_window, qtbot):
    root = make_repo(files={"train.py": "print('train')\n"})
    window = open_window(root)
    panel, session = panel_of(window), session_of(window)
    (root / "data.csv").write_text("a,b\n")  # made outside Workbench, say in a terminal

    session._last_full = 0  # the last full refresh was long ago
    QApplication.sendEvent(window, QEvent(QEvent.Type.WindowActivate))

    wait_for(qtbot, lambda: panel.group_paths("untracked") == ["data.csv"])
    assert panel.file_item("data.csv", "untracked").text(1) == "?"


def test_a_folder_that_is_not_a_repository_offers_to_initialise_one(tmp_path, open_window, qtbot):
    root = tmp_path / "plain"
    root.mkdir()
    (root / "train.py").write_text("print('train')\n")
    window = open_window(root)
    panel, session = panel_of(window), session_of(window)

    assert session.repo is None
    assert panel.pages.currentIndex() == 1 and panel.init_button.text() == "Initialise Repository"
    assert not window.commands.get("git.commit").is_enabled()
    assert window.commands.get("git.init").is_enabled()

    panel.init_button.click()
    wait_for(qtbot, lambda: session.repo is not None and session.status is not None)
    assert (root / ".git").is_dir()
    assert panel.pages.currentIndex() == 2
    assert panel.group_paths("untracked") == ["train.py"]
    assert window.commands.get("git.commit").is_enabled()
    assert git(root, "symbolic-ref", "--short", "HEAD").strip() == "main"


def test_a_repository_made_in_a_terminal_replaces_the_initialise_view(tmp_path, open_window, qtbot):
    root = tmp_path / "plain"
    root.mkdir()
    (root / "train.py").write_text("print('train')\n")
    window = open_window(root)
    panel, session = panel_of(window), session_of(window)
    assert panel.pages.currentIndex() == 1

    git(root, "init", "-q", "--initial-branch=main")  # outside the app: no click, no activation
    wait_for(qtbot, lambda: session.repo is not None and session.status is not None)
    assert panel.pages.currentIndex() == 2
    assert session.repo.root == root.resolve()
    assert panel.group_paths("untracked") == ["train.py"]
    assert window.commands.get("git.commit").is_enabled()
    assert not window.commands.get("git.init").is_enabled()


def test_a_repository_removed_in_a_terminal_falls_back_to_the_initialise_view(make_repo, open_window, qtbot):
    import shutil

    root = make_repo(files={"train.py": "print('train')\n"})
    window = open_window(root)
    panel, session = panel_of(window), session_of(window)
    assert panel.pages.currentIndex() == 2

    shutil.rmtree(root / ".git")
    wait_for(qtbot, lambda: session.repo is None and panel.pages.currentIndex() == 1)
    assert window.commands.get("git.init").is_enabled()
    assert not window.commands.get("git.commit").is_enabled()

    panel.init_button.click()  # and the Initialise button works again
    wait_for(qtbot, lambda: session.repo is not None and session.status is not None)
    assert panel.pages.currentIndex() == 2 and panel.group_paths("untracked") == ["train.py"]


def test_a_repository_made_around_the_project_is_found_when_the_window_is_activated(tmp_path, open_window, qtbot):
    outer = tmp_path / "outer"
    root = outer / "project"
    root.mkdir(parents=True)
    (root / "train.py").write_text("print('train')\n")
    window = open_window(root)
    panel, session = panel_of(window), session_of(window)
    assert panel.pages.currentIndex() == 1

    git(outer, "init", "-q", "--initial-branch=main")  # in a parent folder: nothing in the project changed
    QApplication.sendEvent(window, QEvent(QEvent.Type.WindowActivate))
    wait_for(qtbot, lambda: session.repo is not None and session.status is not None)
    assert session.repo.root == outer.resolve() and panel.pages.currentIndex() == 2


def test_the_source_control_dock_shares_the_explorers_place_and_its_toggle_brings_it_forward(
        make_repo, open_window, qtbot):
    from PySide6.QtWidgets import QDockWidget, QTabBar

    window = open_window(make_repo(files={"a.py": "a\n"}))
    dock = window.findChild(QDockWidget, "dock-scm")
    # Tabbed with the Explorer (and whatever else shares its place, the Outline).
    assert window.explorer in window.tabifiedDockWidgets(dock)

    def front() -> str:
        bars = [b for b in window.findChildren(QTabBar) if "Source Control" in [b.tabText(i) for i in range(b.count())]]
        return bars[0].tabText(bars[0].currentIndex()) if bars and not dock.isHidden() else "hidden"

    wait_for(qtbot, lambda: front() == "Explorer")
    window.commands.execute("view.toggle.scm")  # behind the Explorer's tab: comes forward
    wait_for(qtbot, lambda: front() == "Source Control")
    window.commands.execute("view.toggle.scm")  # in front: hides
    wait_for(qtbot, lambda: front() == "hidden")
    window.commands.execute("view.toggle.scm")
    wait_for(qtbot, lambda: front() == "Source Control")

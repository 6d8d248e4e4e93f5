"""A reopened window brings back its History, file history and diff tabs as it brings back its
editors, with the one that was in front in front again."""

from __future__ import annotations

from tests.git.test_git_widgets_support import TIMEOUT_MS, open_window  # noqa: F401
from workbench.project import WindowStateStore, load_project


def _titles(window) -> list[str]:
    return [window.tabs.tabText(i) for i in range(window.tabs.count())]


def test_history_and_diff_tabs_come_back_with_the_window(make_repo, open_window, qtbot):
    root = make_repo(files={"train.py": "epochs = 1\n", "model.py": "width = 8\n"})
    (root / "train.py").write_text("epochs = 3\n")
    window = open_window(root)
    window.commands.execute("git.showHistory")
    window.commands.execute("git.showFileHistory", path="model.py")
    window.commands.execute("git.openChanges", path="train.py")
    window.commands.execute("git.showFileHistory", path="model.py")  # in front when closed
    before = _titles(window)
    assert {"History", "History: model.py", "train.py (Working Tree)"} <= set(before)
    window.discard_changes_on_close = True
    window.close()
    documents = WindowStateStore(load_project(root)).load().documents
    assert [d["command"] for d in documents] == ["git.showHistory", "git.showFileHistory", "git.openChanges"]
    assert [d["current"] for d in documents] == [False, True, False]

    again = open_window(root)
    qtbot.waitUntil(lambda: {"History", "History: model.py", "train.py (Working Tree)"} <= set(_titles(again)),
                    timeout=TIMEOUT_MS)
    assert again.tabs.tabText(again.tabs.currentIndex()) == "History: model.py"


def test_a_tab_that_cannot_come_back_is_left_out_and_the_rest_return(make_repo, open_window, qtbot):
    root = make_repo(files={"a.py": "a = 1\n"})
    window = open_window(root)
    window.commands.execute("git.showHistory")
    window.discard_changes_on_close = True
    window.close()
    store = WindowStateStore(load_project(root))
    state = store.load()
    state.documents.insert(0, {"command": "git.openChanges", "args": {"path": "gone.py", "source": "bogus"},
                               "current": False})
    state.documents.append({"command": "no.such.command", "args": {}, "current": False})
    store.save(state)

    again = open_window(root)
    qtbot.waitUntil(lambda: "History" in _titles(again), timeout=TIMEOUT_MS)
    assert "gone.py" not in " ".join(_titles(again))


def test_an_editor_in_front_stays_in_front_when_the_tabs_come_back(make_repo, open_window, qtbot):
    root = make_repo(files={"a.py": "a = 1\n"})
    window = open_window(root)
    window.commands.execute("git.showHistory")
    window.open_file(root / "a.py")
    window.discard_changes_on_close = True
    window.close()

    again = open_window(root)
    qtbot.waitUntil(lambda: "History" in _titles(again), timeout=TIMEOUT_MS)
    assert again.current_editor() is not None and again.current_editor().path.name == "a.py"
    assert again.tabs.currentWidget() is again.current_editor()

"""The project window, in-process and offscreen."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from workbench.project import create_from_template, load_project
from workbench.ui.project_window import ProjectWindow


@pytest.fixture
def project(tmp_path):
    return load_project(create_from_template("digits", tmp_path / "digits").root)


@pytest.fixture
def make_window(qtbot):
    def make(project):
        window = ProjectWindow(project)
        qtbot.addWidget(window)
        window.show()
        return window

    return make


def test_a_new_window_shows_the_main_file_and_its_status(make_window, project):
    window = make_window(project)
    assert window.current_editor().path == project.root / "train.py"
    texts = [label.text() for label in window.statusBar().findChildren(QLabel)]
    assert "Ln 1, Col 1" in texts and "UTF-8" in texts and "LF" in texts and "Python" in texts


def test_typing_marks_the_tab_and_title_modified_and_save_clears_them(make_window, project):
    window = make_window(project)
    window.commands.execute("editor.insertText", text="# note\n")
    assert window.tabs.tabText(window.tabs.currentIndex()).endswith("●")
    assert window.windowTitle() == "train.py ● — digits — Workbench"
    window.commands.execute("file.save")
    assert window.tabs.tabText(window.tabs.currentIndex()) == "train.py"
    assert window.windowTitle() == "train.py — digits — Workbench"
    assert (project.root / "train.py").read_text().startswith("# note\n")


def test_opening_an_open_file_focuses_its_tab_instead_of_a_second_one(make_window, project):
    window = make_window(project)
    window.commands.execute("file.open", path="model.py")
    window.commands.execute("file.open", path="train.py", line=5)
    assert window.tabs.count() == 2
    assert window.current_editor().cursor_position() == (5, 1)


def test_a_file_that_cannot_be_opened_is_an_error_in_the_window_not_an_exception(make_window, project):
    window = make_window(project)
    assert window.open_file(project.root / "hparams") is None  # a folder
    assert "hparams" in window.statusBar().currentMessage()


def test_the_palette_finds_commands_by_a_few_letters_and_runs_the_chosen_one(make_window, project, qtbot):
    window = make_window(project)
    window.commands.execute("workbench.showCommands")
    assert window.palette.isVisible()
    qtbot.keyClicks(window.palette.query, "gotoline")
    assert window.palette.matching("gotoline")[0][0] == "go.line"
    assert window.palette.current_command() == "go.line"
    assert window.palette.results.currentItem().text(1) == "Ctrl+G"  # shortcuts in their own column
    with qtbot.waitSignal(window.palette.sig_command_chosen) as chosen:
        qtbot.keyClick(window.palette.query, Qt.Key.Key_Return)
    assert chosen.args == ["go.line"] and not window.palette.isVisible()
    labels = [label for _, label, _ in window.palette.matching("")]
    assert "File: Save All" in labels and "Type Text" not in " ".join(labels)


def test_menus_and_shortcuts_come_from_the_command_registry(make_window, project):
    window = make_window(project)
    action = window.menus.actions["file.save"]
    assert action.shortcut().toString() == "Ctrl+S"
    titles = [a.text() for a in window.menuBar().actions() if a.isVisible()]
    assert titles[:4] == ["File", "Edit", "View", "Go"] and "Git" not in titles
    window.commands.add("run.train", "Train Locally", lambda: None, menu="Run", shortcut="F5")
    assert "Run" in [a.text() for a in window.menuBar().actions() if a.isVisible()]


def test_open_tabs_cursor_and_layout_come_back_with_the_next_window(make_window, project, qtbot):
    window = make_window(project)
    window.open_file("model.py", line=9, column=3)
    window.open_file("data.py")
    window.tabs.setCurrentIndex(1)
    window.explorer.hide()
    window.close()

    again = make_window(project)
    assert [tab.path.name for tab in again.editors()] == ["train.py", "model.py", "data.py"]
    assert again.current_editor().path.name == "model.py"
    assert again.current_editor().cursor_position() == (9, 3)
    assert not again.explorer.isVisible()


def test_closing_the_window_keeps_unsaved_edits_for_the_next_one(make_window, project):
    window = make_window(project)
    window.commands.execute("editor.insertText", text="LR = 0.1\n")
    window.close()
    assert "LR = 0.1" not in (project.root / "train.py").read_text()

    again = make_window(project)
    editor = again.commands.execute("editor.describe")
    assert editor["modified"] and editor["recovered"] and editor["text"].startswith("LR = 0.1\n")


def test_closing_a_modified_tab_asks_and_cancel_keeps_it(make_window, project):
    window = make_window(project)
    window.commands.execute("editor.insertText", text="x")
    window.ask_save_changes = lambda tab: "cancel"
    assert window.close_tab(0) is False and window.tabs.count() == 1
    window.ask_save_changes = lambda tab: "discard"
    assert window.close_tab(0) is True and window.tabs.count() == 0
    assert not list(window.hot_exit.entries())


def test_a_capability_dock_gets_a_command_that_toggles_it(make_window, project):
    window = make_window(project)
    dock = window.add_dock("runs", "Runs", QLabel("runs"))
    assert "view.toggle.runs" in window.commands
    window.commands.execute("view.toggle.runs")
    assert dock.isHidden()
    window.commands.execute("view.toggle.runs")
    assert not dock.isHidden()


def test_an_event_from_another_window_reaches_its_handler(make_window, project):
    window = make_window(project)
    seen = []
    window.on_event("model.produced", seen.append)
    window.handle_event("model.produced", {"path": "m.onnx"})
    assert seen == [{"path": "m.onnx"}]


def test_renaming_an_open_file_in_the_explorer_moves_its_tab_with_unsaved_edits(make_window, project):
    window = make_window(project)
    window.open_file("model.py")
    window.commands.execute("editor.insertText", text="# edited\n")
    window.tree.ask_name = lambda *args, **kwargs: "network.py"
    window.tree.rename_path(project.root / "model.py")
    names = [tab.path.name for tab in window.editors()]
    assert names == ["train.py", "network.py"]
    moved = window.editors()[1]
    assert moved.is_modified() and moved.text().startswith("# edited\n")
    assert not (project.root / "network.py").read_text().startswith("# edited")


def test_deleting_an_open_file_in_the_explorer_closes_its_clean_tab(make_window, project):
    window = make_window(project)
    window.open_file("data.py")
    window.tree.confirm_delete = lambda path: True
    window.tree.delete_path(project.root / "data.py")
    assert [tab.path.name for tab in window.editors()] == ["train.py"]


def test_saving_an_unchanged_file_does_not_rewrite_it(make_window, project):
    window = make_window(project)
    before = (project.root / "train.py").stat().st_mtime_ns
    window.commands.execute("file.save")
    assert (project.root / "train.py").stat().st_mtime_ns == before


def test_a_newly_opened_file_gets_the_keyboard(make_window, project, qtbot):
    window = make_window(project)
    window.activateWindow()
    tab = window.open_file("model.py")
    qtbot.waitUntil(lambda: tab.isAncestorOf(window.focusWidget()) if window.focusWidget() else False)


def test_capabilities_join_the_window_after_its_first_paint(make_window, project, qtbot, monkeypatch):
    import sys
    import types

    from PySide6.QtWidgets import QLabel as Label

    module = types.ModuleType("fake_capability")
    module.install = lambda window: (window.add_dock("fake", "Fake", Label("fake")),
                                     window.commands.add("fake.hello", "Hello", lambda: "hi", menu="Run"))
    monkeypatch.setitem(sys.modules, "fake_capability", module)
    monkeypatch.setattr("workbench.ui.capabilities.BUILT_IN", ("fake_capability:install", "missing_module:install"))
    window = ProjectWindow(project)
    qtbot.addWidget(window)
    assert "fake.hello" not in window.commands
    # What is checked is the order (after the first paint), not how soon: a busy machine may
    # take seconds to paint.
    with qtbot.waitSignal(window.sig_capabilities_installed, timeout=30_000):
        window.show()
    assert window.commands.execute("fake.hello") == "hi"
    assert "Run" in [a.text() for a in window.menuBar().actions() if a.isVisible()]
    assert "missing_module could not start" in window.statusBar().currentMessage()


def test_a_capability_document_tab_sits_beside_the_editors(make_window, project):
    window = make_window(project)
    diff = QLabel("a diff")
    window.add_tab(diff, "train.py (diff)")
    assert window.tabs.currentWidget() is diff and window.current_editor() is None
    assert [tab.path.name for tab in window.editors()] == ["train.py"]
    assert window.close_tab(window.tabs.indexOf(diff))


def test_quit_workbench_is_in_the_file_menu_and_without_a_hub_closes_the_window(make_window, project):
    window = make_window(project)
    action = window.menus.actions["workbench.quit"]
    assert action.shortcut().toString() == "Ctrl+Q"
    file_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "File")
    assert file_menu.actions()[-1] is action  # last, after Close Window
    window.commands.execute("workbench.quit")  # this window has no hub to ask
    assert not window.isVisible()


def test_quit_workbench_asks_the_hub_to_quit_everything(make_window, project):
    window = make_window(project)
    asked = []
    window.hub_requester = lambda method, params, on_result, on_error: asked.append(method)
    window.commands.execute("workbench.quit")
    assert asked == ["hub.quit_all"]
    assert window.isVisible()  # the hub closes it, with the others


def test_closing_asks_about_edits_that_cannot_be_kept_and_cancel_keeps_the_window_open(make_window, project):
    window = make_window(project)
    window.commands.execute("editor.insertText", text="# nowhere to keep this\n")
    window.hot_exit.available = False  # as in a read-only folder
    questions = []
    window.ask_save_changes = lambda tab: questions.append(tab.path.name) or "cancel"
    assert window.close() is False and window.isVisible()
    assert questions == ["train.py"]

    window.ask_save_changes = lambda tab: "discard"
    assert window.close() is True
    assert "# nowhere to keep this" not in (project.root / "train.py").read_text()


def test_closing_keeps_edits_it_can_keep_without_asking_and_a_forced_close_never_asks(make_window, project):
    window = make_window(project)
    window.commands.execute("editor.insertText", text="# kept\n")
    window.ask_save_changes = lambda tab: pytest.fail("asked about edits that are kept for next time")
    assert window.close() is True

    again = make_window(project)
    again.hot_exit.available = False
    again.commands.execute("editor.insertText", text="# dropped\n")
    again.ask_save_changes = lambda tab: pytest.fail("a forced close asked")
    again.discard_changes_on_close = True
    assert again.close() is True

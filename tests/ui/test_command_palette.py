"""The command palette ranks as Quick Open does, shows shortcuts, puts the commands used lately
first and says so when nothing matches; a real project window, offscreen."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from workbench.project import create_from_template, load_project
from workbench.ui.project_window import ProjectWindow


@pytest.fixture
def window(qtbot, tmp_path):
    window = ProjectWindow(load_project(create_from_template("digits", tmp_path / "digits").root))
    qtbot.addWidget(window)
    window.show()
    window.commands.add("train.hparams", "Train with Hyper-parameters…", lambda: None, category="Run")
    window.commands.add("gitflow.init", "Git Flow: Init…", lambda: None, category="Git")
    window.commands.add("view.quokka", "Quokka Theme…", lambda: None, category="View", shortcut="Ctrl+Alt+Shift+F12")
    return window


def labels(window, query):
    return [label for _, label, _ in window.palette.matching(query)]


def test_letters_scattered_across_words_are_no_match_in_the_palette(window):
    found = labels(window, "theme")
    assert "View: Quokka Theme…" in found and "Run: Train with Hyper-parameters…" not in found
    assert all("theme" in label.lower() for label in found)
    assert "File: Close Window" not in labels(window, "flow") and labels(window, "flow")[0] == "Git: Git Flow: Init…"
    assert labels(window, "gtl")[0] == "Go: Go to Line…"  # initials of words still find it


def test_each_command_shows_its_shortcut(window, qtbot):
    window.commands.execute("workbench.showCommands")
    qtbot.keyClicks(window.palette.query, "quokka")
    item = window.palette.results.currentItem()
    assert (item.text(0), item.text(1)) == ("View: Quokka Theme…", "Ctrl+Alt+Shift+F12")


def test_nothing_matching_says_no_matching_commands(window, qtbot):
    window.commands.execute("workbench.showCommands")
    qtbot.keyClicks(window.palette.query, "qqzzx")
    assert window.palette.results.topLevelItemCount() == 0
    assert window.palette.message.isVisible() and window.palette.message.text() == "No matching commands"
    said = window.palette.height()
    window.palette.query.clear()
    assert not window.palette.message.isVisible() and window.palette.results.isVisible()
    every_command = window.palette.height()
    qtbot.keyClicks(window.palette.query, "save all")
    # As tall as what it lists, as VS Code's: not a tall empty frame around one command.
    assert window.palette.results.topLevelItemCount() == 1
    assert max(said, window.palette.height()) < every_command / 2


def choose(window, qtbot, query):
    window.commands.execute("workbench.showCommands")
    qtbot.keyClicks(window.palette.query, query)
    with qtbot.waitSignal(window.palette.sig_command_chosen):
        qtbot.keyClick(window.palette.query, Qt.Key.Key_Return)


def test_commands_used_lately_come_first_the_latest_first(window, qtbot):
    first_before = window.palette.matching("")[0][0]
    choose(window, qtbot, "quokka")
    choose(window, qtbot, "gtl")
    ids = [command_id for command_id, _, _ in window.palette.matching("")]
    assert ids[:2] == ["go.line", "view.quokka"] and first_before not in ids[:2]
    # Still first when the query matches them less well than others.
    assert [command_id for command_id, _, _ in window.palette.matching("t")][0] == "go.line"

"""Blame annotations beside the lines of a real editor in a real project window."""

from __future__ import annotations

import pytest

from tests.git.conftest import git
from workbench.git.repository import open_repository
from workbench.git.widgets.blame_view import BlameGutter
from workbench.git.widgets.history_install import install_history
from workbench.project import load_project
from workbench.ui.project_window import ProjectWindow


@pytest.fixture
def two_author_repo(make_repo):
    """model.py: lines 1–2 by Ada, line 3 by Bob, line 2 then edited on disk and not committed."""
    root = make_repo("blamed", {"model.py": "import torch\nlayers = 2\n"})
    (root / "model.py").write_text("import torch\nlayers = 2\nwidth = 64\n")
    git(root, "commit", "-q", "-am", "Add a width", "--author=Bob Builder <bob@example.com>")
    (root / "model.py").write_text("import torch\nlayers = 3\nwidth = 64\n")
    return root


@pytest.fixture
def window(qtbot, two_author_repo):
    window = ProjectWindow(load_project(two_author_repo))
    qtbot.addWidget(window)
    window.install_capabilities(())  # only the views under test, not the whole Git capability
    window.resize(1100, 600)
    window.show()
    repo = open_repository(two_author_repo)
    window.git_history = install_history(window, lambda: repo)
    window.open_file(two_author_repo / "model.py")
    return window


def toggle_and_wait(qtbot, window) -> BlameGutter:
    gutter = window.commands.execute("git.toggleBlame")
    assert isinstance(gutter, BlameGutter)
    qtbot.waitUntil(lambda: gutter.loaded)
    return gutter


def test_blame_gutter_shows_both_authors_and_the_uncommitted_line(qtbot, window):
    gutter = toggle_and_wait(qtbot, window)
    rows = dict(gutter.visible_rows())
    assert rows[1].startswith("Ada Tester · ") and len(rows[1].split(" · ")[2]) == 7
    assert rows[2] == "Not committed yet"
    assert rows[3].startswith("Bob Builder · ")
    assert rows[4] == ""  # the empty line after the last newline is no line of the file
    assert gutter.line(3).summary == "Add a width"
    assert gutter.line(1).sha != gutter.line(3).sha
    editor = window.current_editor().editor
    assert editor.viewportMargins().left() >= editor.line_number_panel.width_needed() + gutter.width()
    window.grab().save("/tmp/blame.png")


def test_typing_a_new_line_shifts_the_annotations_below_it(qtbot, window):
    gutter = toggle_and_wait(qtbot, window)
    tab = window.current_editor()
    tab.set_cursor_position(1, 1)
    window.commands.execute("editor.insertText", text="# a new first line\n")
    assert gutter.annotation(1) == "Not committed yet"
    assert gutter.annotation(2).startswith("Ada Tester")
    assert gutter.annotation(4).startswith("Bob Builder")


def test_toggling_blame_again_removes_the_gutter_and_its_margin(qtbot, window):
    editor = window.current_editor().editor
    margin = editor.viewportMargins().left()
    gutter = toggle_and_wait(qtbot, window)
    assert editor.viewportMargins().left() > margin
    assert window.commands.execute("git.toggleBlame") is None
    assert not gutter.attached
    assert editor.viewportMargins().left() == margin


def test_blame_of_a_file_never_committed_says_so(qtbot, window, two_author_repo):
    (two_author_repo / "new.py").write_text("x = 1\n")
    window.open_file(two_author_repo / "new.py")
    errors = []
    window.show_error = errors.append
    gutter = window.commands.execute("git.toggleBlame")
    qtbot.waitUntil(lambda: not gutter.attached)
    assert errors and "never been committed" in errors[0]


def test_toggle_blame_on_a_large_file_stays_in_the_palette_and_says_why_in_the_status_bar(
        qtbot, window, two_author_repo, monkeypatch):
    from workbench.editor.widgets import editor_tab

    monkeypatch.setattr(editor_tab, "LARGE_FILE_BYTES", 1000)
    (two_author_repo / "big.log").write_text("a log line\n" * 200)
    window.open_file(two_author_repo / "big.log")
    tab = window.current_editor()
    assert tab.large_view is not None and tab.editor is None
    errors = []
    window.show_error = errors.append

    assert "git.toggleBlame" in [command_id for command_id, _, _ in window.palette.matching("toggle blame")]
    assert window.commands.execute("git.toggleBlame") is None
    assert window.statusBar().currentMessage() == ("Blame needs a text editor tab; "
                                                   "this file is too large to blame here.")
    assert errors == []  # a status line, not an error dialog
    tab.large_view.close_file()


def test_toggle_blame_without_a_file_tab_says_to_open_a_file(qtbot, window):
    window.close_tab(window.tabs.currentIndex())
    assert window.current_editor() is None
    assert window.commands.execute("git.toggleBlame") is None
    assert "open a file" in window.statusBar().currentMessage()

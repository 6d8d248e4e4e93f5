"""Quick Open (Ctrl+P) in a real project window: the project's files by fuzzy name, recently
opened first, ``name:N`` and ``:N`` for lines, and a word when nothing matches."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from tests.project_files import write_project_file
from tests.project_windows import open_with_capabilities

TIMEOUT_MS = 30_000


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write_project_file(root)
    (root / "train.py").write_text("".join(f"line_{n} = {n}\n" for n in range(1, 40)))
    (root / "models").mkdir()
    (root / "models" / "model_tools.py").write_text("def tools():\n    pass\n")
    (root / "models" / "remodel.py").write_text("x = 1\n")
    (root / "build").mkdir()
    (root / "build" / "model_tools_copy.py").write_text("")
    (root / ".gitignore").write_text("build/\n")
    return root


@pytest.fixture
def window(qtbot, project):
    window = open_with_capabilities(project, ("workbench.search.widgets.quick_open:install_quick_open",),
                                    (1200, 800))
    qtbot.addWidget(window)
    yield window
    window.tasks.wait(TIMEOUT_MS)


def open_quick_open(qtbot, window):
    from workbench.search.widgets.quick_open import QuickOpen

    popup = window.findChild(QuickOpen)
    window.commands.execute("search.quick_open")
    assert popup.isVisible()
    qtbot.waitUntil(lambda: popup.file_count > 0, timeout=TIMEOUT_MS)
    return popup


def test_ctrl_p_lists_the_files_gitignore_leaves_in_and_ranks_word_starts_first(qtbot, window):
    assert window.commands.get("search.quick_open").shortcut == "Ctrl+P"
    popup = open_quick_open(qtbot, window)
    qtbot.keyClicks(popup.query, "model")
    assert [m.path for m in popup.matches()] == ["models/model_tools.py", "models/remodel.py"]
    qtbot.keyClick(popup.query, Qt.Key.Key_Return)
    assert not popup.isVisible()
    assert window.current_editor().path.name == "model_tools.py"


def test_a_line_after_a_colon_opens_the_file_there_and_a_colon_alone_moves_in_the_current_one(qtbot, window):
    popup = open_quick_open(qtbot, window)
    qtbot.keyClicks(popup.query, "train:12")
    assert popup.matches()[0].path == "train.py"
    qtbot.keyClick(popup.query, Qt.Key.Key_Return)
    assert window.current_editor().path.name == "train.py"
    assert window.current_editor().cursor_position()[0] == 12
    popup = open_quick_open(qtbot, window)
    qtbot.keyClicks(popup.query, ":30")
    assert "line 30" in popup.message.text()
    qtbot.keyClick(popup.query, Qt.Key.Key_Return)
    assert window.current_editor().cursor_position()[0] == 30


def test_files_opened_lately_lead_the_list_and_are_remembered_by_the_project(qtbot, window, project):
    popup = open_quick_open(qtbot, window)
    qtbot.keyClicks(popup.query, "remodel")
    qtbot.keyClick(popup.query, Qt.Key.Key_Return)
    popup = open_quick_open(qtbot, window)
    qtbot.keyClicks(popup.query, "model")
    first = popup.matches()[0]
    assert first.path == "models/remodel.py" and first.recent
    popup.query.clear()
    assert popup.matches()[0].path == "models/remodel.py"
    assert "models/remodel.py" in (project / ".workbench" / "recent_files.json").read_text()


def test_a_query_nothing_matches_says_so(qtbot, window):
    popup = open_quick_open(qtbot, window)
    qtbot.keyClicks(popup.query, "zzqq")
    assert popup.matches() == []
    assert popup.message.isVisible() and popup.message.text() == "No matching files"
    assert not popup.results.isVisible()
    said = popup.height()
    popup.query.clear()
    qtbot.keyClicks(popup.query, "remodel")
    one = popup.height()
    popup.query.clear()
    # As tall as what it lists: a message or one file makes a short popup, more files a taller one.
    assert max(said, one) < popup.height()
    assert popup.results.height() >= len(popup.matches()) * popup.results.sizeHintForRow(0)


def test_a_file_made_after_the_first_walk_is_listed_when_quick_open_opens_again(qtbot, window, project):
    popup = open_quick_open(qtbot, window)
    popup.hide()
    (project / "notes_new.md").write_text("")
    popup = open_quick_open(qtbot, window)
    qtbot.keyClicks(popup.query, "notesnew")
    qtbot.waitUntil(lambda: [m.path for m in popup.matches()] == ["notes_new.md"], timeout=TIMEOUT_MS)

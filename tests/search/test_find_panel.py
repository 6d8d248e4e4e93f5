"""The Search dock in a real project window: Ctrl+Shift+F, results streamed and grouped by file
with the matches highlighted, errors said in the dock, Replace with its preview and undo."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from tests.project_files import write_project_file
from tests.project_windows import open_with_capabilities
from workbench.search.widgets.find_panel import row_markup

TIMEOUT_MS = 30_000


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write_project_file(root)
    (root / "train.py").write_text("learning_rate = 0.1\nprint(learning_rate)\n")
    (root / "model").mkdir()
    (root / "model" / "net.py").write_text("def net(learning_rate):\n    return learning_rate * 2\n")
    (root / "notes.md").write_text("Tune the learning_rate first.\n")
    return root


@pytest.fixture
def window(qtbot, project):
    window = open_with_capabilities(project, ("workbench.search.widgets:install",), (1200, 800))
    qtbot.addWidget(window)
    yield window
    window.tasks.wait(TIMEOUT_MS)


def panel_of(window):
    from workbench.search.widgets import find_panel_of

    return find_panel_of(window)


def search(qtbot, panel, text: str):
    with qtbot.waitSignal(panel.sig_search_finished, timeout=TIMEOUT_MS) as finished:
        panel.find(text)
    return finished.args[0]


def shown(panel) -> dict[str, list[str]]:
    tree = panel.results_tree
    listed = {}
    for i in range(tree.topLevelItemCount()):
        item = tree.topLevelItem(i)
        listed[item.text(0)] = [row_markup(item.child(j)) for j in range(item.childCount())]
    return listed


def test_ctrl_shift_f_shows_the_dock_and_results_grouped_by_file_with_matches_highlighted(qtbot, window):
    panel = panel_of(window)
    action = window.menus.actions["search.find_in_files"]
    assert action.shortcut().toString() == "Ctrl+Shift+F"
    window.commands.execute("search.find_in_files")
    assert panel.isVisible() and panel.find_edit.hasFocus()
    summary = search(qtbot, panel, "learning_rate")
    assert (summary.files, summary.matches) == (3, 5)
    listed = shown(panel)
    assert set(listed) == {"train.py  (2)", "model/net.py  (2)", "notes.md  (1)"}
    assert listed["notes.md  (1)"] == ['<span style="color:#6e6e6e">1</span>&nbsp;&nbsp;Tune the '
                                       '<span style="background:#fde68a">learning_rate</span> first.']
    assert panel.status_text() == "5 results in 3 files."
    # The name leads, so a narrow dock cuts the folder rather than the name.
    net = next(panel.results_tree.topLevelItem(i) for i in range(3)
               if panel.results_tree.topLevelItem(i).text(0).startswith("model/"))
    assert row_markup(net).startswith("<b>net.py</b>") and "model&nbsp;&nbsp;(2)" in row_markup(net)


def test_a_click_on_a_result_opens_the_file_at_the_match(qtbot, window, project):
    panel = panel_of(window)
    search(qtbot, panel, "return")
    file_item = panel.results_tree.topLevelItem(0)
    panel.results_tree.itemClicked.emit(file_item.child(0), 0)
    tab = window.current_editor()
    assert tab is not None and tab.path == (project / "model" / "net.py").resolve()
    assert tab.cursor_position() == (2, 5)


def test_an_invalid_regex_says_what_is_wrong_in_the_dock(qtbot, window):
    panel = panel_of(window)
    panel.regex_button.setChecked(True)
    assert search(qtbot, panel, "learning_(rate") is None
    status = panel.status_text()
    assert status.startswith("Not a valid regular expression: unclosed group. Fix the pattern")
    assert "regex parse error" in status and "learning_(rate" in status  # rg's own words below
    assert panel.results_tree.topLevelItemCount() == 0
    # Fixed, the search runs again.
    assert search(qtbot, panel, r"learning_(rate)").matches == 5
    assert "error" not in panel.status_text()


def test_include_exclude_and_no_results_are_said(qtbot, window):
    panel = panel_of(window)
    panel.include_edit.setText("*.py")
    panel.exclude_edit.setText("model/**")
    assert search(qtbot, panel, "learning_rate").files == 1
    assert list(shown(panel)) == ["train.py  (2)"]
    assert search(qtbot, panel, "no such words") .files == 0
    assert panel.status_text().startswith("No results for 'no such words'.")


def test_replace_previews_every_change_then_replaces_the_ticked_ones_and_undo_restores(qtbot, window, project):
    panel = panel_of(window)
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    search(qtbot, panel, "learning_rate")
    panel.replace_edit.setText("lr")
    panel.preview_replace()
    qtbot.waitUntil(lambda: panel.plan is not None, timeout=TIMEOUT_MS)
    assert panel.pages.currentIndex() == 1
    assert len(panel.chosen_edits()) == 5
    assert panel.apply_button.text() == "Replace 5 in 3 files"
    # Untick the Markdown file's change.
    tree = panel.preview_tree
    notes = next(tree.topLevelItem(i) for i in range(tree.topLevelItemCount())
                 if tree.topLevelItem(i).text(0).startswith("notes.md"))
    assert "<s>learning_rate</s>" in row_markup(notes.child(0))
    notes.setCheckState(0, Qt.CheckState.Unchecked)
    assert panel.apply_button.text() == "Replace 4 in 2 files"
    assert {p: p.read_bytes() for p in before} == before  # the preview wrote nothing

    with qtbot.waitSignal(panel.sig_replace_finished, timeout=TIMEOUT_MS) as replaced:
        panel.apply_button.click()
    assert replaced.args[0].replaced == 4
    assert (project / "train.py").read_text() == "lr = 0.1\nprint(lr)\n"
    assert (project / "notes.md").read_bytes() == before[project / "notes.md"]
    qtbot.waitUntil(lambda: not panel.searching and panel.summary is not None, timeout=TIMEOUT_MS)
    assert panel.status_text() == "Replaced 4 in 2 files.\n1 result in 1 file."
    assert window.commands.get("search.undo_replace").is_enabled()

    with qtbot.waitSignal(panel.sig_replace_finished, timeout=TIMEOUT_MS):
        window.commands.execute("search.undo_replace")
    assert {p: p.read_bytes() for p in before} == before
    qtbot.waitUntil(lambda: not panel.searching and panel.summary is not None, timeout=TIMEOUT_MS)
    assert panel.status_text() == "Undid the replacement in 2 files.\n5 results in 3 files."


def test_a_file_open_with_unsaved_edits_or_changed_since_the_search_is_not_replaced(qtbot, window, project):
    panel = panel_of(window)
    search(qtbot, panel, "learning_rate")
    tab = window.open_file(project / "train.py")
    tab.insert_text("# mine\n")
    (project / "notes.md").write_text("Someone changed it: learning_rate.\n")
    panel.replace_edit.setText("lr")
    panel.preview_replace()
    qtbot.waitUntil(lambda: panel.plan is not None, timeout=TIMEOUT_MS)
    assert panel.status_text() == "Preview: 2 changes; 2 files will not be changed (see why below)."
    with qtbot.waitSignal(panel.sig_replace_finished, timeout=TIMEOUT_MS) as replaced:
        panel.apply_replace()
    outcome = replaced.args[0]
    assert outcome.replaced == 2 and outcome.files == 1
    assert dict(outcome.skipped) == {
        "notes.md": "changed since the search; search again to replace in it",
        "train.py": "has unsaved changes in the editor; save or revert them, then search again"}
    assert (project / "train.py").read_text() == "learning_rate = 0.1\nprint(learning_rate)\n"
    assert (project / "notes.md").read_text() == "Someone changed it: learning_rate.\n"
    assert (project / "model" / "net.py").read_text() == "def net(lr):\n    return lr * 2\n"
    qtbot.waitUntil(lambda: not panel.searching and panel.summary is not None, timeout=TIMEOUT_MS)
    assert "Not changed:" in panel.status_text() and "notes.md" in panel.status_text()


def test_a_long_search_can_be_cancelled_and_keeps_what_it_found(qtbot, window, project, monkeypatch):
    from workbench.search.widgets import find_panel

    real_search = find_panel.search_files

    def search_held_after_its_first_batch(root, query, on_files, cancel=None, **kwargs):
        # rg can finish 3,000 files before a click lands; its output is held (rg blocks on
        # the full pipe) from the first batch until Cancel, so the click always comes mid-search.
        def hold(batch):
            on_files(batch)
            for _ in range(3000):
                if cancel.cancelled:
                    return
                time.sleep(0.01)
        return real_search(root, query, hold, cancel=cancel, **kwargs)

    monkeypatch.setattr(find_panel, "search_files", search_held_after_its_first_batch)
    panel = panel_of(window)
    for i in range(3000):
        folder = project / "data" / f"d{i // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.txt").write_text("needle\n" * 3)
    with qtbot.waitSignal(panel.sig_results_shown, timeout=TIMEOUT_MS):
        panel.find("needle")
    with qtbot.waitSignal(panel.sig_search_finished, timeout=TIMEOUT_MS) as finished:
        panel.cancel_button.click()
    assert finished.args[0] is None
    assert not panel.searching and not panel.cancel_button.isVisible()
    assert panel.status_text().startswith("Search cancelled:")
    kept = panel.results_tree.topLevelItemCount()
    assert kept == len(panel.results) >= 1



def test_the_highlights_follow_the_theme(qtbot, window):
    from workbench.qt import theme

    panel = panel_of(window)
    search(qtbot, panel, "first")
    row = panel.results_tree.topLevelItem(0).child(0)
    assert theme.colour("FIND_MATCH", theme.LIGHT) in row_markup(row)
    try:
        theme.apply_theme(theme.DARK)
        assert theme.colour("FIND_MATCH", theme.DARK) in row_markup(row)
        assert theme.colour("FIND_MATCH", theme.LIGHT) not in row_markup(row)
    finally:
        theme.apply_theme(theme.LIGHT)

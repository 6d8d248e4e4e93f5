"""Huge files open at once in the read-only view while the line index is built in a thread;
find, the cursor line and the navigation keys work there without blocking the window."""

import pytest
from PySide6.QtCore import QPoint, Qt, QTimer
from PySide6.QtWidgets import QApplication

from workbench.editor.large_file_search import LineMatch
from workbench.editor.widgets import open_editor_tab
from workbench.editor.widgets.editor_tab import NOTICE_READ_ONLY
from workbench.editor.widgets.large_file_view import LARGE_FILE_BYTES, LargeFileView

LINE = b"2026-01-01 12:00:00.000 INFO  trainer  step=000000 loss=0.1234 lr=0.001\n"


def write_big_log(path, megabytes):
    block = LINE * 10_000
    count = megabytes * 2**20 // len(block) + 1
    with open(path, "wb") as handle:
        for _ in range(count):
            handle.write(block)
        handle.write(b"last line without newline")
    return count * 10_000 + 1


@pytest.mark.slow
def test_a_200_mb_log_opens_read_only_and_the_gui_keeps_turning_while_it_is_indexed(
    qtbot, tmp_path
):
    path = tmp_path / "train.log"
    lines = write_big_log(path, 200)
    ticks = []
    timer = QTimer(interval=0)
    timer.timeout.connect(lambda: ticks.append(view.indexing_done))

    tab = open_editor_tab(path, None)
    qtbot.addWidget(tab)
    view = tab.large_view
    assert isinstance(view, LargeFileView) and tab.is_read_only()
    assert NOTICE_READ_ONLY in tab.notices.topics()
    timer.start()
    tab.resize(800, 400)
    tab.show()
    with qtbot.waitSignal(view.sig_indexing_finished, timeout=60_000) as finished:
        pass
    timer.stop()
    assert finished.args == [lines]
    # Had the index been built on the GUI thread, no tick could have run before it was done.
    assert ticks.count(False) >= 5
    assert view.line_text(0) == LINE[:-1].decode()
    assert view.line_text(lines - 1) == "last line without newline"
    tab.set_cursor_position(lines + 100)  # past the end: the last screenful is shown
    assert view.first_visible_line() + view.visible_line_count() >= lines
    tab.set_cursor_position(1000)
    assert tab.cursor_position() == (1000, 1)
    assert tab.status()["read_only"] and tab.status()["eol"] == "LF"
    view.close_file()


def test_files_just_above_the_threshold_use_the_large_view(qtbot, tmp_path):
    path = tmp_path / "big.txt"
    write_big_log(path, LARGE_FILE_BYTES // 2**20)
    tab = open_editor_tab(path, None)
    qtbot.addWidget(tab)
    assert tab.large_view is not None and tab.editor is None
    qtbot.waitSignal(tab.large_view.sig_indexing_finished, timeout=30_000).wait()
    tab.large_view._selection = (0, 1)
    assert tab.large_view.selected_text() == (LINE[:-1].decode() + "\n") * 1 + LINE[:-1].decode()
    tab.large_view.close_file()


# Find, cursor and keys in the large-file view --------------------------------------------


def open_big(qtbot, path):
    tab = open_editor_tab(path, None)
    qtbot.addWidget(tab)
    tab.resize(800, 400)
    tab.show()
    qtbot.waitUntil(lambda: tab.large_view.indexing_done, timeout=60_000)
    return tab


def write_log_with_marks(path, megabytes, marks, trailing_newline=True):
    """A log of LINE, with ``marks`` {line: text} replacing some lines; returns the line count."""
    block_lines = 10_000
    blocks = megabytes * 2**20 // (len(LINE) * block_lines) + 1
    total = blocks * block_lines
    with open(path, "wb") as handle:
        for block in range(blocks):
            first = block * block_lines
            inside = {line - first: text for line, text in marks.items()
                      if first <= line < first + block_lines}
            if not inside:
                handle.write(LINE * block_lines)
                continue
            for offset in range(block_lines):
                handle.write(inside[offset].encode() + b"\n" if offset in inside else LINE)
        if not trailing_newline:
            handle.write(b"the very last line")
            total += 1
    return total


@pytest.mark.slow
def test_find_reaches_a_match_150_mb_into_the_file_while_the_gui_keeps_turning(qtbot, tmp_path):
    path = tmp_path / "train.log"
    target = 150 * 2**20 // len(LINE)
    write_log_with_marks(path, 160, {target: "epoch 7 NaN detected in loss"})
    tab = open_big(qtbot, path)
    bar = tab.find_bar
    ticks = []
    timer = QTimer(interval=0)
    timer.timeout.connect(lambda: ticks.append(bar.is_searching()))
    timer.start()
    tab.show_find()
    assert bar.isVisible() and not bar.replace_edit.isVisible()
    assert tab.notices.topics() == [NOTICE_READ_ONLY]
    bar.set_query("nan detected")
    qtbot.waitUntil(lambda: bar.current_match is not None, timeout=60_000)
    qtbot.waitUntil(lambda: not bar.is_searching(), timeout=60_000)
    timer.stop()
    assert bar.current_match == LineMatch(target, 8, 12)
    # Had the search run on the GUI thread, no tick could have run while it was going on.
    assert ticks.count(True) >= 5
    assert tab.cursor_position() == (target + 1, 1)
    assert tab.large_view.match_shown() == (target, 8, 12)
    first = tab.large_view.first_visible_line()
    assert first <= target < first + tab.large_view.visible_line_count()
    assert bar.count_text() == "1 of 1"
    tab.large_view.close_file()


@pytest.fixture
def marked_log(tmp_path):
    path = tmp_path / "run.log"
    lines = write_log_with_marks(path, LARGE_FILE_BYTES // 2**20, {
        10: "Warning: cat", 20: "warning: concat", 30: "WARNING: cat_food", 40: "error 404 at step 17",
    })
    return path, lines


def test_find_in_the_large_view_honours_match_case_whole_word_and_regex(qtbot, marked_log):
    tab = open_big(qtbot, marked_log[0])
    bar = tab.find_bar
    tab.show_find(replace=True)
    assert not bar.replace_edit.isVisible()

    def search(*args, **kwargs):
        bar.set_query(*args, **kwargs)
        qtbot.waitUntil(lambda: not bar.is_searching(), timeout=30_000)
        return bar.current_match, bar.count_text()

    assert search("warning") == (LineMatch(10, 0, 7), "1 of 3")
    assert search("warning", match_case=True) == (LineMatch(20, 0, 7), "1 of 1")
    assert search("cat", whole_word=True) == (LineMatch(10, 9, 3), "1 of 1")
    assert search(r"\d{3} at step \d+$", regex=True) == (LineMatch(40, 6, 14), "1 of 1")
    assert search("(bad", regex=True)[1].startswith("Invalid regular expression")
    assert search("not in the file") == (None, "No results")
    tab.large_view.close_file()


def test_next_and_previous_step_through_matches_and_wrap(qtbot, marked_log):
    tab = open_big(qtbot, marked_log[0])
    bar = tab.find_bar
    tab.show_find()
    bar.set_query("warning")
    qtbot.waitUntil(lambda: not bar.is_searching(), timeout=30_000)
    lines = []
    for step in (bar.find_next, bar.find_next, bar.find_next, bar.find_previous):
        step()
        qtbot.waitUntil(lambda: not bar.is_searching(), timeout=30_000)
        lines.append((bar.current_match.line, bar.count_text()))
    assert lines == [(20, "2 of 3"), (30, "3 of 3"), (10, "1 of 3"), (30, "3 of 3")]
    qtbot.keyClick(bar.find_edit, Qt.Key.Key_Escape)
    assert not bar.isVisible() and tab.large_view.match_shown() is None
    assert tab.notices.topics() == [NOTICE_READ_ONLY]
    tab.large_view.close_file()


def test_the_count_stops_at_the_cap_and_says_so(qtbot, marked_log):
    tab = open_big(qtbot, marked_log[0])
    bar = tab.find_bar
    tab.show_find()
    bar.set_query("INFO")
    qtbot.waitUntil(lambda: not bar.is_searching(), timeout=30_000)
    assert bar.count_text() == "1 of 10,000+"
    tab.large_view.close_file()


@pytest.mark.parametrize("trailing_newline", [True, False])
def test_ctrl_end_and_go_to_line_reach_the_true_last_line(qtbot, tmp_path, trailing_newline):
    path = tmp_path / "run.log"
    lines = write_log_with_marks(path, LARGE_FILE_BYTES // 2**20, {}, trailing_newline)
    tab = open_big(qtbot, path)
    view = tab.large_view
    assert view.line_count == lines
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_End, Qt.KeyboardModifier.ControlModifier)
    assert tab.cursor_position() == (lines, 1)
    assert view.first_visible_line() + view.visible_line_count() >= lines
    expected_last = "the very last line" if not trailing_newline else LINE[:-1].decode()
    assert view.line_text(view.cursor_line()) == expected_last
    qtbot.keyClick(view, Qt.Key.Key_Home, Qt.KeyboardModifier.ControlModifier)
    assert tab.cursor_position() == (1, 1) and view.first_visible_line() == 0
    tab.set_cursor_position(99_999_999)
    assert tab.cursor_position() == (lines, 1)
    view.close_file()


def test_go_to_the_end_while_indexing_lands_on_the_last_line_once_indexed(qtbot, tmp_path):
    path = tmp_path / "run.log"
    lines = write_log_with_marks(path, 3 * LARGE_FILE_BYTES // 2**20, {})
    tab = open_editor_tab(path, None)
    qtbot.addWidget(tab)
    tab.resize(800, 400)
    tab.show()
    tab.set_cursor_position(99_999_999)
    qtbot.waitUntil(lambda: tab.large_view.indexing_done, timeout=60_000)
    assert tab.cursor_position() == (lines, 1)
    tab.large_view.close_file()


def test_the_cursor_line_follows_clicks_and_keys_and_is_signalled(qtbot, tmp_path):
    path = tmp_path / "small.log"
    path.write_bytes(b"".join(b"line %d\n" % number for number in range(1, 201)))
    view = LargeFileView(path)
    qtbot.addWidget(view)
    view.resize(600, 300)
    view.show()
    qtbot.waitUntil(lambda: view.indexing_done, timeout=10_000)
    moves = []
    view.sig_cursor_moved.connect(moves.append)
    height = view.fontMetrics().height()
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(80, 3 * height + 2))
    assert view.cursor_line() == 3 and moves == [4]
    assert view.selected_text() == "line 4"
    qtbot.keyClick(view, Qt.Key.Key_Down)
    qtbot.keyClick(view, Qt.Key.Key_Down)
    qtbot.keyClick(view, Qt.Key.Key_Up)
    assert view.cursor_line() == 4 and moves == [4, 5, 6, 5]
    page = view.visible_line_count()
    qtbot.keyClick(view, Qt.Key.Key_PageDown)
    assert view.cursor_line() == 4 + page
    qtbot.keyClick(view, Qt.Key.Key_PageUp)
    qtbot.keyClick(view, Qt.Key.Key_PageUp)
    assert view.cursor_line() == 0
    qtbot.keyClick(view, Qt.Key.Key_Down, Qt.KeyboardModifier.ShiftModifier)
    assert view.selected_text() == "line 1\nline 2"
    qtbot.keyClick(view, Qt.Key.Key_End, Qt.KeyboardModifier.ControlModifier)
    assert view.cursor_line() == 199 and moves[-1] == 200
    assert view.first_visible_line() + view.visible_line_count() >= 200
    view.close_file()


def test_the_tab_reports_the_cursor_line_not_the_top_line(qtbot, marked_log):
    tab = open_big(qtbot, marked_log[0])
    moved = []
    tab.sig_cursor_moved.connect(lambda line, column: moved.append((line, column)))
    tab.set_cursor_position(5000)
    assert tab.cursor_position() == (5000, 1) and moved[-1] == (5000, 1)
    assert tab.large_view.first_visible_line() < 4999
    tab.large_view.setFocus()
    qtbot.keyClick(tab.large_view, Qt.Key.Key_Down)
    assert tab.cursor_position() == (5001, 1) and moved[-1] == (5001, 1)
    tab.large_view.close_file()


def test_focus_body_gives_the_large_view_the_keyboard(qtbot, marked_log):
    tab = open_big(qtbot, marked_log[0])
    tab.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is tab)
    tab.focus_body()
    assert QApplication.focusWidget() is tab.large_view
    tab.large_view.close_file()

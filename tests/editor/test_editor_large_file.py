"""Huge files open at once in the read-only view while the line index is built in a thread."""

import pytest
from PySide6.QtCore import QTimer

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

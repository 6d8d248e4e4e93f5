"""The EditorTab the project window uses: saving, reloading, notices and hot exit."""

import codecs
import sys

import pytest

from workbench.editor import EditorError, HotExitStore
from workbench.editor.widgets import EditorTab, open_editor_tab
from workbench.editor.widgets.editor_tab import (
    NOTICE_CHANGED_ON_DISK,
    NOTICE_DELETED,
    NOTICE_HOT_EXIT_OFF,
    NOTICE_READ_ONLY,
    NOTICE_RECOVERED,
)


def open_tab(qtbot, path, store=None):
    tab = open_editor_tab(path, store)
    qtbot.addWidget(tab)
    tab.resize(800, 400)
    tab.show()
    return tab


def test_save_keeps_encoding_line_endings_and_bom(qtbot, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(codecs.BOM_UTF16_LE + "héllo\r\nwörld\r\n".encode("utf-16-le"))
    tab = open_tab(qtbot, path)
    assert tab.status() == {"encoding": "UTF-16-LE with BOM", "eol": "CRLF",
                            "language": "Text only", "read_only": False}
    tab.set_cursor_position(2, 6)
    tab.insert_text("!")
    assert tab.is_modified()
    with qtbot.waitSignal(tab.sig_modified_changed) as modified:
        tab.save()
    assert modified.args == [False]
    assert path.read_bytes() == codecs.BOM_UTF16_LE + "héllo\r\nwörld!\r\n".encode("utf-16-le")


def test_unedited_latin1_cr_file_saves_byte_identical(qtbot, tmp_path):
    original = "Grüße\rdéjà vu\r".encode("latin-1")
    path = tmp_path / "old.txt"
    path.write_bytes(original)
    tab = open_tab(qtbot, path)
    assert tab.status()["eol"] == "CR"
    tab.save()
    assert path.read_bytes() == original


def test_saving_an_unencodable_character_raises_an_editor_error(qtbot, tmp_path):
    path = tmp_path / "old.txt"
    path.write_bytes("café\n".encode("latin-1"))
    tab = open_tab(qtbot, path)
    tab.insert_text("☃")
    with pytest.raises(EditorError, match="UTF-8"):
        tab.save()
    assert tab.is_modified()


def test_binary_file_opens_read_only_with_a_notice(qtbot, tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(b"\x89HDF\x00\x00\x01\x02" * 100)
    tab = open_tab(qtbot, path)
    assert tab.is_read_only() and tab.status()["read_only"]
    assert NOTICE_READ_ONLY in tab.notices.topics()
    with pytest.raises(EditorError, match="read-only"):
        tab.save()
    with pytest.raises(EditorError):
        tab.insert_text("x")


def test_missing_file_cannot_be_opened(qtbot, tmp_path):
    with pytest.raises(EditorError, match="does not exist"):
        open_editor_tab(tmp_path / "nope.py", None)


def test_external_change_reloads_an_unmodified_buffer_keeping_the_cursor(qtbot, tmp_path):
    path = tmp_path / "a.py"
    path.write_text("line one\nline two\nline three\n")
    tab = open_tab(qtbot, path)
    tab.set_cursor_position(2, 4)
    path.write_text("LINE ONE\nline two\nline three\nline four\n")
    qtbot.waitUntil(lambda: tab.text().startswith("LINE ONE"))
    assert tab.cursor_position() == (2, 4)
    assert not tab.is_modified()
    assert tab.notices.topics() == []


def test_external_change_to_a_modified_buffer_shows_a_notice_and_keeps_the_text(qtbot, tmp_path):
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    tab = open_tab(qtbot, path)
    tab.insert_text("# mine\n")
    path.write_text("x = 2\n")
    qtbot.waitUntil(lambda: NOTICE_CHANGED_ON_DISK in tab.notices.topics())
    assert tab.text() == "# mine\nx = 1\n"
    tab.notices.notice(NOTICE_CHANGED_ON_DISK).buttons["Reload"].click()
    assert tab.text() == "x = 2\n" and not tab.is_modified()


def test_keep_my_changes_then_save_overwrites_the_disk(qtbot, tmp_path):
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    tab = open_tab(qtbot, path)
    tab.insert_text("# mine\n")
    path.write_text("x = 2\n")
    qtbot.waitUntil(lambda: NOTICE_CHANGED_ON_DISK in tab.notices.topics())
    tab.notices.notice(NOTICE_CHANGED_ON_DISK).buttons["Keep my changes"].click()
    assert tab.notices.topics() == []
    tab.save()
    assert path.read_text() == "# mine\nx = 1\n"


def test_own_save_is_not_reported_as_an_external_change(qtbot, tmp_path):
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    tab = open_tab(qtbot, path)
    changes = []
    tab.disk_watcher.sig_file_changed.connect(changes.append)
    tab.insert_text("y = 2\n")
    tab.save()
    tab.disk_watcher.check_now()
    qtbot.wait(300)  # let any watcher events arrive; the assertion counts them, not time
    assert changes == []
    assert tab.notices.topics() == []


def test_deleted_file_shows_a_notice_and_keeps_the_buffer(qtbot, tmp_path):
    path = tmp_path / "a.py"
    path.write_text("keep me\n")
    tab = open_tab(qtbot, path)
    path.unlink()
    qtbot.waitUntil(lambda: NOTICE_DELETED in tab.notices.topics())
    assert tab.text() == "keep me\n"
    tab.save()
    assert path.read_text() == "keep me\n"
    assert NOTICE_DELETED not in tab.notices.topics()


def test_typing_reaches_hot_exit_after_the_debounce_and_a_new_tab_recovers_it(qtbot, project):
    path = project / "train.py"
    path.write_text("epochs = 1\n", encoding="utf-8")
    store = HotExitStore(project)
    tab = open_tab(qtbot, path, store)
    tab.set_cursor_position(1, 11)
    tab.insert_text("0")
    qtbot.waitUntil(lambda: store.load(path) is not None)
    assert store.load(path).text == "epochs = 10\n"
    assert not tab.recovered_from_hot_exit

    reopened = open_tab(qtbot, path, HotExitStore(project))
    assert reopened.text() == "epochs = 10\n"
    assert reopened.is_modified() and reopened.recovered_from_hot_exit
    assert NOTICE_RECOVERED in reopened.notices.topics()
    reopened.save()
    assert path.read_text() == "epochs = 10\n"
    qtbot.waitUntil(lambda: store.load(path) is None)


def test_undoing_back_to_the_file_forgets_the_kept_copy_though_the_window_closes_at_once(qtbot, project):
    import shiboken6

    path = project / "train.py"
    path.write_text("epochs = 1\n", encoding="utf-8")
    store = HotExitStore(project)
    tab = open_editor_tab(path, store)
    tab.show()
    tab.set_cursor_position(1, 11)
    tab.insert_text("0")
    qtbot.waitUntil(lambda: store.load(path) is not None)
    tab.editor.undo()
    assert not tab.is_modified()
    shiboken6.delete(tab)  # the window closed before the next kept copy was due
    qtbot.waitUntil(lambda: store.load(path) is None)
    reopened = open_tab(qtbot, path, HotExitStore(project))
    assert not reopened.is_modified() and not reopened.recovered_from_hot_exit


def test_discarding_recovered_changes_goes_back_to_the_file(qtbot, project):
    path = project / "a.py"
    path.write_text("on disk\n")
    store = HotExitStore(project)
    store.save(path, "unsaved\n", disk_sha256="")
    tab = open_tab(qtbot, path, store)
    assert tab.text() == "unsaved\n"
    tab.notices.notice(NOTICE_RECOVERED).buttons["Discard"].click()
    assert tab.text() == "on disk\n" and not tab.is_modified()
    qtbot.waitUntil(lambda: store.load(path) is None)


def test_unwritable_project_shows_that_changes_cannot_be_kept(qtbot, project):
    (project / ".workbench").write_text("not a folder")
    path = project / "a.py"
    path.write_text("x\n")
    tab = open_tab(qtbot, path, HotExitStore(project))
    assert NOTICE_HOT_EXIT_OFF in tab.notices.topics()


def test_go_to_line_bar_clamps_and_accepts_a_column(qtbot, tmp_path):
    path = tmp_path / "a.py"
    path.write_text("a\nbb\nccc\n")
    tab = open_tab(qtbot, path)
    tab.show_go_to_line()
    tab.go_to_line_bar.entry.setText("3:2")
    assert tab.go_to_line_bar.accept()
    assert tab.cursor_position() == (3, 2)
    tab.show_go_to_line()
    tab.go_to_line_bar.entry.setText("500")
    tab.go_to_line_bar.accept()
    assert tab.cursor_position() == (4, 1)
    tab.show_go_to_line()
    tab.go_to_line_bar.entry.setText("abc")
    assert not tab.go_to_line_bar.accept()
    assert tab.go_to_line_bar.isVisible()


def test_cursor_moves_are_signalled_one_based(qtbot, tmp_path):
    path = tmp_path / "a.py"
    path.write_text("a\nbcd\n")
    tab = open_tab(qtbot, path)
    with qtbot.waitSignal(tab.sig_cursor_moved) as moved:
        tab.set_cursor_position(2, 3)
    assert moved.args == [2, 3]


def test_tab_block_commands_reach_the_editor(qtbot, tmp_path):
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    tab = open_tab(qtbot, path)
    tab.toggle_comment()
    tab.indent()
    assert tab.text() == "    # x = 1\n"
    tab.dedent()
    assert tab.text() == "# x = 1\n"


def test_find_bar_opens_from_the_tab_with_replace(qtbot, tmp_path):
    path = tmp_path / "a.py"
    path.write_text("value = value + 1\n")
    tab = open_tab(qtbot, path)
    tab.show_find(replace=True)
    assert tab.find_bar.isVisible() and tab.find_bar.replace_edit.isVisible()
    tab.find_bar.set_query("value")
    assert tab.find_bar.count_text() == "1 of 2"


def test_editor_tab_class_is_exported():
    assert open_editor_tab.__name__ == "open_editor_tab" and EditorTab.save


def test_f3_in_the_editor_steps_through_matches_and_esc_closes_the_find_bar(qtbot, tmp_path):
    from PySide6.QtCore import Qt

    path = tmp_path / "a.py"
    path.write_text("a = 1\na = 2\na = 3\n")
    tab = open_tab(qtbot, path)
    tab.show_find()
    tab.find_bar.set_query("a =")
    assert tab.find_bar.count_text() == "1 of 3"
    qtbot.keyClick(tab.editor, Qt.Key.Key_F3)
    assert tab.find_bar.count_text() == "2 of 3"
    qtbot.keyClick(tab.editor, Qt.Key.Key_F3, Qt.KeyboardModifier.ShiftModifier)
    assert tab.find_bar.count_text() == "1 of 3"
    qtbot.keyClick(tab.editor, Qt.Key.Key_Escape)
    assert not tab.find_bar.isVisible()


def test_binary_file_is_shown_as_hex_with_binary_status(qtbot, tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(b"\x89HDF\x00\x00\x01\x02" * 100)
    tab = open_tab(qtbot, path)
    assert tab.editor is None and tab.hex_view is not None and tab.body is tab.hex_view
    assert tab.status() == {"encoding": "binary", "eol": "", "language": "Binary",
                            "read_only": True}
    rows = tab.hex_view.toPlainText().split("\n")
    assert len(rows) == 50
    assert rows[0] == "00000000  89 48 44 46 00 00 01 02  89 48 44 46 00 00 01 02  |.HDF.....HDF....|"
    assert rows[-1].startswith("00000310  ")
    assert "first" not in tab.notices.notice(NOTICE_READ_ONLY).message
    assert tab.text() == "" and tab.hex_view.font().fixedPitch()
    with pytest.raises(EditorError, match="binary"):
        tab.save_copy(tmp_path / "copy.bin")
    tab.show_find(replace=True)
    assert tab.find_bar.isVisible() and not tab.find_bar.replace_edit.isVisible()
    tab.find_bar.set_query("HDF")
    assert tab.find_bar.count_text() == "1 of 100"


def test_a_long_binary_file_shows_its_first_64_kib_and_says_so(qtbot, tmp_path):
    path = tmp_path / "weights.bin"
    path.write_bytes(bytes(range(256)) * (int(1.2 * 2**20) // 256))
    tab = open_tab(qtbot, path)
    assert tab.hex_view.document().blockCount() == 64 * 1024 // 16
    assert "Showing the first 64 KiB of 1.2 MiB." in tab.notices.notice(NOTICE_READ_ONLY).message
    tab.set_cursor_position(3)
    assert tab.cursor_position() == (3, 1)


def test_a_binary_file_above_the_large_file_size_opens_as_hex(qtbot, tmp_path):
    from workbench.editor.line_index import LARGE_FILE_BYTES

    path = tmp_path / "checkpoint.pt"
    with open(path, "wb") as handle:
        handle.write(b"PK\x03\x04\x00\x00")
        handle.truncate(LARGE_FILE_BYTES + 1)
    tab = open_tab(qtbot, path)
    assert tab.large_view is None and tab.hex_view is not None
    assert tab.status()["encoding"] == "binary"


def test_focus_body_gives_the_text_the_keyboard(qtbot, tmp_path):
    from PySide6.QtWidgets import QApplication

    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    tab = open_tab(qtbot, path)
    tab.show_find()
    tab.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is tab)
    assert QApplication.focusWidget() is not tab.editor
    tab.focus_body()
    assert QApplication.focusWidget() is tab.editor
    tab.find_bar.close_bar()
    assert QApplication.focusWidget() is tab.editor

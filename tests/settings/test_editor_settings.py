"""The editor follows the settings: at open, live when they change, the window's zoom, and
autosave; a bad settings file is one message and the defaults."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextOption
from PySide6.QtWidgets import QMessageBox, QPlainTextEdit

from workbench.settings import PROJECT


def _font_size(tab) -> float:
    return tab.editor.font().pointSizeF()


def test_an_editor_opens_with_the_users_font_tab_width_rulers_wrap_and_whitespace(
        open_window, user_settings_file, project_root, qtbot):
    user_settings_file.write_text("[editor]\nfont_size = 14\ntab_width = 2\nrulers = [80]\n"
                                  "word_wrap = true\nshow_whitespace = true\n")
    window = open_window()
    tab = window.open_file(project_root / "a.py")
    editor = tab.editor
    assert _font_size(tab) == 14
    assert editor.tabStopDistance() == editor.fontMetrics().horizontalAdvance(" ") * 2
    assert editor.lineWrapMode() == QPlainTextEdit.LineWrapMode.WidgetWidth
    assert editor.document().defaultTextOption().flags() & QTextOption.Flag.ShowTabsAndSpaces
    assert editor.options.rulers == (80,)
    editor.set_cursor_position(2, 1)
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert tab.text().splitlines()[1] == "      return x"  # Tab put two spaces (the tab width) before the four


def test_a_changed_setting_applies_at_once_to_every_open_editor_and_the_project_wins(
        open_window, project_root):
    window = open_window()
    first, second = window.open_file(project_root / "a.py"), window.open_file(project_root / "b.py")
    window.settings.set("editor.font_size", 16)
    assert _font_size(first) == _font_size(second) == 16
    window.settings.set("editor.font_size", 12, PROJECT)
    assert _font_size(first) == 12
    window.settings.set("editor.word_wrap", True)
    assert second.editor.lineWrapMode() == QPlainTextEdit.LineWrapMode.WidgetWidth
    assert "# the demo project" in (project_root / "workbench.toml").read_text()


def test_zoom_grows_and_shrinks_every_editor_and_ctrl_0_returns_to_the_setting(
        open_window, project_root, user_settings_file):
    window = open_window()
    first, second = window.open_file(project_root / "a.py"), window.open_file(project_root / "b.py")
    window.commands.execute("view.zoomIn")
    window.commands.execute("view.zoomIn")
    assert _font_size(first) == _font_size(second) == 12
    window.commands.execute("view.zoomOut")
    assert _font_size(second) == 11
    window.commands.execute("view.resetZoom")
    assert _font_size(first) == 10
    assert not user_settings_file.exists()  # the zoom is the window's, not a setting
    for _ in range(100):
        window.commands.execute("view.zoomOut")
    assert _font_size(first) == 6


def test_the_zoom_shortcuts_are_ctrl_equal_minus_and_0(open_window):
    window = open_window()
    shortcuts = {cid: window.commands.get(cid).shortcut for cid in ("view.zoomIn", "view.zoomOut", "view.resetZoom")}
    assert shortcuts == {"view.zoomIn": "Ctrl+=", "view.zoomOut": "Ctrl+-", "view.resetZoom": "Ctrl+0"}
    assert window.commands.get("workbench.settings").shortcut == "Ctrl+,"


def test_autosave_after_a_delay_writes_the_file_once_typing_stops(
        open_window, project_root, user_settings_file, qtbot):
    user_settings_file.write_text("[editor]\nautosave = \"after_delay\"\nautosave_delay = 200\n")
    window = open_window()
    tab = window.open_file(project_root / "b.py")
    tab.insert_text("import sys\n")
    assert tab.is_modified()
    qtbot.waitUntil(lambda: not tab.is_modified(), timeout=5000)
    assert (project_root / "b.py").read_text().startswith("import sys\n")


def test_autosave_is_off_by_default(open_window, project_root, qtbot):
    window = open_window()
    tab = window.open_file(project_root / "b.py")
    tab.insert_text("x = 1\n")
    qtbot.wait(300)
    assert tab.is_modified() and (project_root / "b.py").read_text() == "import os\n"


def test_autosave_on_focus_change_saves_when_focus_leaves_the_editor(
        open_window, project_root, user_settings_file, qtbot):
    user_settings_file.write_text("[editor]\nautosave = \"on_focus_change\"\n")
    window = open_window()
    window.activateWindow()
    tab = window.open_file(project_root / "b.py")
    tab.editor.setFocus()
    qtbot.waitUntil(tab.editor.hasFocus, timeout=3000)
    tab.insert_text("y = 2\n")
    assert tab.is_modified()
    window.tree.setFocus()
    qtbot.waitUntil(lambda: not tab.is_modified(), timeout=3000)
    assert "y = 2" in (project_root / "b.py").read_text()


def test_a_wrong_type_in_settings_toml_is_one_message_naming_the_file_and_the_defaults_apply(
        open_window, project_root, user_settings_file, qtbot):
    user_settings_file.write_text("[editor]\nfont_size = \"large\"\n\n[appearance]\ntheme = \"neon\"\n")
    window = open_window()
    boxes = [box for box in window.findChildren(QMessageBox) if box.isVisible()]
    assert len(boxes) == 1
    text = boxes[0].text()
    assert f"{user_settings_file}, line 2" in text and "a whole number from 6 to 48" in text
    assert f"{user_settings_file}, line 5" in text and '"light", "dark", "system"' in text
    tab = window.open_file(project_root / "a.py")
    assert _font_size(tab) == 10


def test_a_change_in_one_window_reaches_the_other_windows_through_the_settings_file(
        open_window, project_root, tmp_path, qtbot):
    other_root = tmp_path / "other"
    other_root.mkdir()
    (other_root / "c.py").write_text("c = 3\n")
    first, second = open_window(), open_window(other_root)
    sent = []
    first.sig_broadcast.connect(lambda event, data: sent.append(event))
    tab = second.open_file(other_root / "c.py")
    first.settings.set("editor.font_size", 13)
    qtbot.waitUntil(lambda: _font_size(tab) == 13, timeout=10_000)
    assert second.settings.value("editor.font_size") == 13
    assert sent == []  # the file is the message: no window is told through the hub

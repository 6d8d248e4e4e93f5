"""Every window process reads its settings again when their files change, whoever changed them:
another process, another window's Settings, a hand edit; and the theme follows, as in the hub
and the tool windows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication

from workbench.qt import theme
from workbench.settings import PROJECT, Settings
from workbench.ui.appearance import follow_settings_files, follow_theme_setting

WAIT_MS = 10_000

_WRITE_IN_ANOTHER_PROCESS = """
import sys
from workbench.settings import Settings
Settings(sys.argv[1]).set("editor.font_size", 15)
"""


def _followed(qtbot, user_file: Path, project_file: Path | None = None):
    """Settings followed by a watcher, its owner (kept by the test), and the changes heard."""
    owner = QObject()
    settings = Settings(user_file, project_file)
    watcher = follow_settings_files(settings, owner)
    heard: list[frozenset[str]] = []
    settings.on_changed(heard.append)
    return owner, settings, watcher, heard


def test_a_value_another_process_writes_reaches_the_followed_settings(qtbot, tmp_path):
    user_file = tmp_path / "config" / "settings.toml"
    owner, settings, _watcher, heard = _followed(qtbot, user_file)
    subprocess.run([sys.executable, "-c", _WRITE_IN_ANOTHER_PROCESS, str(user_file)], check=True,
                   cwd=Path(__file__).resolve().parents[2], timeout=60)
    qtbot.waitUntil(lambda: settings.value("editor.font_size") == 15, timeout=WAIT_MS)
    assert heard == [frozenset({"editor.font_size"})]
    del owner


def test_a_hand_edit_in_place_and_a_project_file_change_are_both_followed(qtbot, tmp_path):
    user_file = tmp_path / "config" / "settings.toml"
    user_file.parent.mkdir()
    user_file.write_text("[editor]\nword_wrap = false\n")
    project_file = tmp_path / "demo" / "workbench.toml"
    project_file.parent.mkdir()
    project_file.write_text("[project]\nname = \"demo\"\n")
    owner, settings, _watcher, heard = _followed(qtbot, user_file, project_file)
    with open(user_file, "a") as file:  # as an editor that writes in place does
        file.write("show_whitespace = true\n")
    qtbot.waitUntil(lambda: settings.value("editor.show_whitespace") is True, timeout=WAIT_MS)
    Settings(user_file, project_file).set("editor.tab_width", 2, PROJECT)
    qtbot.waitUntil(lambda: settings.value("editor.tab_width") == 2, timeout=WAIT_MS)
    assert heard == [frozenset({"editor.show_whitespace"}), frozenset({"editor.tab_width"})]
    del owner


def test_a_settings_file_whose_folder_is_made_later_is_followed(qtbot, tmp_path):
    user_file = tmp_path / "not" / "yet" / "settings.toml"
    owner, settings, _watcher, _heard = _followed(qtbot, user_file)
    Settings(user_file).set("editor.rulers", [80])  # makes the folders, then the file
    qtbot.waitUntil(lambda: settings.value("editor.rulers") == [80], timeout=WAIT_MS)
    Settings(user_file).set("editor.rulers", [100])  # the folder now watched itself
    qtbot.waitUntil(lambda: settings.value("editor.rulers") == [100], timeout=WAIT_MS)
    del owner


def test_a_burst_of_changes_is_read_once_and_the_followed_settings_own_write_changes_nothing(
        qtbot, tmp_path):
    user_file = tmp_path / "config" / "settings.toml"
    owner, settings, watcher, heard = _followed(qtbot, user_file)
    writer = Settings(user_file)
    for size in (11, 12, 13):
        writer.set("editor.font_size", size)
    qtbot.waitUntil(lambda: settings.value("editor.font_size") == 13, timeout=WAIT_MS)
    assert watcher.reloads == 1 and heard == [frozenset({"editor.font_size"})]
    settings.set("editor.font_size", 14)  # heard at once; read again later, with nothing new
    qtbot.waitUntil(lambda: watcher.reloads == 2, timeout=WAIT_MS)
    assert heard == [frozenset({"editor.font_size"})] * 2
    del owner


def test_a_process_following_the_theme_like_the_hub_turns_dark_when_the_file_says_so(qtbot, tmp_path):
    user_file = tmp_path / "config" / "settings.toml"
    app = QApplication.instance()
    owner = QObject()
    settings = Settings(user_file)
    follow_settings_files(settings, owner)
    try:
        assert follow_theme_setting(settings) == "light"
        Settings(user_file).set("appearance.theme", "dark")  # as a project window's Settings does
        qtbot.waitUntil(lambda: theme.current_theme() == "dark", timeout=WAIT_MS)
        assert app.palette().color(QPalette.ColorRole.Window).lightness() < 60
        user_file.write_text("[appearance]\ntheme = \"light\"\n")
        qtbot.waitUntil(lambda: theme.current_theme() == "light", timeout=WAIT_MS)
        assert app.palette().color(QPalette.ColorRole.Window).lightness() > 180
    finally:
        theme.apply_theme("light")
        del owner

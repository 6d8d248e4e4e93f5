"""A project window paints first with what it needs of the settings, read with tomllib alone (the
dark theme when it is chosen, the editor's font), and loads the settings package just after: the
cheap read keeps the settings' rules, so nothing changes when they load."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QTextOption

from workbench.qt import theme
from workbench.settings import SETTINGS_FILE, Settings, setting
from workbench.ui import first_paint_settings
from workbench.ui.first_paint_settings import read_first_paint_settings

FILES = [
    ("", ""),
    ("[appearance]\ntheme = \"dark\"\n[editor]\nfont_family = \"DejaVu Sans Mono\"\nfont_size = 14\n", ""),
    ("[appearance]\ntheme = \"dark\"\n[editor]\nfont_size = 14\n",
     "[appearance]\ntheme = \"light\"\n[editor]\nfont_size = 12\n"),
    # Values the settings do not use: the weaker level or the default applies.
    ("[editor]\nfont_size = 14\n", "[editor]\nfont_size = 99\nfont_family = 3\n"),
    ("[appearance]\ntheme = \"blue\"\n[editor]\nfont_size = \"14\"\n", "[appearance]\ntheme = 1\n"),
    ("[editor]\nfont_size = true\n", "editor = 3\n"),
    ("[appearance\ntheme = \"dark\"\n", "[appearance]\ntheme = \"system\"\n"),  # a broken user file
]


@pytest.mark.parametrize("user_text, project_text", FILES)
def test_the_cheap_read_gives_what_the_settings_give(tmp_path, user_text, project_text):
    import tomllib

    user_file = tmp_path / SETTINGS_FILE
    project_file = tmp_path / "workbench.toml"
    user_file.write_text(user_text)
    project_file.write_text(project_text)
    settings = Settings(user_file, project_file)
    read = read_first_paint_settings(tmp_path, tomllib.loads(project_text))
    assert (read.theme or setting("appearance.theme").default) == settings.value("appearance.theme")
    assert read.font_family == settings.value("editor.font_family")
    assert (read.font_size or setting("editor.font_size").default) == settings.value("editor.font_size")


def test_the_names_the_cheap_read_keeps_are_the_settings_own():
    assert first_paint_settings.USER_SETTINGS_FILE == SETTINGS_FILE
    assert first_paint_settings.THEME_CHOICES == setting("appearance.theme").choices
    font_size = setting("editor.font_size")
    assert (first_paint_settings.FONT_SIZES.start, first_paint_settings.FONT_SIZES.stop - 1) == (
        font_size.minimum, font_size.maximum)


def _window(qtbot, root):
    from workbench.project import load_project
    from workbench.ui.project_window import ProjectWindow

    window = ProjectWindow(load_project(root))
    qtbot.addWidget(window)
    window.discard_changes_on_close = True
    return window


def test_a_window_is_dark_before_its_first_paint_when_the_user_chose_dark(qtbot, project_root, user_settings_file):
    user_settings_file.write_text("[appearance]\ntheme = \"dark\"\n")
    try:
        window = _window(qtbot, project_root)
        tab = window.open_file(project_root / "a.py")
        assert theme.current_theme() == "dark" and "#1e1e1e" in tab.editor.styleSheet()
    finally:
        theme.apply_theme("light")


def test_the_first_editor_paints_in_the_users_font_and_takes_the_other_settings_once_the_window_is_up(
        qtbot, project_root, user_settings_file):
    user_settings_file.write_text("[editor]\nfont_size = 14\nshow_whitespace = true\n")
    (project_root / "workbench.toml").write_text("[project]\nname = \"demo\"\nmain = \"a.py\"\n")
    window = _window(qtbot, project_root)
    tab = window.current_editor()
    assert tab is not None and tab.editor.font().pointSizeF() == 14
    window.resize(1000, 700)
    window.show()
    window.install_capabilities(())  # what the first paint starts
    assert tab.editor.document().defaultTextOption().flags() & QTextOption.Flag.ShowTabsAndSpaces
    assert tab.editor.font().pointSizeF() == 14
    assert window.settings.value("editor.font_size") == 14

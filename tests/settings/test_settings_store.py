"""The settings service on real files: levels, bad lines, writing that keeps comments, and the
change notification."""

from __future__ import annotations

import subprocess
import sys

import pytest

from workbench.settings import PROJECT, SETTINGS, USER, Settings, SettingsError, setting


@pytest.fixture
def files(tmp_path):
    return tmp_path / "settings.toml", tmp_path / "project" / "workbench.toml"


def test_a_project_value_wins_over_the_users_which_wins_over_the_default(files):
    user, project = files
    project.parent.mkdir()
    user.write_text("[editor]\nfont_size = 14\ntab_width = 2\n")
    project.write_text("[project]\nname = \"p\"\n\n[editor]\ntab_width = 8\n")
    settings = Settings(user, project)
    assert settings.value("editor.tab_width") == 8 and settings.source("editor.tab_width") == "project"
    assert settings.value("editor.font_size") == 14 and settings.source("editor.font_size") == "user"
    assert settings.value("editor.word_wrap") is False and settings.source("editor.word_wrap") == "default"
    assert settings.problems == []


def test_a_value_of_the_wrong_type_is_one_message_naming_the_file_the_line_and_the_fix(files):
    user, _ = files
    user.write_text("# mine\n[editor]\nfont_size = \"big\"\n\n[appearance]\ntheme = \"solarized\"\n")
    settings = Settings(user)
    assert settings.value("editor.font_size") == setting("editor.font_size").default
    assert settings.value("appearance.theme") == "system"
    assert len(settings.problems) == 2
    theme, size = sorted(settings.problems, key=lambda problem: "theme" not in problem)
    assert f"{user}, line 3" in size and "a whole number from 6 to 48" in size and "font_size = 10" in size
    assert "remove the line" in size
    assert f"{user}, line 6" in theme and '"light", "dark", "system"' in theme and '"solarized"' in theme


def test_a_file_that_is_not_toml_is_one_message_and_the_defaults(files):
    user, _ = files
    user.write_text("[editor\nfont_size = 3\n")
    settings = Settings(user)
    assert settings.value("editor.font_size") == 10
    assert len(settings.problems) == 1 and str(user) in settings.problems[0]
    assert "not valid TOML" in settings.problems[0]


def test_a_setting_written_in_the_file_of_a_level_it_does_not_have_is_named(files):
    user, project = files
    project.parent.mkdir()
    user.write_text("[python]\ninterpreter = \"python3\"\n")
    project.write_text("[devices]\nrequire_keyring = true\n")
    settings = Settings(user, project)
    assert settings.value("python.interpreter") == "" and settings.value("devices.require_keyring") is False
    assert any("move it to the project's workbench.toml" in p for p in settings.problems)
    assert any("move it to your settings.toml" in p for p in settings.problems)


def test_writing_keeps_the_users_comments_and_tells_listeners_what_changed(files):
    user, project = files
    project.parent.mkdir()
    user.write_text("# my settings\n[editor]\n# big for the projector\nfont_size = 18\n")
    project.write_text("[project]\nname = \"demo\"  # the name\n")
    settings = Settings(user, project)
    heard = []
    settings.on_changed(heard.append)
    settings.set("editor.word_wrap", True)
    settings.set("editor.rulers", [80, 100], PROJECT)
    assert heard == [{"editor.word_wrap"}, {"editor.rulers"}]
    text = user.read_text()
    assert "# my settings" in text and "# big for the projector" in text and "word_wrap = true" in text
    assert "name = \"demo\"  # the name" in project.read_text()
    again = Settings(user, project)
    assert again.value("editor.rulers") == [80, 100] and again.value("editor.word_wrap") is True


def test_resetting_removes_the_line_and_the_weaker_level_applies(files):
    user, project = files
    project.parent.mkdir()
    user.write_text("[editor]\ntab_width = 2\n")
    project.write_text("[editor]\ntab_width = 8\n")
    settings = Settings(user, project)
    heard = []
    settings.on_changed(heard.append)
    settings.reset("editor.tab_width", PROJECT)
    assert settings.value("editor.tab_width") == 2 and heard == [{"editor.tab_width"}]
    assert "editor" not in project.read_text()
    settings.reset("editor.tab_width", USER)
    assert settings.value("editor.tab_width") == 4


def test_a_wrong_value_or_level_is_refused_with_what_to_do(files):
    user, _ = files
    settings = Settings(user)
    with pytest.raises(SettingsError, match="one of \"light\", \"dark\", \"system\""):
        settings.set("appearance.theme", "neon")
    with pytest.raises(SettingsError, match="open a project"):
        settings.set("editor.tab_width", 2, PROJECT)
    with pytest.raises(SettingsError, match="project setting only"):
        Settings(user, user.parent / "workbench.toml").set("python.interpreter", "python3", USER)
    assert not user.exists()


def test_the_file_edited_by_hand_is_read_again_on_reload(files):
    user, _ = files
    settings = Settings(user)
    heard = []
    settings.on_changed(heard.append)
    user.write_text("[editor]\nshow_whitespace = true\n")
    assert settings.reload() == {"editor.show_whitespace"} and heard == [{"editor.show_whitespace"}]


def test_every_declaration_has_help_and_a_default_it_accepts():
    for item in SETTINGS:
        assert item.help and item.check(item.default) == item.default


def test_reading_settings_does_not_load_tomlkit(files):
    user, _ = files
    user.write_text("[editor]\nfont_size = 12\n")
    code = ("import sys; from workbench.settings import Settings; "
            f"s = Settings({str(user)!r}); assert s.value('editor.font_size') == 12; "
            "print('tomlkit' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

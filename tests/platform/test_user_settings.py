"""Settings the user writes in settings.toml: defaults when absent, a clear error when wrong."""

from __future__ import annotations

import pytest

from workbench.platform.user_settings import SettingsFileError, read_setting


def test_a_missing_file_table_or_key_gives_the_default(tmp_path):
    settings = tmp_path / "settings.toml"
    assert read_setting(settings, "devices", "require_keyring", False) is False
    settings.write_text("[editor]\nfont_size = 12\n")
    assert read_setting(settings, "devices", "require_keyring", False) is False
    settings.write_text("[devices]\nother = 1\n")
    assert read_setting(settings, "devices", "require_keyring", True) is True


def test_a_written_value_is_read(tmp_path):
    settings = tmp_path / "settings.toml"
    settings.write_text("# mine\n[devices]\nrequire_keyring = true  # no file of secrets\n"
                        "[editor]\nfont_size = 12\nscale = 2\n")
    assert read_setting(settings, "devices", "require_keyring", False) is True
    assert read_setting(settings, "editor", "font_size", 10) == 12
    assert read_setting(settings, "editor", "scale", 1.0) == 2.0
    assert read_setting(settings, "editor", "font_size", None) == 12


def test_a_value_of_the_wrong_kind_says_where_and_what_to_write(tmp_path):
    settings = tmp_path / "settings.toml"
    settings.write_text('[editor]\nfont_size = 12\n\n[devices]\n# keys\nrequire_keyring = "yes"\n'
                        "port = true\n")
    with pytest.raises(SettingsFileError) as raised:
        read_setting(settings, "devices", "require_keyring", False)
    assert str(raised.value) == (f'{settings}, line 6: [devices] require_keyring must be true or '
                                 f'false, like require_keyring = false, not "yes"; fix it, or remove '
                                 f'the line to use the default')
    assert raised.value.path == settings
    with pytest.raises(SettingsFileError, match="port must be a whole number, like port = 7100, not true"):
        read_setting(settings, "devices", "port", 7100)


def test_a_table_written_as_a_value_is_an_error(tmp_path):
    settings = tmp_path / "settings.toml"
    settings.write_text("devices = true\n")
    with pytest.raises(SettingsFileError) as raised:
        read_setting(settings, "devices", "require_keyring", False)
    assert str(raised.value) == (f"{settings}, line 1: devices must be a table (a line [devices] "
                                 "with its keys below), not true")


def test_a_file_that_is_not_toml_names_its_line(tmp_path):
    settings = tmp_path / "settings.toml"
    settings.write_text("[devices]\nrequire_keyring = yes\n")
    with pytest.raises(SettingsFileError) as raised:
        read_setting(settings, "devices", "require_keyring", False)
    message = str(raised.value)
    assert message.startswith(f"{settings} is not valid TOML: ")
    assert "line 2" in message and message.endswith("fix that line, or move the file away to use "
                                                    "the defaults")
    settings.write_bytes(b"[devices]\nname = \"\xff\"\n")
    with pytest.raises(SettingsFileError, match="is not UTF-8 text"):
        read_setting(settings, "devices", "name", "")

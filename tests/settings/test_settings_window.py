"""The Settings window is generated from the declarations: sections, search, the User / Project
switch, typed editors, the modified mark and reset; a change applies live."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QComboBox, QLineEdit, QSpinBox

from workbench.settings import SETTINGS


def _settings_window(window):
    window.commands.execute("workbench.settings")
    return window._settings_window


def test_every_setting_has_a_row_with_an_editor_of_its_type(open_window):
    dialog = _settings_window(open_window())
    assert set(dialog.rows) == {item.key for item in SETTINGS}
    kinds = {"bool": QCheckBox, "int": QSpinBox, "choice": QComboBox, "str": QLineEdit, "ints": QLineEdit}
    for item in SETTINGS:
        assert isinstance(dialog.rows[item.key].editor, kinds[item.type])
    assert set(dialog.section_labels) == {item.section for item in SETTINGS}


def test_search_filters_by_name_and_by_help(open_window):
    dialog = _settings_window(open_window())
    dialog.search.setText("wrap")
    assert dialog.visible_keys() == ["editor.word_wrap"]
    dialog.search.setText("keyring")
    assert dialog.visible_keys() == ["devices.require_keyring"]
    assert dialog.section_labels["devices"].isVisibleTo(dialog) and not dialog.section_labels["editor"].isVisibleTo(dialog)
    dialog.search.setText("projector zebra")
    assert dialog.visible_keys() == [] and dialog.nothing_found.isVisibleTo(dialog)
    dialog.search.clear()
    assert len(dialog.visible_keys()) == len(SETTINGS)


def test_editing_a_value_writes_the_users_file_applies_live_and_marks_it(open_window, project_root,
                                                                         user_settings_file):
    window = open_window()
    tab = window.open_file(project_root / "a.py")
    dialog = _settings_window(window)
    row = dialog.rows["editor.font_size"]
    assert not row.is_modified and not row.reset_button.isEnabled()
    row.editor.setValue(15)
    assert "font_size = 15" in user_settings_file.read_text()
    assert tab.editor.font().pointSizeF() == 15
    assert row.is_modified and row.reset_button.isEnabled()
    row.reset_button.click()
    assert tab.editor.font().pointSizeF() == 10 and not row.is_modified
    assert "font_size" not in user_settings_file.read_text()


def test_the_project_level_shows_the_users_value_and_writes_workbench_toml(open_window, project_root,
                                                                         user_settings_file):
    user_settings_file.write_text("[editor]\ntab_width = 2\n")
    window = open_window()
    dialog = _settings_window(window)
    dialog.show_level("project")
    row = dialog.rows["editor.tab_width"]
    assert row.editor.value() == 2 and not row.is_modified and "user setting applies" in row.note.text()
    assert not dialog.rows["devices.require_keyring"].editor.isEnabled()
    assert dialog.rows["python.interpreter"].editor.isEnabled()
    row.editor.setValue(8)
    text = (project_root / "workbench.toml").read_text()
    assert "# the demo project" in text and "tab_width = 8" in text
    assert window.settings.value("editor.tab_width") == 8 and row.is_modified
    dialog.show_level("user")
    assert dialog.rows["editor.tab_width"].editor.value() == 2
    assert not dialog.rows["python.interpreter"].editor.isEnabled()


def test_a_list_typed_wrong_is_refused_in_the_row_and_nothing_is_written(open_window, user_settings_file):
    dialog = _settings_window(open_window())
    row = dialog.rows["editor.rulers"]
    row.editor.setText("80, wide")
    row.editor.editingFinished.emit()
    assert "a list of whole numbers" in row.note.text() and row.note.isVisibleTo(dialog)
    assert not user_settings_file.exists()
    row.editor.setText("80, 120")
    row.editor.editingFinished.emit()
    assert dialog.settings.value("editor.rulers") == [80, 120]


def test_choosing_the_dark_theme_in_the_window_applies_it_live(open_window):
    from workbench.qt import theme

    window = open_window()
    dialog = _settings_window(window)
    combo = dialog.rows["appearance.theme"].editor
    combo.setCurrentIndex(combo.findData("dark"))
    assert theme.current_theme() == "dark"


def test_the_problems_of_the_files_show_at_the_top(open_window, user_settings_file):
    user_settings_file.write_text("[editor]\ntab_width = 0\n")
    dialog = _settings_window(open_window())
    assert "tab_width must be a whole number from 1 to 16" in dialog.problems.text()
    assert dialog.problems.isVisibleTo(dialog)

"""The New Project dialog: its templates' descriptions read whole, and it creates the project."""

from __future__ import annotations

from workbench.ui.new_project_dialog import NewProjectDialog


def test_template_descriptions_wrap_instead_of_scrolling_sideways(qtbot, tmp_path):
    dialog = NewProjectDialog(location=tmp_path)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    templates = dialog.templates
    assert templates.count() >= 2
    assert templates.horizontalScrollBar().maximum() == 0 and not templates.horizontalScrollBar().isVisible()
    viewport = templates.viewport().width()
    for row in range(templates.count()):
        rect = templates.visualItemRect(templates.item(row))
        assert rect.width() <= viewport  # no line runs past the list's edge
    dialog.grab().save(str(tmp_path / "new-project.png"))


def test_create_makes_the_project_from_the_chosen_template(qtbot, tmp_path):
    dialog = NewProjectDialog(location=tmp_path)
    qtbot.addWidget(dialog)
    dialog.name.setText("mnist")
    dialog.create()
    assert dialog.created_project == tmp_path / "mnist"
    assert (tmp_path / "mnist" / "workbench.toml").is_file()

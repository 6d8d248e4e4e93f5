"""The Registry panel over a real registry: what the table and the plot show, and that its
actions change the registry on disk (pin, alias with its reason, rollback, remove, retention)
and that it follows changes other processes make."""

from __future__ import annotations

import subprocess
import sys

from PySide6.QtWidgets import QMessageBox

from tests.registry_widgets.conftest import TIMEOUT_MS, finish, open_models


def test_the_table_lists_versions_newest_first_with_their_facts(registry_project, make_panel):
    panel, errors = make_panel(registry_project)
    table = panel.table
    assert table.columns == ["Version", "Dataset", "val_acc", "val_loss", "Size", "Aliases", "Pinned",
                             "Verified on", "Created"]
    assert [table.item(row, 0).text() for row in range(table.rowCount())] == ["0003", "0002", "0001", "0000"]
    assert table.cell_text(2, "val_acc") == "0.83" and table.item(table.row_of(2), 2).font().bold()
    assert table.cell_text(2, "Dataset") == "0001" and table.cell_text(0, "Dataset") == "0000"
    assert table.cell_text(2, "Aliases") == "production" and table.cell_text(3, "Aliases") == "staging"
    assert table.cell_text(1, "Pinned") == "✓" and table.cell_text(3, "Pinned") == ""
    assert table.cell_text(2, "Verified on") == "pixel-7 ✓, rpi4 ✗" and table.cell_text(3, "Verified on") == ""
    assert table.cell_text(2, "Size").endswith("KB") and table.cell_text(2, "Created")[:2] == "20"
    assert panel.stack.currentWidget() is panel.splitter and errors == []


def test_a_version_whose_file_went_missing_carries_a_warning(registry_project, make_panel):
    (registry_project / "registry" / "models" / "bestmodel_0003.pt").unlink()
    panel, _errors = make_panel(registry_project)
    cell = panel.table.item(panel.table.row_of(3), 0)
    assert not cell.icon().isNull() and "bestmodel_0003.pt is missing" in cell.toolTip()
    assert panel.table.item(panel.table.row_of(2), 0).icon().isNull()


def test_the_plot_draws_the_chosen_metric_of_each_version(registry_project, make_panel, qtbot):
    panel, _errors = make_panel(registry_project)
    plot = panel.plot
    assert plot.chosen_metric == "val_acc"
    qtbot.waitUntil(lambda: plot.plotted()[0] == [0.0, 1.0, 2.0, 3.0], timeout=TIMEOUT_MS)
    assert plot.plotted()[1] == [0.71, 0.78, 0.83, 0.80]
    plot.set_metric("val_loss")
    assert plot.plotted() == ([0.0, 1.0, 2.0, 3.0], [0.90, 0.70, 0.55, 0.60])
    assert [plot.metric_box.itemText(i) for i in range(plot.metric_box.count())] == ["val_acc", "val_loss"]


def test_pin_and_unpin_are_written_to_the_registry(registry_project, make_panel, qtbot):
    panel, _errors = make_panel(registry_project)
    panel.select_version(3)
    assert panel.buttons["pin"].text() == "Pin"
    operation = finish(qtbot, panel, lambda: panel.buttons["pin"].click())
    assert operation.succeeded and open_models(registry_project).get(3).pinned
    assert panel.table.cell_text(3, "Pinned") == "✓" and panel.buttons["pin"].text() == "Unpin"
    finish(qtbot, panel, lambda: panel.toggle_pin(1))
    assert not open_models(registry_project).get(1).pinned and panel.table.cell_text(1, "Pinned") == ""


def test_an_alias_set_in_the_dialog_records_its_reason_and_rolls_back(registry_project, make_panel, qtbot):
    panel, _errors = make_panel(registry_project)
    panel.select_version(3)
    dialog = panel.set_alias()
    assert [dialog.alias_box.itemText(i) for i in range(dialog.alias_box.count())][:2] == ["production", "staging"]
    dialog.alias_box.setCurrentText("production")
    assert "on version 0002" in dialog.now_label.text()
    dialog.reason_edit.setText("faster on the phone")
    finish(qtbot, panel, dialog.accept)
    models = open_models(registry_project)
    assert models.aliases.all()["production"] == 3
    last = models.aliases.history()[-1]
    assert (last.alias, last.previous, last.version, last.reason) == ("production", 2, 3, "faster on the phone")
    assert panel.table.cell_text(3, "Aliases") == "production, staging"

    rollback = panel.rollback()
    rollback.alias_box.setCurrentIndex(rollback.alias_box.findData("production"))
    rollback.reason_edit.setText("crashes on rpi4")
    finish(qtbot, panel, rollback.accept)
    assert open_models(registry_project).aliases.all()["production"] == 2
    assert "production is back on version 0002" in panel.status_line.text()

    history = panel.show_alias_history()
    rows = [[history.table.item(row, column).text() for column in range(history.table.columnCount())]
            for row in range(history.table.rowCount())]
    assert rows[0][1:5] == ["production", "0003 → 0002", "rollback", "crashes on rpi4"]
    assert rows[1][1:5] == ["production", "0002 → 0003", "set", "faster on the phone"]
    assert len(rows) == 4


def test_a_bad_alias_name_is_refused_in_the_dialog(registry_project, make_panel):
    panel, _errors = make_panel(registry_project)
    dialog = panel.set_alias(2)
    dialog.alias_box.setCurrentText("2024")
    dialog.accept()
    assert dialog.isVisible() and "cannot be an alias" in dialog.error_label.text()
    dialog.reject()


def click(box: QMessageBox, text: str) -> None:
    next(button for button in box.buttons() if button.text() == text).click()


def test_removing_a_pinned_version_is_refused_and_the_reason_shown(registry_project, make_panel, qtbot):
    panel, errors = make_panel(registry_project)
    panel.select_version(1)
    box = panel.remove_version()
    assert "0001" in box.text()
    operation = finish(qtbot, panel, lambda: click(box, "Remove"))
    assert not operation.succeeded
    assert "pinned; unpin it first" in panel.status_line.text() and "pinned; unpin it first" in errors[-1]
    assert (registry_project / "registry" / "models" / "neural_net_info_0001.yaml").is_file()
    assert panel.table.row_of(1) >= 0


def test_removing_a_version_after_confirming(registry_project, make_panel, qtbot):
    panel, errors = make_panel(registry_project)
    panel.select_version(0)
    box = panel.remove_version()
    click(box, "Cancel")
    assert (registry_project / "registry" / "models" / "neural_net_info_0000.yaml").is_file()
    finish(qtbot, panel, lambda: click(panel.remove_version(), "Remove"))
    assert not (registry_project / "registry" / "models" / "neural_net_info_0000.yaml").exists()
    assert panel.table.rowCount() == 3 and panel.table.row_of(0) < 0 and errors == []
    assert "Removed version 0000" in panel.status_line.text() and "KB freed" in panel.status_line.text()


def test_retention_asks_then_says_what_it_removed_and_the_space_freed(registry_project, make_panel, qtbot):
    panel, _errors = make_panel(registry_project)
    finish(qtbot, panel, lambda: panel.run_retention(keep=1))
    box = panel.findChild(QMessageBox, "registry-confirm-retention")
    assert "removes version 0000" in box.text() and "0001 pinned" in box.text() and "0002 alias production" in box.text()
    finish(qtbot, panel, lambda: click(box, "Remove"))
    assert sorted(version.number for version in open_models(registry_project).list()) == [1, 2, 3]
    assert "Retention removed version 0000" in panel.status_line.text() and "KB freed" in panel.status_line.text()
    finish(qtbot, panel, lambda: panel.run_retention(keep=1))
    assert "nothing to remove" in panel.status_line.text()


def test_a_version_registered_by_another_process_appears(registry_project, make_panel, qtbot):
    panel, _errors = make_panel(registry_project)
    script = ("import sys; from tests.registry_widgets.conftest import register; from pathlib import Path; "
              "register(Path(sys.argv[1]), 'run-outside', 0.9, 0.4, '0002')")
    subprocess.run([sys.executable, "-c", script, str(registry_project)], check=True, timeout=120,
                   cwd=str(__import__("pathlib").Path(__file__).resolve().parents[2]))
    qtbot.waitUntil(lambda: panel.table.row_of(4) >= 0, timeout=TIMEOUT_MS)
    assert panel.table.item(0, 0).text() == "0004" and panel.table.cell_text(4, "val_acc") == "0.9"
    open_models(registry_project).set_alias("staging", 4, "from the command line")
    qtbot.waitUntil(lambda: panel.table.cell_text(4, "Aliases") == "staging", timeout=TIMEOUT_MS)


def test_a_project_without_versions_says_how_they_appear(tmp_path, make_panel, qtbot):
    root = tmp_path / "empty"
    root.mkdir()
    (root / "workbench.toml").write_text('[project]\nname = "empty"\n', encoding="utf-8")
    panel, _errors = make_panel(root)
    assert panel.stack.currentWidget() is panel.empty_label
    assert "workbench dataset version" in panel.empty_label.text() and "--dataset-version" in panel.empty_label.text()
    assert not panel.buttons["remove"].isEnabled() and not panel.buttons["gc"].isEnabled()


def test_a_damaged_registry_file_is_said_in_the_panel_not_raised(registry_project, make_panel, qtbot):
    panel, _errors = make_panel(registry_project)
    (registry_project / "registry" / "aliases.json").write_text("{not json", encoding="utf-8")
    qtbot.waitUntil(lambda: panel.stack.currentWidget() is panel.empty_label, timeout=TIMEOUT_MS)
    assert "aliases.json is damaged" in panel.empty_label.text() and "Restore it" in panel.empty_label.text()
    assert not panel.buttons["rollback"].isEnabled()

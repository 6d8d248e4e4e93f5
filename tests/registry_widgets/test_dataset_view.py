"""The Registry panel's dataset view over real sample files: Cut Version… first shows what the
data holds that the newest version does not, then cuts (all of it or a part) and the table
lists the new manifest; a version's details, a comparison, val.txt's history, another process's
cut, and errors said in the panel instead of raised."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QAction

from tests.registry_widgets.conftest import TIMEOUT_MS, finish
from workbench.registry.widgets.version_rows import format_size

DATA_PROJECT = '[project]\nname = "samples"\n\n[data]\ntrain = "data/train"\nval = "data/val"\n'
ROOT = Path(__file__).resolve().parents[2]


def write_samples(folder: Path, names: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text(f"the sample {name}\n" * 20, encoding="utf-8")


@pytest.fixture
def data_project(tmp_path) -> Path:
    root = tmp_path / "samples"
    write_samples(root / "data" / "train", ["a.txt", "b.txt", "c.txt"])
    write_samples(root / "data" / "val", ["v1.txt"])
    (root / "workbench.toml").write_text(DATA_PROJECT, encoding="utf-8")
    return root


def open_datasets(root: Path):
    from workbench.registry import open_versions

    return open_versions(root, python=sys.executable).datasets


def dataset_panel(make_panel, root: Path):
    panel, errors = make_panel(root)
    panel.show_view("datasets")
    return panel, errors


def ready(qtbot, dialog) -> None:
    """Wait until the dialog has looked at the data."""
    qtbot.waitUntil(lambda: dialog.changes is not None or dialog.error_label.isVisible(), timeout=TIMEOUT_MS)


def test_cut_in_the_dialog_writes_a_manifest_and_the_table_lists_it(data_project, make_panel, qtbot):
    panel, errors = dataset_panel(make_panel, data_project)
    view = panel.dataset_view
    assert view.stack.currentWidget() is view.empty_page and "data/train" in view.empty_message
    dialog = panel.cut_dataset_version()
    assert dialog.isVisible() and not dialog.cut_button.isEnabled()
    ready(qtbot, dialog)
    assert "holds 3 samples; the first version takes them" in dialog.summary.text()
    assert dialog.changes_view.toPlainText().splitlines() == ["+ data/train/a.txt", "+ data/train/b.txt",
                                                              "+ data/train/c.txt"]
    assert dialog.fraction_box.text() == "all" and dialog.cut_button.isEnabled()
    dialog.reason_edit.setText("the first samples")
    operation = finish(qtbot, panel, dialog.accept)
    assert operation.succeeded and errors == []
    manifest = data_project / "registry" / "datasets" / "train_0000.txt"
    assert manifest.is_file() and len(manifest.read_text(encoding="utf-8").splitlines()) == 4
    assert view.stack.currentWidget() is view.splitter and view.table.rowCount() == 1
    assert [view.table.cell_text(0, column) for column in ("Version", "Samples", "Part", "Parent", "Reason")] == \
        ["0000", "3", "all", "", "the first samples"]
    size = sum(path.stat().st_size for path in (data_project / "data" / "train").iterdir())
    assert view.table.cell_text(0, "Size") == format_size(size) and view.table.cell_text(0, "By")
    assert panel.status_line.text().startswith("Cut dataset version 0000: 3 samples")
    assert "registry/datasets/train_0000.txt" in panel.status_line.text()
    assert view.selected_version().number == 0 and panel.view == "datasets"


def test_the_dialog_shows_a_file_added_since_the_newest_version(data_project, make_panel, qtbot):
    open_datasets(data_project).cut(reason="before")
    write_samples(data_project / "data" / "train", ["d.txt"])
    (data_project / "data" / "train" / "a.txt").unlink()
    panel, _errors = dataset_panel(make_panel, data_project)
    dialog = panel.cut_dataset_version()
    ready(qtbot, dialog)
    assert dialog.summary.text() == "Since version 0000 the data holds 1 new, 1 removed and 0 changed samples:"
    assert dialog.changes_view.toPlainText().splitlines() == ["+ data/train/d.txt", "− data/train/a.txt"]
    finish(qtbot, panel, dialog.accept)
    view = panel.dataset_view
    assert view.table.item(0, 0).text() == "0001" and view.table.cell_text(1, "Parent") == "0000"
    assert view.table.cell_text(1, "Changes") == "+1 −1 ~0"
    qtbot.waitUntil(lambda: "From 0000 to 0001" in view.changes_heading.text(), timeout=TIMEOUT_MS)
    assert view.changes_view.toPlainText().splitlines() == ["+ data/train/d.txt", "− data/train/a.txt"]


def test_nothing_new_is_said_and_a_cut_dialog_closed_early_cuts_nothing(data_project, make_panel, qtbot):
    open_datasets(data_project).cut()
    panel, _errors = dataset_panel(make_panel, data_project)
    dialog = panel.cut_dataset_version()
    ready(qtbot, dialog)
    assert "nothing new since version 0000" in dialog.summary.text() and not dialog.changes_view.isVisible()
    dialog.reject()
    qtbot.wait(50)
    assert [v.number for v in open_datasets(data_project).list()] == [0]


def test_a_fraction_cut_takes_that_part_of_the_samples(data_project, make_panel, qtbot):
    write_samples(data_project / "data" / "train", ["d.txt"])
    panel, _errors = dataset_panel(make_panel, data_project)
    dialog = panel.cut_dataset_version()
    ready(qtbot, dialog)
    dialog.fraction_box.setValue(50)
    assert dialog.fraction_box.text() == "50 %" and dialog.fraction == 0.5
    finish(qtbot, panel, dialog.accept)
    version = open_datasets(data_project).get(0)
    assert (version.samples, version.fraction) == (2, 0.5)
    assert panel.dataset_view.table.cell_text(0, "Part") == "50 %"
    assert panel.dataset_view.table.cell_text(0, "Samples") == "2"
    assert "Cut dataset version 0000: 2 samples (50% of the data)" in panel.status_line.text()


def test_the_fraction_box_reads_all_and_percentages():
    from workbench.registry.widgets.cut_dialog import FractionSpinBox

    box = FractionSpinBox()
    assert box.fraction is None and box.text() == "all"
    assert box.valueFromText("30 %") == 30 and box.valueFromText("all") == 100
    box.setValue(1)
    assert box.fraction == 0.01 and box.minimum() == 1


def test_a_project_without_data_says_how_to_declare_it_and_errors_are_shown_not_raised(tmp_path, make_panel,
                                                                                     qtbot):
    root = tmp_path / "nodata"
    root.mkdir()
    (root / "workbench.toml").write_text('[project]\nname = "nodata"\n', encoding="utf-8")
    panel, errors = dataset_panel(make_panel, root)
    empty = panel.dataset_view.empty_message
    assert 'train = "data/train"' in panel.dataset_view.empty_label.text()
    assert 'train = "data/train"' in empty and 'samples = "module:function"' in empty and "Cut Version…" in empty
    dialog = panel.cut_dataset_version()
    ready(qtbot, dialog)
    assert "does not say where the data is" in dialog.error_label.text() and not dialog.cut_button.isEnabled()
    dialog.reject()
    operation = finish(qtbot, panel, lambda: panel.cut_dataset_version(reason=""))
    assert not operation.succeeded and "does not say where the data is" in panel.status_line.text()
    assert errors and "[data]" in errors[-1]
    assert not (root / "registry" / "datasets").exists()


def test_a_version_s_details_and_the_val_history(data_project, make_panel, qtbot):
    datasets = open_datasets(data_project)
    datasets.cut(reason="first")
    write_samples(data_project / "data" / "val", ["v2.txt"])
    write_samples(data_project / "data" / "train", ["e.txt"])
    panel, _errors = dataset_panel(make_panel, data_project)
    dialog = panel.cut_dataset_version()
    ready(qtbot, dialog)
    dialog.new_val_box.setChecked(True)
    dialog.reason_edit.setText("more val")
    finish(qtbot, panel, dialog.accept)
    assert "Note: val.txt replaced (2 samples), as asked." in panel.status_line.text()
    view = panel.dataset_view
    view.select_version(1)
    fields = {label: field.text() for label, field in view.detail_fields.items()}
    recorded = json.loads((data_project / "registry" / "datasets" / "train_0001.json").read_text(encoding="utf-8"))
    assert fields["Manifest"] == "registry/datasets/train_0001.txt"
    assert fields["sha256"] == recorded["manifest_sha256"]
    assert fields["Validation"].startswith("2 samples in val.txt") and fields["Parent"] == "0000 (+1 −0 ~0)"
    assert view.val_table.rowCount() == 2 and view.val_table.item(0, 3).text() == "more val"
    assert view.val_table.item(1, 3).text() == "first" and view.tabs.tabText(1) == "val.txt History (2)"
    view.select_version(0)
    qtbot.waitUntil(lambda: "the first version" in view.changes_heading.text(), timeout=TIMEOUT_MS)
    assert len(view.changes_view.toPlainText().splitlines()) == 3


def test_compare_with_and_a_damaged_manifest_is_said(data_project, make_panel, qtbot):
    datasets = open_datasets(data_project)
    datasets.cut()
    write_samples(data_project / "data" / "train", ["f.txt"])
    datasets.cut()
    write_samples(data_project / "data" / "train", ["g.txt"])
    datasets.cut()
    panel, _errors = dataset_panel(make_panel, data_project)
    view = panel.dataset_view
    view.select_version(2)
    menu = view.context_menu()
    compare = menu.findChild(type(menu), "registry-compare-menu")
    assert [action.objectName() for action in compare.actions()] == ["registry-compare-0001", "registry-compare-0000"]
    next(a for a in compare.actions() if a.objectName() == "registry-compare-0000").trigger()
    qtbot.waitUntil(lambda: "From 0000 to 0002" in view.changes_heading.text(), timeout=TIMEOUT_MS)
    assert view.changes_view.toPlainText().splitlines() == ["+ data/train/f.txt", "+ data/train/g.txt"]
    manifest = data_project / "registry" / "datasets" / "train_0001.txt"
    manifest.write_text(manifest.read_text(encoding="utf-8") + "data/train/x.txt\n", encoding="utf-8")
    view.select_version(1)
    qtbot.waitUntil(view.problem_label.isVisible, timeout=TIMEOUT_MS)
    assert "does not match the hash recorded" in view.problem_label.text()


def test_a_version_cut_by_another_process_appears(data_project, make_panel, qtbot):
    panel, _errors = dataset_panel(make_panel, data_project)
    subprocess.run([sys.executable, "-m", "workbench", "dataset", "version", str(data_project), "--reason",
                    "from a terminal"], check=True, timeout=120, cwd=str(ROOT), capture_output=True)
    view = panel.dataset_view
    qtbot.waitUntil(lambda: view.table.row_of(0) >= 0, timeout=TIMEOUT_MS)
    assert view.table.cell_text(0, "Reason") == "from a terminal"
    write_samples(data_project / "data" / "train", ["h.txt"])
    open_datasets(data_project).cut(0.5, "half")
    qtbot.waitUntil(lambda: view.table.row_of(1) >= 0, timeout=TIMEOUT_MS)
    assert view.table.cell_text(1, "Part") == "50 %"


def test_the_switch_shows_each_view_s_buttons_and_keeps_the_model_view(registry_project, make_panel):
    panel, _errors = make_panel(registry_project)
    assert panel.view == "models" and panel.views.currentWidget() is panel.stack
    visible = {key for key, action in panel._bar_actions.items() if action.isVisible()}
    assert "cut" not in visible and {"pin", "alias", "refresh"} <= visible
    panel.view_buttons["datasets"].click()
    assert panel.view == "datasets" and panel.views.currentWidget() is panel.dataset_view
    visible = {key for key, action in panel._bar_actions.items() if action.isVisible()}
    assert visible == {"refresh", "cut"}
    panel.view_buttons["models"].click()
    assert panel.view == "models" and panel.table.rowCount() == 4


def test_cut_dataset_version_is_in_the_models_menu_and_the_palette(data_project, qtbot):
    from workbench.project import load_project
    from workbench.registry.widgets import panel_of
    from workbench.ui.project_window import ProjectWindow

    window = ProjectWindow(load_project(data_project))
    qtbot.addWidget(window)
    window.show()
    window.install_capabilities(("workbench.registry.widgets:install",))
    try:
        models_menu = next(action for action in window.menuBar().actions() if action.text() == "Models").menu()
        titles = [action.text() for action in models_menu.actions()]
        assert titles.index("Cut Dataset Version…") == titles.index("Registry") + 1
        labels = {command.label for command in window.commands.all() if command.in_palette}
        assert {"Registry: Cut Dataset Version…", "Registry: Dataset Versions"} <= labels
        panel = panel_of(window)
        finish(qtbot, panel, lambda: window.commands.execute("registry.cutDatasetVersion", fraction=0.5,
                                                             reason="from the palette"))
        qtbot.waitUntil(panel.isVisible, timeout=TIMEOUT_MS)
        assert panel.view == "datasets" and panel.dataset_view.table.cell_text(0, "Reason") == "from the palette"
        assert panel.dataset_view.watched_folder() in [Path(p) for p in panel._watcher.directories()]
    finally:
        window.tasks.wait(TIMEOUT_MS)


@pytest.mark.parametrize("theme_name", ["light", "dark"])
def test_pictures_of_the_dataset_view(data_project, make_panel, qtbot, theme_name):
    from workbench.qt import theme
    from tests.registry_widgets.conftest import screenshot

    datasets = open_datasets(data_project)
    datasets.cut(reason="first samples")
    write_samples(data_project / "data" / "train", ["d.txt", "e.txt"])
    datasets.cut(0.6, "60 % to see if more data helps")
    datasets.cut(reason="all of it")
    theme.apply_theme(theme_name)
    try:
        panel, _errors = dataset_panel(make_panel, data_project)
        view = panel.dataset_view
        view.select_version(1)
        qtbot.waitUntil(lambda: "From 0000 to 0001" in view.changes_heading.text(), timeout=TIMEOUT_MS)
        assert panel.buttons["cut"].isVisible() and not panel.buttons["pin"].isVisible()
        assert screenshot(panel, f"registry-datasets-{theme_name}").stat().st_size > 0
        write_samples(data_project / "data" / "train", ["new-1.txt", "new-2.txt"])
        dialog = panel.cut_dataset_version()
        ready(qtbot, dialog)
        assert screenshot(dialog, f"registry-cut-dialog-{theme_name}").stat().st_size > 0
        dialog.reject()
        empty, _errors = dataset_panel(make_panel, _no_data(data_project))
        qtbot.waitUntil(lambda: empty.buttons["cut"].isVisible() and not empty.buttons["pin"].isVisible(),
                        timeout=TIMEOUT_MS)
        assert screenshot(empty, f"registry-datasets-empty-{theme_name}").stat().st_size > 0
    finally:
        theme.apply_theme("light")


def _no_data(near: Path) -> Path:
    root = near.parent / "nodata"
    root.mkdir(exist_ok=True)
    (root / "workbench.toml").write_text('[project]\nname = "nodata"\n', encoding="utf-8")
    return root


def test_train_on_this_version_opens_the_train_dialog_with_the_version_chosen(data_project, qtbot):
    from workbench.project import load_project
    from workbench.registry.widgets import panel_of
    from workbench.ui.project_window import ProjectWindow

    window = ProjectWindow(load_project(data_project))
    qtbot.addWidget(window)
    window.show()
    window.install_capabilities(("workbench.training.widgets:install", "workbench.registry.widgets:install"))
    try:
        panel = panel_of(window)
        finish(qtbot, panel, lambda: window.commands.execute("registry.cutDatasetVersion", reason="first"))
        qtbot.waitUntil(lambda: bool(panel.dataset_view.versions), timeout=TIMEOUT_MS)
        panel.dataset_view.select_version(panel.dataset_view.versions[-1].number)
        action = panel.dataset_view.context_menu().findChild(QAction, "registry-train-on")
        assert action is not None and action.isEnabled()
        action.trigger()
        qtbot.waitUntil(lambda: _train_dialog(window) is not None, timeout=TIMEOUT_MS)
        dialog = _train_dialog(window)
        assert dialog.version_values()["dataset_version"] == "0000"
        dialog.reject()
    finally:
        window.tasks.wait(TIMEOUT_MS)


def _train_dialog(window):
    from workbench.training.widgets.train_dialog import TrainDialog

    found = [dialog for dialog in window.findChildren(TrainDialog) if dialog.isVisible()]
    return found[0] if found else None

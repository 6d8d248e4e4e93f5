"""The Train dialog offers the project's dataset versions and model versions (aliases first),
and gives RunService.start what was chosen."""

from __future__ import annotations

from pathlib import Path

from workbench.registry import open_versions
from workbench.training.widgets.train_dialog import FROM_SCRATCH, TrainDialog, read_version_choices

SETTINGS = {"data": {"train": "data/train"}, "registry": {"metric": "val_acc"}}


def _project(root: Path) -> Path:
    (root / "data" / "train").mkdir(parents=True)
    for index in range(10):
        (root / "data" / "train" / f"{index}.txt").write_text(str(index))
    (root / "workbench.toml").write_text('[data]\ntrain = "data/train"\n[registry]\nmetric = "val_acc"\n')
    versions = open_versions(root, SETTINGS)
    versions.datasets.cut(fraction=0.5, reason="half")
    versions.datasets.cut()
    for value in (0.8, 0.9):
        weights = root / "runs" / "r" / "outputs" / "best.pt"
        weights.parent.mkdir(parents=True, exist_ok=True)
        weights.write_bytes(str(value).encode())
        versions.models.register([(weights, "best weights")], {"metrics": {"val_acc": value},
                                                              "dataset_version": "0001"})
    versions.models.set_alias("production", "0000")
    return root


def test_the_dialog_lists_versions_and_returns_the_choice(qtbot, tmp_path):
    root = _project(tmp_path)
    dialog = TrainDialog(root, ["hparams/a.hparams"], versions=read_version_choices(root, SETTINGS))
    qtbot.addWidget(dialog)
    datasets = [dialog.dataset_version.itemText(i) for i in range(dialog.dataset_version.count())]
    models = [dialog.from_version.itemData(i) for i in range(dialog.from_version.count())]
    assert datasets[1].startswith("0001: 10 samples") and datasets[2] == "0000: 5 samples (50%), half"
    assert models == ["", "production", "0001", "0000"]
    assert dialog.from_version.itemText(2) == "0001, val_acc 0.9, dataset 0001"
    assert dialog.version_values() == {"dataset_version": None, "from_version": None, "register": True}

    dialog.dataset_version.setCurrentIndex(2)
    dialog.from_version.setCurrentIndex(1)
    dialog.register.setChecked(False)
    assert dialog.version_values() == {"dataset_version": "0000", "from_version": "production", "register": False}


def test_a_project_without_versions_still_trains_from_scratch(qtbot, tmp_path):
    dialog = TrainDialog(tmp_path, [], versions=read_version_choices(tmp_path, {}))
    qtbot.addWidget(dialog)
    assert dialog.from_version.count() == 1 and dialog.from_version.currentText() == FROM_SCRATCH
    assert dialog.dataset_version.count() == 1


def test_a_script_of_ones_own_cannot_be_started_from_a_version_by_the_dialog(qtbot, tmp_path):
    root = _project(tmp_path)
    settings = {**SETTINGS, "training": {"script": "train.py", "parameters": "argparse"}}
    dialog = TrainDialog(root, [], versions=read_version_choices(root, settings))
    qtbot.addWidget(dialog)
    assert not dialog.from_version.isEnabled() and "your own flag" in dialog.from_version.toolTip()


def test_a_version_chosen_beforehand_comes_selected_and_an_unknown_one_is_ignored(qtbot, tmp_path):
    root = _project(tmp_path)
    dialog = TrainDialog(root, [], versions=read_version_choices(root, SETTINGS))
    qtbot.addWidget(dialog)
    dialog.choose_dataset_version("0000")
    assert dialog.version_values()["dataset_version"] == "0000"
    dialog.choose_dataset_version("0042")
    assert dialog.version_values()["dataset_version"] == "0000"

"""Training on dataset versions and from model versions, for real on the digits template: a
completed run registers its best weights, a fine-tuned run starts from a version's weights, and
the CLI's choices are refused with a message that says what to do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from workbench.project import create_from_template
from workbench.registry import open_versions
from workbench.training import RunService
from workbench.training.errors import TrainingError
from workbench.training.version_choice import choose_versions

pytestmark = pytest.mark.slow
SHORT = ["num_epochs=2", "stop_at_step=0"]


@pytest.fixture
def digits(tmp_path) -> Path:
    return create_from_template("digits", tmp_path / "digits").root


def _log(info) -> str:
    return (Path(info.run_dir) / "stdout.log").read_text() + (Path(info.run_dir) / "stderr.log").read_text()


def test_a_run_on_a_dataset_version_trains_on_its_samples_and_registers_its_best_weights(digits):
    versions = open_versions(digits)
    half = versions.datasets.cut(fraction=0.5, reason="half of the data").version
    service = RunService(digits)
    run = service.wait(service.start(overrides=SHORT, dataset_version=half.name).id, timeout=240)
    assert run.state == "completed", _log(run)[-2000:]
    assert f"on {half.samples} images of dataset version {half.name}" in _log(run)
    assert run.dataset_version == half.name and run.model_version == "0000"

    model = versions.models.get("0000")
    record = yaml.safe_load((digits / "registry" / "models" / "neural_net_info_0000.yaml").read_text())
    assert record["dataset_version"] == half.name and record["parent_version"] is None
    assert record["hyper_parameters"]["num_epochs"] == 2 and record["run"]["id"] == run.id
    assert record["training"]["epochs"] == 2 and record["training"]["backend"] == "local"
    assert record["training"]["device"] == "cpu" and record["training"]["processes"] == 1
    best = json.loads((Path(run.run_dir) / "outputs" / "best.json").read_text())
    assert record["best"]["metric"] == "val_acc" and record["best"]["value"] == best["value"]
    # The version's metrics are its weights': the best epoch's evaluation, the run's end beside.
    assert record["metrics"]["val_acc"] == best["value"] and record["final_metrics"] == run.final_metrics
    weights = model.weights
    assert weights.name == "bestmodel_0000.pt" and weights.role.startswith("best weights by val_acc")
    # A hard link to the run's file: no second copy on disk.
    registered = digits / "registry" / "models" / weights.name
    assert registered.stat().st_ino == (Path(run.run_dir) / "outputs" / "best.pt").stat().st_ino


def test_a_run_from_a_version_fine_tunes_its_weights_and_records_its_parent(digits):
    service = RunService(digits)
    first = service.wait(service.start(overrides=SHORT).id, timeout=240)
    assert first.model_version == "0000", _log(first)[-2000:]
    versions = open_versions(digits)
    versions.models.set_alias("production", "0000", "first model")

    second = service.wait(service.start(overrides=["num_epochs=1"], from_version="production").id, timeout=240)
    assert second.state == "completed", _log(second)[-2000:]
    weights = digits / "registry" / "models" / "bestmodel_0000.pt"
    assert f"fine-tuning from {weights}" in _log(second)
    assert "task_type=finetune" in second.overrides and f"ckpt_file_name={weights}" in second.overrides
    assert second.from_version == "0000" and second.model_version == "0001"
    assert versions.models.get("0001").info["parent_version"] == "0000"

    third = service.wait(service.start(overrides=["num_epochs=1"], register=False).id, timeout=240)
    assert third.state == "completed" and third.model_version == ""
    assert "--no-register" in third.registry_note
    assert [v.name for v in versions.models.list()] == ["0000", "0001"]


def test_version_choices_that_cannot_be_trained_are_refused_before_anything_starts(digits):
    with pytest.raises(TrainingError, match="there is no dataset version 0004.*Cut one"):
        choose_versions(digits, "0004", None)
    with pytest.raises(TrainingError, match="there is no model version 0002.*none registered yet"):
        choose_versions(digits, None, "2")
    with pytest.raises(TrainingError, match="neither a model version number nor an alias"):
        choose_versions(digits, None, "production")
    with pytest.raises(TrainingError, match="train on this machine only"):
        choose_versions(digits, "0000", None, on_cluster=True)
    assert not (digits / "runs").exists() or not any((digits / "runs").iterdir())


def test_a_script_of_ones_own_is_told_how_to_take_a_versions_weights(tmp_path):
    project = tmp_path / "own"
    project.mkdir()
    (project / "train.py").write_text("import argparse\np = argparse.ArgumentParser()\n"
                                      "p.add_argument('--lr', type=float, default=0.1)\np.parse_args()\n")
    (project / "workbench.toml").write_text('[training]\nscript = "train.py"\nparameters = "argparse"\n')
    models = project / "registry" / "models"
    run_file = project / "runs" / "r" / "outputs" / "model.pt"
    run_file.parent.mkdir(parents=True)
    run_file.write_bytes(b"weights")
    open_versions(project).models.register([(run_file, "weights")], {}, run_folder=run_file.parent.parent)
    with pytest.raises(TrainingError, match=r"does not read: pass the weights with your own argument.*"
                                            + str(models / "bestmodel_0000.pt")):
        choose_versions(project, None, "0000")


def test_the_cli_trains_on_a_version_and_the_summary_names_the_model_version(digits):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    cut = subprocess.run([sys.executable, "-m", "workbench", "dataset", "version", str(digits), "--fraction", "0.6",
                          "--json"], capture_output=True, text=True, env=env, timeout=240)
    assert cut.returncode == 0, cut.stderr
    assert json.loads(cut.stdout)["version"] == "0000"
    done = subprocess.run([sys.executable, "-m", "workbench", "train", str(digits), "--set", "num_epochs=1",
                           "--dataset-version", "0", "--json"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    run = json.loads(done.stdout)
    assert run["dataset_version"] == "0000" and run["model_version"] == "0000"
    listed = subprocess.run([sys.executable, "-m", "workbench", "registry", "list", str(digits)],
                            capture_output=True, text=True, env=env, timeout=120)
    assert listed.returncode == 0 and "0000     0000" in listed.stdout, listed.stdout
    refused = subprocess.run([sys.executable, "-m", "workbench", "train", str(digits), "--from-version", "7"],
                             capture_output=True, text=True, env=env, timeout=120)
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1].startswith("workbench: Not started: there is no model version 0007")


OWN_SCRIPT = '''\
import argparse, torch
parser = argparse.ArgumentParser()
parser.add_argument("--scale", type=float, default=1.0)
args = parser.parse_args()
print(f"Epoch 1/1 - loss: {1 / args.scale:.4f}", flush=True)
torch.save({"weight": torch.full((4,), args.scale)}, "model.pt")   # the project root, every run
'''


def test_a_script_of_ones_own_that_overwrites_its_model_keeps_each_version_whole(tmp_path):
    """Its model.pt at the project root is rewritten by the next run: the registry holds a copy
    (a hard link would change with it), and each version keeps its own weights."""
    import torch

    project = tmp_path / "own"
    project.mkdir()
    (project / "train.py").write_text(OWN_SCRIPT)
    (project / "workbench.toml").write_text('[training]\nscript = "train.py"\nparameters = "argparse"\n')
    service = RunService(project)
    for scale in (2.0, 3.0):
        run = service.wait(service.start(overrides=[f"scale={scale}"]).id, timeout=240)
        assert run.state == "completed", _log(run)[-2000:]
    versions = open_versions(project).models.list()
    assert [v.name for v in versions] == ["0000", "0001"]
    assert [v.weights.stored for v in versions] == ["copy", "copy"] or {v.weights.stored for v in versions} == {"reflink"}
    for version, scale in zip(versions, (2.0, 3.0)):
        weights = torch.load(project / "registry" / "models" / version.weights.name)
        assert torch.equal(weights["weight"], torch.full((4,), scale))
        assert version.info["hyper_parameters"]["scale"] == scale and version.weights.role == "weights at the run's end"

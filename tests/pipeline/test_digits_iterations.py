"""Iterations for real on the digits template: cut → train (1 epoch) → convert → quantize →
gate → deploy moves production; the next iteration fine-tunes production, a gate set too
strict stops it before deploy with the gate and the amount, and resume after the gate is
eased goes on from the gate without training again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.pipeline import PipelineService
from workbench.project import create_from_template
from workbench.registry import open_versions

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
STEPS = """
[[pipeline.steps]]
tool = "dataset"
fraction = {fraction}

[[pipeline.steps]]
tool = "train"
from = "production"
epochs = 1
set = ["stop_at_step=0"]

[[pipeline.steps]]
tool = "convert"
verify_samples = 4

[[pipeline.steps]]
tool = "quantize"
samples = 200
calibration_samples = 32
layer_report = false

[[pipeline.steps]]
tool = "gate"
max_accuracy_drop = 100
max_size_mb = {max_size_mb}

[[pipeline.steps]]
tool = "deploy"
"""


def _declare(project: Path, original: str, **values) -> None:
    (project / "workbench.toml").write_text(original + STEPS.format(**values), encoding="utf-8")


def test_iterations_train_convert_quantize_gate_and_move_production(tmp_path):
    project = create_from_template("digits", tmp_path / "digits").root
    original = (project / "workbench.toml").read_text(encoding="utf-8")
    _declare(project, original, fraction=0.5, max_size_mb=10)
    lines: list[str] = []
    first = PipelineService(project, say=lines.append).start()
    assert first.state == "done", "\n".join(lines)
    assert [step.state for step in first.steps] == ["done"] * 6
    dataset, train, convert, quantize, gate, deploy = first.steps
    assert dataset.outputs["dataset_version"] == "0000" and train.outputs["model_version"] == "0000"
    assert train.outputs["from_version"] == ""  # no production yet: from scratch
    models = project / "registry" / "models"
    assert convert.outputs["model_file"] == str(models / "bestmodel_0000.onnx")
    assert quantize.outputs["model_file"] == str(models / "bestmodel_0000.int8.onnx")
    assert "agreement" in quantize.outputs["figures"]
    assert [result["gate"] for result in gate.outputs["results"]] == ["max_accuracy_drop", "max_size_mb"]
    versions = open_versions(project)
    assert versions.models.resolve("production").name == "0000"
    assert versions.models.aliases.history("production")[-1].reason == "pipeline iteration 0000"
    assert {f.name for f in versions.models.get("0000").files} >= {"bestmodel_0000.onnx", "bestmodel_0000.int8.onnx"}

    _declare(project, original, fraction=1.0, max_size_mb=0.001)
    second = PipelineService(project).start()
    assert second.version == "0001" and second.state == "failed"
    assert [step.state for step in second.steps] == ["done"] * 4 + ["failed", "skipped"]
    assert second.steps[1].outputs["from_version"] == "0000"  # fine-tuned from production
    size_gate = second.gates[1]
    assert size_gate["gate"] == "max_size_mb" and not size_gate["passed"] and size_gate["by"] > 0
    assert "is over the 0.001 MB allowed, by" in second.error and second.error.startswith("step 5 (gate) failed")
    assert open_versions(project).models.resolve("production").name == "0000"

    _declare(project, original, fraction=1.0, max_size_mb=10)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    resumed = subprocess.run([sys.executable, "-m", "workbench", "pipeline", "resume", str(project), "--version", "0001",
                              "--json"], capture_output=True, text=True, env=env, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    record = json.loads(resumed.stdout)
    assert record["state"] == "done" and all(result["passed"] for result in record["gates"])
    assert record["steps"][1]["outputs"]["run_id"] == second.steps[1].outputs["run_id"]  # not trained again
    assert "resuming iteration 0001 at step 5" in resumed.stderr
    assert open_versions(project).models.resolve("production").name == "0001"

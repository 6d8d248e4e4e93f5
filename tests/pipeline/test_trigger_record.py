"""What started an iteration, in its record and in `pipeline status` and `list`: a start from
a terminal, a resume by hand after a failed gate, a record written before iterations kept their
trigger, and a trigger kind the command does not know. Real `workbench pipeline` processes on a
project whose steps are a dataset cut and a gate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from workbench.pipeline import PipelineService
from workbench.registry.store import os_user

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
PROJECT = """[project]
name = "started"

[data]
train = "data/train"

[[pipeline.steps]]
tool = "dataset"

[[pipeline.steps]]
tool = "gate"
min_accuracy = 50
"""


def _project(root: Path) -> Path:
    (root / "data" / "train").mkdir(parents=True)
    for index in range(3):
        (root / "data" / "train" / f"{index}.txt").write_text(f"{index}\n")
    (root / "workbench.toml").write_text(PROJECT)
    return root


def _pipeline(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", "pipeline", *args], capture_output=True, text=True,
                          env=ENV, timeout=120)


def test_a_start_and_a_resume_by_hand_are_recorded_and_shown(tmp_path):
    project = _project(tmp_path / "started")
    # The gate finds no accuracy (nothing trained): the iteration fails there, to be resumed.
    started = _pipeline("start", str(project), "--json")
    assert started.returncode == 1 and json.loads(started.stdout)["state"] == "failed"
    record = json.loads((project / "registry" / "pipeline" / "iteration_0000.json").read_text())
    assert record["trigger"]["kind"] == "manual"
    assert record["trigger"]["reason"] == f"`workbench pipeline start` by {os_user()}"
    assert record["trigger"]["by"] == os_user() and record["resumes"] == []

    resumed = _pipeline("resume", str(project), "--version", "0", "--trigger-reason", "a gate eased by hand")
    assert resumed.returncode == 1
    iteration = PipelineService(project).get("0000")
    assert iteration.trigger == record["trigger"]  # a resume keeps what started it
    assert [(r["kind"], r["reason"]) for r in iteration.resumes] == [("manual", "a gate eased by hand")]
    assert iteration.resumes[0]["at"] >= record["trigger"]["at"]

    status = _pipeline("status", str(project))
    assert f"started by manual: `workbench pipeline start` by {os_user()}" in status.stdout
    assert "by manual: a gate eased by hand" in status.stdout
    assert json.loads(_pipeline("status", str(project), "--json").stdout)["resumes"][0]["reason"] == \
        "a gate eased by hand"
    listed = _pipeline("list", str(project))
    assert listed.stdout.splitlines()[0].split()[:3] == ["ITER", "STATE", "STARTED"]
    assert listed.stdout.splitlines()[1].split()[:2] == ["0000", "failed"]
    assert "manual, resumed 1x" in listed.stdout
    summary = json.loads(_pipeline("list", str(project), "--json").stdout)[0]
    assert summary["trigger"]["kind"] == "manual" and len(summary["resumes"]) == 1


def test_a_record_from_before_triggers_still_reads(tmp_path):
    project = _project(tmp_path / "old")
    _pipeline("start", str(project))
    path = project / "registry" / "pipeline" / "iteration_0000.json"
    old = json.loads(path.read_text())
    del old["trigger"], old["resumes"]
    path.write_text(json.dumps(old))
    iteration = PipelineService(project).get("0000")
    assert iteration.trigger == {} and iteration.resumes == []
    assert "started by unknown (recorded before iterations kept their trigger)" in _pipeline("status", str(project)).stdout
    assert _pipeline("list", str(project)).stdout.splitlines()[1].split()[4] == "-"  # started by: not known


def test_a_trigger_kind_the_command_does_not_know_is_refused_before_anything_runs(tmp_path):
    project = _project(tmp_path / "unknown")
    refused = _pipeline("start", str(project), "--trigger-kind", "nightly")
    assert refused.returncode == 2 and "'nightly' is not one of" in refused.stderr
    assert not (project / "registry" / "pipeline" / "iteration_0000.json").exists()

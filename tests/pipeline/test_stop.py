"""`workbench pipeline stop` from another process stops the running iteration's training run
through RunService.stop; the iteration ends "stopped" at its train step and frees the lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.project import create_from_template
from workbench.training import RunService

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
STEPS = """
[[pipeline.steps]]
tool = "train"
from = "scratch"
epochs = 200

[[pipeline.steps]]
tool = "convert"
"""


def test_stop_stops_the_training_run_and_the_iteration_at_its_step(tmp_path):
    project = create_from_template("digits", tmp_path / "digits").root
    with open(project / "workbench.toml", "a", encoding="utf-8") as toml:
        toml.write(STEPS)
    started = subprocess.Popen([sys.executable, "-m", "workbench", "pipeline", "start", str(project), "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    record = project / "registry" / "pipeline" / "iteration_0000.json"
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            if record.is_file() and json.loads(record.read_text())["steps"][0]["outputs"].get("run_id"):
                break
            time.sleep(0.2)
        stop = subprocess.run([sys.executable, "-m", "workbench", "pipeline", "stop", str(project), "--json"],
                              capture_output=True, text=True, env=ENV, timeout=60)
        assert stop.returncode == 0, stop.stderr
        assert json.loads(stop.stdout) == {"version": "0000", "stop_requested": True}
        out, err = started.communicate(timeout=120)
    finally:
        if started.poll() is None:
            started.kill()
    assert started.returncode == 1, err[-2000:]
    iteration = json.loads(out)
    assert iteration["state"] == "stopped" and iteration["error"].startswith("step 1 (train) stopped")
    assert [step["state"] for step in iteration["steps"]] == ["failed", "skipped"]
    run = RunService(project).get(iteration["steps"][0]["outputs"]["run_id"])
    assert not run.is_active and run.state != "completed"
    assert not (project / "registry" / "pipeline" / ".lock").exists()


def test_a_resumed_iteration_goes_on_with_the_stopped_run_from_its_checkpoint(tmp_path):
    from workbench.pipeline import PipelineService

    project = create_from_template("digits", tmp_path / "again").root
    with open(project / "workbench.toml", "a", encoding="utf-8") as toml:
        toml.write(STEPS.replace("epochs = 200", "epochs = 30"))
    started = subprocess.Popen([sys.executable, "-m", "workbench", "pipeline", "start", str(project), "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    record = project / "registry" / "pipeline" / "iteration_0000.json"
    deadline = time.monotonic() + 180
    try:
        run_id = None
        while time.monotonic() < deadline and run_id is None:
            if record.is_file():
                run_id = json.loads(record.read_text())["steps"][0]["outputs"].get("run_id")
            time.sleep(0.2)
        # Stopped once the run has a checkpoint to go on from.
        checkpoints = project / "runs" / run_id / "checkpoints" / "latest.json"
        while time.monotonic() < deadline and not checkpoints.is_file():
            time.sleep(0.2)
        assert checkpoints.is_file(), "the run wrote no checkpoint"
        subprocess.run([sys.executable, "-m", "workbench", "pipeline", "stop", str(project)],
                       capture_output=True, text=True, env=ENV, timeout=60, check=True)
        started.communicate(timeout=180)
    finally:
        if started.poll() is None:
            started.kill()
    stopped_run = RunService(project).get(run_id)
    assert stopped_run.state == "stopped" and stopped_run.can_resume

    lines: list[str] = []
    iteration = PipelineService(project, say=lines.append).resume("0000")
    assert iteration.state == "done", iteration.error
    train = iteration.steps[0]
    assert train.outputs["run_id"] == run_id  # the same run went on, no second one was started
    assert any(f"run {run_id} goes on from its last checkpoint (it was stopped)" in line for line in lines), lines
    assert [run.id for run in RunService(project).list_runs()] == [run_id]
    assert RunService(project).get(run_id).state == "completed" and train.outputs["model_version"] == "0000"

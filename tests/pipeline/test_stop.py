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

"""Iterations without training, on a project of plain files: a failed step stops the iteration
and keeps what the steps before made, resume goes on from the failed step, the lock refuses a
second iteration while another process holds it (and takes over from a process that is gone),
and the commands' --json shapes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.pipeline import PipelineService
from workbench.pipeline.iterations import IterationStore, PipelineLock

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
DECLARATION = """
[data]
train = "data/train"

[[pipeline.steps]]
tool = "dataset"
fraction = 0.5

[[pipeline.steps]]
tool = "deploy"
"""


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "files"
    for index in range(12):
        sample = root / "data" / "train" / f"class_{index % 3}" / f"{index:02d}.txt"
        sample.parent.mkdir(parents=True, exist_ok=True)
        sample.write_text(f"sample {index}\n")
    (root / "workbench.toml").write_text('[project]\nname = "files"\n' + DECLARATION)
    return root


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", "pipeline", *args], capture_output=True, text=True,
                          env=ENV, timeout=timeout)


def test_a_failed_step_keeps_what_was_made_and_resume_goes_on_from_it(project):
    lines = []
    service = PipelineService(project, say=lines.append)
    first = service.start()
    assert first.version == "0000" and first.state == "failed"
    dataset, deploy = first.steps
    assert dataset.state == "done" and dataset.outputs == {"dataset_version": "0000", "samples": 6}
    assert deploy.state == "failed" and "no model version: put a train step before it" in deploy.error
    assert first.error.startswith("step 2 (deploy) failed:") and first.failed_step == 1
    assert any("iteration 0000 failed: step 2 (deploy)" in line for line in lines)

    resumed = service.resume("0")
    assert resumed.version == "0000" and resumed.state == "failed"
    assert resumed.steps[0].started_at == dataset.started_at  # not cut again
    assert [v.name for v in service.versions.datasets.list()] == ["0000"]
    assert resumed.steps[1].started_at > deploy.started_at and resumed.steps[1].state == "failed"
    # The next iteration takes the next suffix, the one its dataset version gets.
    assert service.start().steps[0].outputs["dataset_version"] == "0001"


def test_a_second_iteration_is_refused_while_another_process_holds_the_lock(project):
    store = IterationStore(project / "registry")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\nfrom pathlib import Path\n"
        "from workbench.pipeline.iterations import IterationStore, PipelineLock\n"
        f"PipelineLock(IterationStore(Path({str(project / 'registry')!r}))).acquire('0007')\n"
        "print('held', flush=True)\ntime.sleep(60)\n")], stdout=subprocess.PIPE, text=True, env=ENV)
    try:
        assert holder.stdout.readline().strip() == "held"
        refused = _cli("start", str(project), "--json")
        assert refused.returncode == 1
        error = json.loads(refused.stdout)["error"]
        assert f"iteration 0007 (process {holder.pid} of" in error and "workbench pipeline stop" in error
        assert "\n" not in refused.stderr.strip()
        assert store.versions() == []  # nothing ran
    finally:
        holder.kill()
        holder.wait()
    # Its process is gone: the next start takes the lock over.
    assert PipelineService(project).start().state == "failed"
    assert PipelineLock(store).holder() is None


def test_status_list_and_errors_have_stable_json_shapes(project):
    started = _cli("start", str(project), "--json")
    assert started.returncode == 1, started.stderr  # its deploy step fails
    record = json.loads(started.stdout)
    assert set(record) >= {"version", "state", "started_at", "ended_at", "error", "failed_step", "gates", "steps"}
    assert [(s["tool"], s["state"]) for s in record["steps"]] == [("dataset", "done"), ("deploy", "failed")]
    assert set(record["steps"][0]) >= {"index", "tool", "params", "state", "started_at", "ended_at", "seconds",
                                       "outputs", "error"}
    assert "[1/2] dataset" in started.stderr

    status = _cli("status", str(project), "--version", "0000", "--json")
    assert status.returncode == 0 and json.loads(status.stdout) == record
    text = _cli("status", str(project)).stdout
    assert "iteration 0000: failed" in text and "1. dataset" in text and "2. deploy" in text

    listed = json.loads(_cli("list", str(project), "--json").stdout)
    assert [(i["version"], i["state"], i["dataset_version"]) for i in listed] == [("0000", "failed", "0000")]

    missing = _cli("status", str(project), "--version", "0042", "--json")
    assert missing.returncode == 1 and "no pipeline iteration 0042" in json.loads(missing.stdout)["error"]
    not_running = _cli("stop", str(project))
    assert not_running.returncode == 1 and "is not running (it is failed)" in not_running.stderr


def test_an_iteration_whose_process_died_shows_failed_and_can_be_resumed(project):
    service = PipelineService(project)
    iteration = service.start()
    iteration.state, iteration.steps[1].state, iteration.pid = "running", "running", 2 ** 22 + 7  # no such process
    service.store.write(iteration)
    seen = service.get("0000")
    assert seen.state == "failed" and "ended" in seen.steps[1].error and "pipeline resume --version 0000" in seen.error
    assert service.resume("0000").steps[1].state == "failed"

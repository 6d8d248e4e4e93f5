"""Runs of a script that uses the training helpers (the tiny one), started by Workbench: under
torchrun with two processes, and with a supervisor that was killed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from tests.training.conftest import process_alive, wait_for
from tests.trainkit.conftest import TINY_HPARAMS, TINY_PROJECT_FILE, TINY_SCRIPT
from workbench.training import RunService, read_metrics
from workbench.platform.processes import child_processes

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """A project whose train.py is the tiny script; its runs are terminated after the test."""
    project = tmp_path / "tiny"
    (project / "hparams").mkdir(parents=True)
    shutil.copy(TINY_SCRIPT, project / "train.py")
    (project / "workbench.toml").write_text(TINY_PROJECT_FILE)
    (project / "hparams" / "tiny.hparams").write_text(TINY_HPARAMS)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the run inherits it: quick on a busy machine
    service = RunService(project)
    yield service
    for info in service.list_runs():
        if info.is_active:
            service.terminate(info.id)


def _losses(info) -> list:
    return [record["step"] for record in read_metrics(Path(info.run_dir) / "metrics.jsonl") if "loss" in record]


def test_stopping_a_two_process_run_stops_its_workers_and_torchrun_ends_cleanly(tiny, monkeypatch):
    monkeypatch.setenv("TINY_STEP_SECONDS", "0.05")
    info = tiny.start(overrides=["num_epochs=15"], nproc=2)  # 3 steps an epoch with two processes
    wait_for(lambda: _losses(info), timeout=90)
    tiny.stop(info.id)
    stopped = tiny.wait(info.id, timeout=60)
    errors = (Path(info.run_dir) / "stderr.log").read_text()
    assert stopped.state == "stopped" and stopped.exit_code == 0 and stopped.can_resume, errors[-3000:]
    assert "SignalException" not in errors and "Traceback" not in errors, errors[-3000:]
    step = json.loads((Path(info.run_dir) / "checkpoints" / "latest.json").read_text())["step"]
    assert 1 <= step < 45 and f"stopped at step {step}; checkpoint" in (Path(info.run_dir) / "stdout.log").read_text()

    monkeypatch.setenv("TINY_STEP_SECONDS", "0")
    done = tiny.wait(tiny.resume(info.id).id, timeout=120)
    assert done.state == "completed", (Path(info.run_dir) / "stderr.log").read_text()[-3000:]
    assert _losses(done) == list(range(1, 46)) and (Path(done.run_dir) / "outputs" / "model.pt").is_file()


def test_terminating_a_two_process_run_kills_its_workers_too(tiny, monkeypatch):
    monkeypatch.setenv("TINY_STEP_SECONDS", "0.05")
    info = tiny.start(overrides=["num_epochs=1000"], nproc=2)
    wait_for(lambda: _losses(info), timeout=90)
    workers = child_processes(info.pid)  # torchrun starts each worker in a session of its own
    assert len(workers) == 2 and all(os.getpgid(worker) != info.pgid for worker in workers)
    assert tiny.terminate(info.id).state == "terminated"
    wait_for(lambda: not any(process_alive(worker) for worker in workers), timeout=10)


def test_a_run_whose_supervisor_was_killed_ends_as_the_training_helpers_recorded(tiny, monkeypatch):
    monkeypatch.setenv("TINY_STEP_SECONDS", "0.02")
    info = tiny.start()
    os.kill(info.supervisor_pid, signal.SIGKILL)
    wait_for(lambda: not process_alive(info.pid), timeout=90)
    done = tiny.list_runs()[0]
    assert done.state == "completed" and done.error == "" and done.final_metrics["step"] == 18
    assert (Path(info.run_dir) / "outputs" / "model.pt").is_file()
    outcome = json.loads((Path(info.run_dir) / "outcome.json").read_text())
    assert outcome == {"state": "completed", "step": 18, "time": pytest.approx(time.time(), abs=60), "device": "cpu",
                       "processes": 1}
    assert done.ended_at == outcome["time"]

    second = tiny.start(overrides=["num_epochs=1000"])
    wait_for(lambda: _losses(second), timeout=60)
    os.kill(second.supervisor_pid, signal.SIGKILL)
    tiny.stop(second.id)  # with no supervisor, the stop goes to the trainer all the same
    wait_for(lambda: not process_alive(second.pid), timeout=60)
    stopped = tiny.get(second.id)
    assert stopped.state == "stopped" and stopped.can_resume and stopped.error == ""

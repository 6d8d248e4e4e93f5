"""The digits template trained for real: start, stop with a checkpoint, resume as a new run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.training.conftest import wait_for
from workbench.project import create_from_template
from workbench.training import RunService, read_metrics

pytestmark = pytest.mark.slow


def test_the_digits_template_stops_and_resumes_into_a_whole_curve(tmp_path):
    project = create_from_template("digits", tmp_path / "digits").root
    service = RunService(project)
    first = service.start(overrides=["num_epochs=3"])
    metrics = Path(first.run_dir) / "metrics.jsonl"
    wait_for(lambda: any("loss" in record for record in read_metrics(metrics)), timeout=120)
    service.stop(first.id)
    stopped = service.wait(first.id, timeout=60)
    assert stopped.state == "stopped" and stopped.exit_code == 0 and stopped.can_resume, stopped.error
    assert stopped.metrics_source == "trainer"  # the helpers write metrics.jsonl; nothing is parsed twice

    second = service.resume(first.id, new_run=True)
    done = service.wait(second.id, timeout=120)
    assert done.state == "completed", (Path(done.run_dir) / "stderr.log").read_text()[-2000:]
    step = int(second.resumed_from.split("@")[1])
    steps = [r["step"] for r in read_metrics(Path(done.run_dir) / "metrics.jsonl") if "loss" in r]
    assert steps == sorted(set(steps)) and steps[-1] == done.final_metrics["step"]
    assert [s for s in steps if s <= step] == [r["step"] for r in read_metrics(metrics) if "loss" in r]
    assert done.final_metrics["test_acc"] > 0.5 and (Path(done.run_dir) / "outputs" / "model.pt").is_file()

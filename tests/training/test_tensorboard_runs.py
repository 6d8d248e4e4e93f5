"""A script of the user's own, run as a real child process: the scalars it logs with torch's
SummaryWriter become live curves, and the models it saves anywhere in the project become the
run's products (listed by `workbench runs show` and the Models panel)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.training.conftest import wait_for
from workbench.training import RunService, read_metrics

pytestmark = pytest.mark.slow

SCRIPT = """\
import os, time
import torch
from torch.utils.tensorboard import SummaryWriter
from safetensors.torch import save_file

writer = SummaryWriter()  # runs/<date>_<host>/, beside Workbench's own run folders
model = torch.nn.Linear(3, 2)
for step in (1, 2, 3):
    writer.add_scalar("Loss/train", 1.0 / step, step)
    writer.add_scalar("Loss/test", 2.0 / step, step)
    print(f"step={step} acc={step / 10}", flush=True)
writer.flush()
deadline = time.time() + 60
while not os.path.exists("release") and time.time() < deadline:  # the test looks at the live curves
    time.sleep(0.02)
writer.add_scalar("Loss/train", 0.2, 4)
os.makedirs("checkpoints/best", exist_ok=True)
torch.save(model.state_dict(), "checkpoints/best/model.pth")
save_file(model.state_dict(), "model.safetensors")
writer.close()
"""


def _project(root: Path) -> Path:
    root.mkdir()
    (root / "workbench.toml").write_text('[project]\nname = "tb"\n\n[training]\nscript = "train.py"\n')
    (root / "train.py").write_text(SCRIPT)
    (root / "pretrained.pt").write_bytes(b"there before the run")
    return root


def test_summary_writer_scalars_are_live_curves_and_saved_models_are_the_runs_products(tmp_path):
    project = _project(tmp_path / "own")
    service = RunService(project)
    started = service.start()
    try:
        metrics = Path(started.run_dir) / "metrics.jsonl"
        wait_for(lambda: any(r.get("step") == 3 and "test_loss" in r for r in read_metrics(metrics)), timeout=60,
                 what="the TensorBoard scalars of step 3 in metrics.jsonl while the script runs")
        assert service.get(started.id).is_active
        (project / "release").touch()
        info = service.wait(started.id, timeout=60)
    finally:
        (project / "release").touch()
    assert info.state == "completed", info.error

    records = read_metrics(Path(info.run_dir) / "metrics.jsonl")
    assert [(r["step"], r["loss"]) for r in records if "loss" in r] == [(1, 1.0), (2, 0.5), (3, 0.33333334), (4, 0.2)]
    assert [(r["step"], r["test_loss"]) for r in records if "test_loss" in r] == [(1, 2.0), (2, 1.0), (3, 0.6666667)]
    assert [(r["step"], r["acc"]) for r in records if "acc" in r] == [(1, 0.1), (2, 0.2), (3, 0.3)]  # printed
    assert info.metrics_source == "stdout" and info.final_metrics["loss"] == 0.2
    (event_file,) = info.event_files
    assert event_file.startswith("runs/") and "tfevents" in event_file and (project / event_file).is_file()

    products = json.loads((Path(info.run_dir) / "products.json").read_text())["products"]
    assert [p["path"] for p in products] == ["checkpoints/best/model.pth", "model.safetensors"]
    assert products[0]["size"] == (project / "checkpoints/best/model.pth").stat().st_size

    from workbench.cli import cli

    shown = CliRunner().invoke(cli, ["runs", "show", info.id, "--project", str(project)], catch_exceptions=False)
    assert "products:       checkpoints/best/model.pth, model.safetensors" in shown.output
    assert f"tensorboard:    {event_file}" in shown.output

    from workbench.modeltools.model_index import group_by_run, list_models

    groups = {g.run_id: sorted(m.path.relative_to(project).as_posix() for m in g.models)
              for g in group_by_run(list_models(project))}
    assert groups == {info.id: ["checkpoints/best/model.pth", "model.safetensors"], None: ["pretrained.pt"]}

"""The digits template trains as Workbench runs it: in a run folder, with the file as used."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from workbench.project import create_from_template
from workbench_trainkit.hparams import format_hparams, load_hparams, project_schema

from .conftest import child_environment, read_metrics

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def test_one_epoch_in_a_run_folder_writes_metrics_checkpoints_and_the_model(tmp_path):
    project = create_from_template("digits", tmp_path / "digits").root
    run_dir = project / "runs" / "20261130-0001"
    run_dir.mkdir(parents=True)
    # What the runner writes: the project's file plus the overrides, resolved.
    hparams = load_hparams(project / "hparams" / "digits.hparams", ["num_epochs=1"])
    assert hparams.seed == 0  # the project's own key, declared in workbench.toml
    (run_dir / "digits.hparams").write_text(format_hparams(hparams, project_schema(project)))

    result = subprocess.run(
        [sys.executable, "train.py", "--hparams", str(run_dir / "digits.hparams")],
        cwd=project, env=child_environment(WORKBENCH_RUN_DIR=run_dir), capture_output=True,
        text=True, timeout=110)

    assert result.returncode == 0, result.stderr
    records = read_metrics(run_dir)
    assert {"loss", "acc", "lr"} <= set(records[0])
    evaluation = [r for r in records if "val_acc" in r]
    assert len(evaluation) == 1 and evaluation[0]["epoch"] == 1
    assert evaluation[0]["val_acc"] > 0.7
    assert "test_acc" in records[-1]
    latest = json.loads((run_dir / "checkpoints" / "latest.json").read_text())
    assert latest["epoch"] == 1 and (run_dir / "checkpoints" / latest["file"]).is_file()
    assert (run_dir / "outputs" / "model.pt").is_file()
    assert f"saved {run_dir}/outputs/model.pt" in result.stdout

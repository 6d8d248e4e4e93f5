"""A script using TrainingSession runs, logs, checkpoints, stops and resumes exactly.

Most tests run the tiny script (tiny_train.py) inside the test process, which is quick; the
stop by SIGTERM runs it as a real child process in its own process group, as Workbench does.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
import torch

from . import tiny_train
from .conftest import child_environment, losses_by_step, read_metrics

RUN_VARIABLES = ("WORKBENCH_RUN_DIR", "WORKBENCH_RESUME_FROM", "WORKBENCH_RUN_ID", "RANK",
                 "WORLD_SIZE", "LOCAL_RANK", "TINY_STOP_AT")


def train_here(project, monkeypatch, capsys, *argv: str, **env) -> tuple[int, list[str], str]:
    """Run the tiny script's main() here, in ``project``: (status, stdout lines, stderr)."""
    with monkeypatch.context() as patch:
        patch.chdir(project)
        for name in RUN_VARIABLES:
            patch.delenv(name, raising=False)
        for name, value in env.items():
            patch.setenv(name, str(value))
        try:
            tiny_train.main(list(argv))
            status = 0
        except SystemExit as exc:
            status = exc.code
    out, err = capsys.readouterr()
    return status, out.splitlines(), err


def test_a_run_writes_metrics_checkpoints_and_the_model_into_the_run_folder(
        tiny_project, tmp_path, monkeypatch, capsys):
    run_dir = tmp_path / "runs" / "r1"
    status, lines, errors = train_here(tiny_project, monkeypatch, capsys,
                                       "--hparams", "hparams/tiny.hparams",
                                       WORKBENCH_RUN_DIR=run_dir)

    assert status == 0, errors
    assert lines[0].startswith("step=1 loss=") and " lr=" in lines[0]
    assert any(line.startswith("epoch=1 val_loss=") for line in lines)
    assert lines[-1] == "done at step 18"
    records = read_metrics(run_dir)
    assert [r["step"] for r in records if "loss" in r] == list(range(1, 19))
    assert [(r["step"], r["epoch"]) for r in records if "val_loss" in r] == [
        (6, 1), (12, 2), (18, 3)]
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == [
        "latest.json", "step-00000006.pt", "step-00000012.pt", "step-00000018.pt"]
    assert json.loads((run_dir / "checkpoints" / "latest.json").read_text())["epoch"] == 3
    weights = torch.load(run_dir / "outputs" / "model.pt", weights_only=True)
    assert set(weights) == {"0.weight", "0.bias", "3.weight", "3.bias"}


def test_standalone_it_writes_under_model_dir_or_output_dir(tiny_project, monkeypatch, capsys):
    # No --hparams: the file named by workbench.toml's [training] hparams is used.
    status, _, errors = train_here(tiny_project, monkeypatch, capsys,
                                   "--set", "num_epochs=1", "--set", "model_dir=out/mine")
    assert status == 0, errors
    assert (tiny_project / "out" / "mine" / "outputs" / "model.pt").is_file()
    assert len(read_metrics(tiny_project / "out" / "mine")) == 6 + 1

    status, _, errors = train_here(tiny_project, monkeypatch, capsys,
                                   "--set", "stop_at_step=2", "--output-dir", "elsewhere")
    assert status == 0, errors
    assert [r["step"] for r in read_metrics(tiny_project / "elsewhere") if "loss" in r] == [1, 2]


def test_a_resumed_run_continues_with_the_losses_of_an_uninterrupted_one(
        tiny_project, tmp_path, monkeypatch, capsys):
    whole, first, second = (tmp_path / name for name in ("whole", "first", "second"))
    assert train_here(tiny_project, monkeypatch, capsys, WORKBENCH_RUN_DIR=whole)[0] == 0
    # Stopped in the middle of the second epoch: the sampler, dropout, optimizer and schedule
    # all have to pick up where they were.
    status, lines, _ = train_here(tiny_project, monkeypatch, capsys,
                                  WORKBENCH_RUN_DIR=first, TINY_STOP_AT=8)
    assert status == 0
    assert lines[-1] == f"stopped at step 8; checkpoint {first}/checkpoints/step-00000008.pt"

    status, lines, errors = train_here(
        tiny_project, monkeypatch, capsys, WORKBENCH_RUN_DIR=second,
        WORKBENCH_RESUME_FROM=first / "checkpoints" / "step-00000008.pt")

    assert status == 0, errors
    assert lines[0] == (f"resumed from {first}/checkpoints/step-00000008.pt at step 8 "
                        "(epoch 1 done)")
    expected = losses_by_step(read_metrics(whole))
    assert losses_by_step(read_metrics(first)) == {s: expected[s] for s in range(1, 9)}
    assert losses_by_step(read_metrics(second)) == {s: expected[s] for s in range(9, 19)}
    final_whole = torch.load(whole / "outputs" / "model.pt", weights_only=True)
    final_resumed = torch.load(second / "outputs" / "model.pt", weights_only=True)
    assert all(torch.equal(final_whole[name], final_resumed[name]) for name in final_whole)


def test_a_stop_between_epochs_reuses_the_epoch_checkpoint(tiny_project, tmp_path, monkeypatch,
                                                           capsys):
    status, lines, _ = train_here(tiny_project, monkeypatch, capsys,
                                  WORKBENCH_RUN_DIR=tmp_path / "run", TINY_STOP_AT=6)
    assert status == 0
    assert lines[-2].startswith("epoch=1 val_loss=")
    assert lines[-1] == f"stopped at step 6; checkpoint {tmp_path}/run/checkpoints/step-00000006.pt"


def test_the_run_folder_records_how_the_script_ended(tiny_project, tmp_path, monkeypatch, capsys):
    status, _, errors = train_here(tiny_project, monkeypatch, capsys,
                                   WORKBENCH_RUN_DIR=tmp_path / "done")
    assert status == 0, errors
    outcome = json.loads((tmp_path / "done" / "outcome.json").read_text())
    assert outcome["state"] == "completed" and outcome["step"] == 18 and outcome["time"] > 0

    status, _, _ = train_here(tiny_project, monkeypatch, capsys, WORKBENCH_RUN_DIR=tmp_path / "stopped",
                              TINY_STOP_AT=8)
    assert status == 0
    outcome = json.loads((tmp_path / "stopped" / "outcome.json").read_text())
    assert outcome["state"] == "stopped" and outcome["step"] == 8

    status, _, _ = train_here(tiny_project, monkeypatch, capsys, WORKBENCH_RUN_DIR=tmp_path / "failed",
                              WORKBENCH_RESUME_FROM=tmp_path / "nothing.pt")
    assert status == 2 and not (tmp_path / "failed" / "outcome.json").exists()  # no end worth recording


def test_a_bad_hyperparameter_is_one_error_line_and_status_2(tiny_project, monkeypatch, capsys):
    status, lines, errors = train_here(tiny_project, monkeypatch, capsys,
                                       "--set", "num_epochs=two")
    assert status == 2
    assert errors == ("error: --set num_epochs=two: num_epochs must be a whole number of "
                      "at least 1, not 'two'\n")
    assert lines == []


def test_a_missing_resume_checkpoint_is_one_error_line_and_status_2(tiny_project, tmp_path,
                                                                    monkeypatch, capsys):
    status, _, errors = train_here(tiny_project, monkeypatch, capsys,
                                   WORKBENCH_RUN_DIR=tmp_path / "run",
                                   WORKBENCH_RESUME_FROM=tmp_path / "nothing.pt")
    assert status == 2
    assert errors == f"error: cannot resume from {tmp_path}/nothing.pt: no such file or folder\n"


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_sigterm_finishes_the_step_checkpoints_and_exits_zero_with_one_line(tiny_project, tmp_path):
    run_dir = tmp_path / "run"
    process = subprocess.Popen(
        [sys.executable, "train.py", "--set", "num_epochs=1000"], cwd=tiny_project,
        env=child_environment(WORKBENCH_RUN_DIR=run_dir, TINY_STEP_SECONDS=0.02),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    first_line = process.stdout.readline()
    assert first_line.startswith("step=1 "), process.stderr.read()
    os.killpg(process.pid, signal.SIGTERM)  # as Workbench stops a run: the whole group
    rest, errors = process.communicate(timeout=60)

    assert process.returncode == 0, errors
    assert errors == ""
    latest = json.loads((run_dir / "checkpoints" / "latest.json").read_text())
    assert rest.splitlines()[-1] == (f"stopped at step {latest['step']}; checkpoint "
                                     f"{run_dir}/checkpoints/{latest['file']}")
    assert sum(line.startswith("stopped") for line in rest.splitlines()) == 1
    assert read_metrics(run_dir)[-1]["step"] == latest["step"]


def test_model_statistics_half_precision_and_loss_scale_are_honoured(tiny_project, tmp_path,
                                                                     monkeypatch, capsys):
    status, lines, errors = train_here(
        tiny_project, monkeypatch, capsys, "--set", "print_model_statistics=true",
        "--set", "use_fp16=true", "--set", "loss_scale=128",
        "--set", "num_epochs=1", WORKBENCH_RUN_DIR=tmp_path / "run")

    assert status == 0, errors
    assert errors == ("warning: use_fp16 on CPU autocasts to bfloat16 (CPU has no float16 "
                      "autocast)\n")
    assert lines[0].split() == ["layer", "type", "parameters"]
    assert lines[1].split() == ["0", "Linear", "144"]  # 8 x 16 weights + 16 biases
    assert lines[3].split() == ["total", "178", "(178", "trainable)"]
    # Scaling by a power of two is exact: the gradients divided back give the same training.
    status, _, _ = train_here(
        tiny_project, monkeypatch, capsys, "--set", "use_fp16=true", "--set", "num_epochs=1",
        WORKBENCH_RUN_DIR=tmp_path / "unscaled")
    assert status == 0
    scaled = losses_by_step(read_metrics(tmp_path / "run"))
    assert len(scaled) == 6 and scaled == losses_by_step(read_metrics(tmp_path / "unscaled"))


def test_a_disk_filling_at_a_checkpoint_is_one_error_line_naming_the_last_good_one(
        tiny_project, small_disk, monkeypatch, capsys):
    # About 0.6 MB a checkpoint (weights and momentum) on a 1 MB disk: the second cannot fit.
    run_dir = small_disk / "run"
    status, lines, errors = train_here(tiny_project, monkeypatch, capsys,
                                       WORKBENCH_RUN_DIR=run_dir, TINY_WIDTH=7000)

    assert status == 2
    # The best model (outputs/best.pt, saved first) is a by-product: only a warning.
    assert errors.splitlines() == [
        f"warning: could not save the best model to {run_dir}/outputs: disk full; the run goes on",
        f"error: could not write checkpoint {run_dir}/checkpoints/step-00000012.pt: disk full; "
        "the last good checkpoint is step-00000006.pt (free some space, then resume)"]
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == [
        "latest.json", "step-00000006.pt"]
    assert lines[-1].startswith("epoch=2 val_loss=")


def test_profile_every_n_iters_writes_one_trace_per_profiled_step(
        tiny_project, tmp_path, monkeypatch, capsys):
    run_dir = tmp_path / "runs" / "profiled"
    status, lines, errors = train_here(tiny_project, monkeypatch, capsys,
                                       "--hparams", "hparams/tiny.hparams",
                                       "--set", "profile_every_n_iters=8",
                                       WORKBENCH_RUN_DIR=run_dir)

    assert status == 0, errors
    traces = sorted(p.name for p in (run_dir / "profiles").iterdir())
    assert traces == ["step-00000008.json", "step-00000016.json"]
    trace = json.loads((run_dir / "profiles" / traces[0]).read_text())
    names = {event.get("name", "") for event in trace["traceEvents"]}
    assert any("backward" in name.lower() for name in names), "the step's backward is traced"
    assert any(line.startswith("profile of step 8: ") for line in lines)

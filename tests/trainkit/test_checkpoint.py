"""Checkpoints are written atomically, pruned to the newest few, and restore everything.

The full-disk tests fill a real, small tmpfs: a failed write there goes through the same
system calls and error paths as on a user's full disk.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from workbench_trainkit import (Checkpointer, TrainkitError, build_lr_schedule, build_optimizer,
                                restore)
from workbench_trainkit.checkpoint import load_checkpoint

from .conftest import make_hparams

PAGE = 4096


def small_model() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def trained_objects(steps: int = 3):
    """A model, optimizer and schedule that have taken ``steps`` steps (so all have state)."""
    torch.manual_seed(0)
    model = small_model()
    hp = make_hparams(optimizer="adam", learning_rate=0.01, warmup_steps=5,
                      learning_rate_decay_type="polynomial", opt_epsilon=1e-8)
    optimizer = build_optimizer(model.parameters(), hp)
    scheduler = build_lr_schedule(optimizer, hp, total_steps=50)
    for _ in range(steps):
        model(torch.randn(5, 4)).sum().backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
    return model, optimizer, scheduler


def test_a_checkpoint_restores_model_optimizer_schedule_step_epoch_and_generators(tmp_path):
    model, optimizer, scheduler = trained_objects()
    checkpointer = Checkpointer(tmp_path / "checkpoints", hparams=make_hparams(batch_size=7))
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    path = checkpointer.save(120, 2, model, optimizer, scheduler, extra={"note": "hi"})
    expected_draws = (random.random(), np.random.rand(), torch.rand(1).item())

    assert path.name == "step-00000120.pt"
    latest = json.loads((tmp_path / "checkpoints" / "latest.json").read_text())
    assert (latest["file"], latest["step"], latest["epoch"]) == ("step-00000120.pt", 120, 2)
    # Only tensors and plain values: torch.load's safe default opens it.
    saved = torch.load(path, weights_only=True)
    assert saved["hparams"]["batch_size"] == 7 and saved["extra"] == {"note": "hi"}

    fresh_model, fresh_optimizer, fresh_scheduler = trained_objects(steps=0)
    random.seed(9), np.random.seed(9), torch.manual_seed(9)
    assert restore(tmp_path / "checkpoints", fresh_model, fresh_optimizer,
                   fresh_scheduler) == (120, 2)
    for ours, theirs in zip(model.state_dict().values(), fresh_model.state_dict().values()):
        assert torch.equal(ours, theirs)
    assert fresh_optimizer.state_dict()["state"][0]["step"] == 3
    assert fresh_scheduler.last_epoch == 3
    assert fresh_optimizer.param_groups[0]["lr"] == optimizer.param_groups[0]["lr"]
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected_draws


def test_only_the_newest_checkpoints_are_kept(tmp_path):
    model = small_model()
    checkpointer = Checkpointer(tmp_path, keep=3)
    for step in (10, 20, 30, 40, 50):
        checkpointer.save(step, 0, model)
    assert sorted(p.name for p in tmp_path.glob("step-*.pt")) == [
        "step-00000030.pt", "step-00000040.pt", "step-00000050.pt"]
    assert checkpointer.latest().name == "step-00000050.pt"


def test_a_temporary_file_left_by_a_killed_writer_is_cleaned_up_and_never_read(tmp_path):
    model = small_model()
    Checkpointer(tmp_path).save(10, 1, model)
    (tmp_path / ".step-00000020.pt.abc.tmp").write_bytes(b"half a checkpoint")
    Checkpointer(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.json", "step-00000010.pt"]


def test_restoring_from_a_folder_without_checkpoints_or_a_damaged_file_says_so(tmp_path):
    with pytest.raises(TrainkitError, match="no checkpoint in"):
        restore(tmp_path, small_model())
    damaged = tmp_path / "step-00000001.pt"
    damaged.write_bytes(b"not a zip file")
    with pytest.raises(TrainkitError, match="cannot read checkpoint"):
        load_checkpoint(damaged)


def test_restoring_into_another_model_names_the_mismatch(tmp_path):
    Checkpointer(tmp_path).save(1, 0, small_model())
    with pytest.raises(TrainkitError, match="does not fit this model"):
        restore(tmp_path, torch.nn.Linear(3, 3))


def fill(disk: Path, leave_pages: int = 0) -> Path:
    """Take all the space on ``disk`` but ``leave_pages`` pages."""
    filler = disk / "filler"
    stats = os.statvfs(disk)
    size = (stats.f_bavail * stats.f_frsize) - leave_pages * PAGE
    with open(filler, "wb") as file:
        try:
            file.write(b"\0" * size)
            file.flush()
        except OSError:
            pass  # the disk is full: what we want
    return filler


def test_a_full_disk_keeps_the_last_checkpoint_valid_and_says_which_it_is(small_disk):
    model = small_model()
    checkpointer = Checkpointer(small_disk / "checkpoints")
    checkpointer.save(1, 0, model)
    saved_weight = model[0].weight.detach().clone()
    fill(small_disk)
    with torch.no_grad():
        model[0].weight.add_(1.0)

    with pytest.raises(TrainkitError) as caught:
        checkpointer.save(2, 0, model)

    assert str(caught.value) == (
        f"could not write checkpoint {small_disk}/checkpoints/step-00000002.pt: disk full; "
        "the last good checkpoint is step-00000001.pt (free some space, then resume)")
    assert sorted(p.name for p in (small_disk / "checkpoints").iterdir()) == [
        "latest.json", "step-00000001.pt"]
    fresh = small_model()
    assert restore(small_disk / "checkpoints", fresh) == (1, 0)
    assert torch.equal(fresh[0].weight, saved_weight)


def test_a_disk_that_fills_between_the_checkpoint_and_latest_json_keeps_the_previous_pair(
        small_disk, tmp_path):
    model = small_model()
    checkpointer = Checkpointer(small_disk / "checkpoints")
    checkpointer.save(1, 0, model)
    # Room for the new checkpoint, and not one page more for latest.json.
    size = Checkpointer(tmp_path).save(2, 0, model).stat().st_size
    fill(small_disk, leave_pages=-(-size // PAGE))

    with pytest.raises(TrainkitError, match="disk full; the last good checkpoint is step-00000001"):
        checkpointer.save(2, 0, model)

    assert sorted(p.name for p in (small_disk / "checkpoints").iterdir()) == [
        "latest.json", "step-00000001.pt"]
    assert json.loads((small_disk / "checkpoints" / "latest.json").read_text())["step"] == 1
    assert restore(small_disk / "checkpoints", small_model()) == (1, 0)

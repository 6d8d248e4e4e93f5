"""Metrics are JSON lines, flushed as written, by the main process only."""

from __future__ import annotations

import json
import math

import torch

from workbench_trainkit import MetricsWriter


def test_the_file_exists_from_the_start_and_each_record_is_a_flushed_json_line(tmp_path):
    writer = MetricsWriter(tmp_path, enabled=True)
    assert (tmp_path / "metrics.jsonl").read_text() == ""
    writer.write(10, loss=torch.tensor(0.5), acc=0.75, lr=0.002)
    writer.write(40, epoch=1, val_loss=0.25, val_acc=1)
    # Read before close: each line is on disk as soon as it is written.
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [list(r) for r in records] == [["step", "time", "loss", "acc", "lr"],
                                          ["step", "epoch", "time", "val_loss", "val_acc"]]
    assert records[0]["loss"] == 0.5 and records[1]["epoch"] == 1
    writer.close()


def test_a_nan_loss_is_written_as_null_so_the_line_stays_json(tmp_path):
    with MetricsWriter(tmp_path, enabled=True) as writer:
        writer.write(1, loss=math.nan, acc=math.inf)
    assert json.loads((tmp_path / "metrics.jsonl").read_text())["loss"] is None


def test_a_resumed_run_appends_to_the_same_file(tmp_path):
    with MetricsWriter(tmp_path, enabled=True) as writer:
        writer.write(1, loss=1.0)
    with MetricsWriter(tmp_path, enabled=True) as writer:
        writer.write(2, loss=0.5)
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 2


def test_only_rank_zero_writes(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    writer = MetricsWriter(tmp_path)
    assert writer.write(1, loss=1.0) is None
    assert not (tmp_path / "metrics.jsonl").exists()

"""Metric lines, metrics files read as they grow, and the error line of a trainer's output."""

from __future__ import annotations

import json
import math
import os

from workbench.training import MetricsTail, final_metrics, parse_metric_line, read_metrics
from workbench.training.metrics import keep_metrics_up_to
from workbench.training.log_text import error_line


def test_metric_lines_become_records_and_other_lines_do_not():
    assert parse_metric_line("step=10 loss=0.52 acc=0.91") == {"step": 10, "loss": 0.52, "acc": 0.91}
    assert parse_metric_line("epoch=1 val_loss=0.3 val_acc=0.9") == {"epoch": 1, "val_loss": 0.3, "val_acc": 0.9}
    assert parse_metric_line("  step=3, lr=1e-3 | loss=-0.5\n") == {"step": 3, "lr": 0.001, "loss": -0.5}
    assert math.isnan(parse_metric_line("step=4 loss=nan")["loss"])
    for line in ("saved outputs/model.pt", "step=10", "epoch=2", "loss=0.5 and more", "x=1 y=abc",
                 "step=1.5 loss=0.2", "loss=0.5abc", "Epoch 1: loss=0.5", ""):
        assert parse_metric_line(line) is None, line


def test_the_tail_returns_complete_lines_only_and_picks_up_the_rest_later(tmp_path):
    path = tmp_path / "metrics.jsonl"
    tail = MetricsTail(path)
    assert tail.read_new() == []  # no file yet
    with open(path, "w") as out:
        out.write('{"step": 1, "loss": 1.0}\n{"step": 2, "lo')
        out.flush()
        assert tail.read_new() == [{"step": 1, "loss": 1.0}]
        out.write('ss": 0.5}\nnot json\n')
        out.flush()
        assert tail.read_new() == [{"step": 2, "loss": 0.5}]
        assert tail.read_new() == []


def test_the_tail_starts_over_when_the_file_is_replaced_or_cut(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"step": s, "loss": 1 / s}) + "\n" for s in range(1, 6)))
    tail = MetricsTail(path)
    assert len(tail.read_new()) == 5 and not tail.restarted
    keep_metrics_up_to(path, 2)  # as a resume does: a new file with the first records
    assert [r["step"] for r in tail.read_new()] == [1, 2] and tail.restarted
    assert tail.read_new() == [] and not tail.restarted


def test_final_metrics_are_the_last_value_of_each_name(tmp_path):
    path = tmp_path / "metrics.jsonl"
    records = [{"step": 1, "time": 5.0, "loss": 1.0, "acc": 0.1}, {"step": 2, "loss": 0.5},
               {"step": 2, "epoch": 1, "val_acc": 0.8}]
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + '{"step": 3, "lo')
    assert read_metrics(path) == records  # the line being written is not a record yet
    assert final_metrics(path) == {"step": 2, "loss": 0.5, "acc": 0.1, "epoch": 1, "val_acc": 0.8}
    assert final_metrics(records) == final_metrics(path)
    assert read_metrics(tmp_path / "missing.jsonl") == [] and final_metrics(tmp_path / "missing.jsonl") == {}


def test_keeping_metrics_up_to_a_step_keeps_lines_byte_for_byte(tmp_path):
    lines = ['{"step":5,"loss":0.5}\n', '{"step":10, "loss":0.25}\n', '{"epoch":1,"val_acc":0.9}\n',
             '{"step":11,"loss":0.2}\n', '{"epoch":2,"val_acc":0.95}\n']
    source, copy = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    source.write_text("".join(lines))
    keep_metrics_up_to(source, 10, into=copy)
    assert copy.read_text() == "".join(lines[:3])  # the epoch record belongs to step 10
    assert source.read_text() == "".join(lines)
    keep_metrics_up_to(tmp_path / "none.jsonl", 10, into=tmp_path / "c.jsonl")
    assert not os.path.exists(tmp_path / "c.jsonl")


def test_the_error_line_is_the_exception_of_the_last_traceback_or_an_error_line():
    traceback = ("step=1 loss=1\nTraceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
                 "    main()\n    ^^^^^^\nValueError: boom at step 3\n")
    assert error_line(traceback) == "ValueError: boom at step 3"
    assert error_line("warning: slow\nerror: dataset_dir /data does not exist\n") == \
        "error: dataset_dir /data does not exist"
    chained = (traceback + "\nDuring handling of the above exception, another exception occurred:\n\n"
               "Traceback (most recent call last):\n  File \"x.py\", line 1\nKeyError: 'lr'\n")
    assert error_line(chained) == "KeyError: 'lr'"
    torchrun = ("[rank1]: Traceback (most recent call last):\n[rank1]:   File \"train.py\", line 9\n"
                "[rank1]: RuntimeError: rank 1 broke\nTraceback (most recent call last):\n  File \"run.py\"\n"
                "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n=====\n")
    assert error_line(torchrun) == "RuntimeError: rank 1 broke"
    assert error_line("all fine\n") == ""


def test_the_error_line_of_an_argparse_script_or_a_log_line_that_says_error():
    argparse_text = ("usage: train.py [-h] [--epochs EPOCHS]\n"
                     "train.py: error: unrecognized arguments: --hparams runs/1/run.hparams\n")
    assert error_line(argparse_text) == "train.py: error: unrecognized arguments: --hparams runs/1/run.hparams"
    assert error_line("loading\nERROR:root:no GPU found\ndone\n") == "ERROR:root:no GPU found"
    # A traceback, when there is one, says more than a line that mentions an error.
    assert error_line("2026 [W] socket error: retrying\nTraceback (most recent call last):\n"
                      "  File \"t.py\", line 1\nOSError: gone\n") == "OSError: gone"


def test_the_tail_of_a_log_starts_at_a_whole_line(tmp_path):
    from workbench.training.log_text import tail_text

    log = tmp_path / "stderr.log"
    log.write_text("first segment\nerror: old\nsecond segment line\nerror: new\n")
    start = len("first segment\nerror: old\n")
    assert tail_text(log, start) == "second segment line\nerror: new\n"
    assert tail_text(log, start, limit=15) == "error: new\n"  # cut inside a line: from the next one
    assert tail_text(log, start, limit=11) == "error: new\n"  # cut at the start of one: kept

"""What a run writes in its working folder: the walk that finds event and model files, the
products file, TensorBoard event files read as they are written, and the one metrics writer."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from workbench.training.metrics import read_metrics
from workbench.training.metrics_writer import RunMetricsWriter
from workbench.training.run_folder import RunFolder
from workbench.training.tb_events import EventFileTail, metric_name
from workbench.training.written_files import WorkingFolderScan, read_products, record_products


def _write(path: Path, data: bytes = b"x", mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def _relative(paths, root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in paths}


def test_a_walk_finds_what_was_written_since_the_start_and_skips_tools_and_workbench_run_folders(tmp_path):
    root = tmp_path / "project"
    started = time.time()
    _write(root / "pretrained.pt", mtime=started - 3600)                  # there before: not the run's
    _write(root / "runs" / "Dec02_07-15-18_host" / "events.out.tfevents.1.host")   # TensorBoard's runs/
    _write(root / "checkpoints" / "best" / "model.pth")
    _write(root / "model.safetensors")
    _write(root / "notes.txt")
    for skipped in (".git/objects/x.pt", ".venv/lib/model.onnx", "node_modules/a/model.onnx",
                    "src/__pycache__/x.pt", ".hidden/model.pt", "checkpoints/.tmp.pt"):
        _write(root / skipped)
    own_run = root / "runs" / "20261202-071518-250"                       # Workbench's run folders
    _write(own_run / "run.json", b"{}")
    _write(own_run / "outputs" / "model.pt")
    _write(own_run / "events.out.tfevents.2.host")
    scan = WorkingFolderScan(root, started)

    first = scan.scan()
    assert _relative(first.products, root) == {"checkpoints/best/model.pth", "model.safetensors"}
    assert _relative(first.event_files, root) == {"runs/Dec02_07-15-18_host/events.out.tfevents.1.host"}
    assert not first.truncated

    assert scan.scan().products == [] and scan.scan().event_files == []  # nothing new: nothing found twice
    _write(root / "pretrained.pt", b"fine-tuned")                        # changed by the run
    _write(root / "exported" / "model.onnx")
    second = scan.scan()
    assert _relative(second.products, root) == {"pretrained.pt", "exported/model.onnx"}


def test_a_walk_stops_at_its_budget_and_says_so(tmp_path):
    for index in range(30):
        _write(tmp_path / f"data/{index:02d}.png")
    result = WorkingFolderScan(tmp_path, time.time(), max_entries=10).scan()
    assert result.truncated and result.entries == 11


def test_products_are_recorded_relative_to_the_project_and_kept_up_to_date(tmp_path):
    run_dir = tmp_path / "runs" / "20261202-071518-250"
    run_dir.mkdir(parents=True)
    model = _write(tmp_path / "checkpoints" / "model.pth", b"12345")
    record_products(run_dir, tmp_path, [model])
    _write(model, b"1234567")
    record_products(run_dir, tmp_path, [model, tmp_path / "gone.pt"])     # a file gone by now is left out
    products = read_products(run_dir)
    assert [(p["path"], p["size"]) for p in products] == [("checkpoints/model.pth", 7)]
    assert products[0]["modified"] == pytest.approx(model.stat().st_mtime, abs=0.01)
    assert read_products(tmp_path / "nowhere") == []


@pytest.mark.parametrize("tag, name", [
    ("Loss/train", "loss"), ("Loss/test", "test_loss"), ("Accuracy/val", "val_accuracy"),
    ("val/acc", "val_acc"), ("train/lr", "lr"), ("loss", "loss"), ("charts/episodic return", "charts_episodic_return"),
    ("epoch", "epoch"), ("step", "tb_step"), ("a/b/c", "a_b_c"),
])
def test_tensorboard_tags_become_names_the_curves_group(tag, name):
    assert metric_name(tag) == name


@pytest.fixture(scope="module")
def event_file_bytes(tmp_path_factory) -> bytes:
    """A real event file, written by the writer torch's SummaryWriter writes with: three steps of
    two scalars each, after a text summary (not a scalar)."""
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    folder = tmp_path_factory.mktemp("tb")
    writer = EventFileWriter(str(folder))
    text = Summary.Value(tag="note", metadata={"plugin_data": {"plugin_name": "text"}})
    writer.add_event(Event(step=0, wall_time=1000.0, summary=Summary(value=[text])))
    for step in (1, 2, 3):
        for tag, value in (("Loss/train", 1.0 / step), ("Accuracy/test", step / 10)):
            scalar = Summary(value=[Summary.Value(tag=tag, simple_value=value)])
            writer.add_event(Event(step=step, wall_time=1000.0 + step, summary=scalar))
    writer.close()
    (path,) = folder.glob("events.out.tfevents.*")
    return path.read_bytes()


def test_an_event_file_being_written_is_read_to_its_last_whole_record_and_the_rest_later(tmp_path, event_file_bytes):
    path = tmp_path / "events.out.tfevents.1.host"
    cut = len(event_file_bytes) - 10                                     # inside the last record
    path.write_bytes(event_file_bytes[:cut])
    tail = EventFileTail(path)
    assert tail.read_new() == [{"step": 1, "time": 1001.0, "loss": 1.0, "test_accuracy": 0.1},
                               {"step": 2, "time": 1002.0, "loss": 0.5, "test_accuracy": 0.2},
                               {"step": 3, "time": 1003.0, "loss": 0.33333334}]
    assert tail.read_new() == []                                         # still cut off: nothing new, no error
    with open(path, "ab") as handle:
        handle.write(event_file_bytes[cut:])
    assert tail.read_new() == [{"step": 3, "time": 1003.0, "test_accuracy": 0.3}]
    assert tail.read_new() == []


def test_one_writer_gives_each_metric_name_to_the_first_source_and_sees_the_trainer_write(tmp_path):
    folder = RunFolder(tmp_path)
    writer = RunMetricsWriter(folder)
    assert writer.write("tensorboard", {"step": 1, "time": 1.0, "loss": 0.5})
    assert writer.write("stdout", {"step": 1, "time": 1.1, "loss": 0.6, "acc": 0.3})   # loss is TensorBoard's
    assert not writer.write("stdout", {"step": 2, "time": 1.2, "loss": 0.4})            # nothing of its own left
    assert not writer.written_by_others()
    with open(folder.metrics, "a", encoding="utf-8") as trainer:
        trainer.write(json.dumps({"step": 3, "val_loss": 0.2}) + "\n")
    assert writer.written_by_others()
    writer.close()
    assert read_metrics(folder.metrics) == [{"step": 1, "time": 1.0, "loss": 0.5},
                                            {"step": 1, "time": 1.1, "acc": 0.3}, {"step": 3, "val_loss": 0.2}]


def test_a_metrics_file_the_trainer_created_before_the_first_record_is_the_trainers(tmp_path):
    folder = RunFolder(tmp_path)
    writer = RunMetricsWriter(folder)
    folder.metrics.touch()                                               # the training helpers create it at once
    assert writer.written_by_others()
    writer.write("tensorboard", {"step": 1, "loss": 0.5})
    assert writer.written_by_others()
    writer.close()
    resumed = RunMetricsWriter(folder)                                   # a later segment: the file was there
    resumed.write("tensorboard", {"step": 2, "loss": 0.4})
    assert not resumed.written_by_others()
    resumed.close()


def test_the_models_panel_lists_a_runs_products_under_it_and_walks_tensorboards_runs_folders(tmp_path):
    from workbench.modeltools.model_index import group_by_run, list_models

    run_dir = tmp_path / "runs" / "20261202-071518-250"
    _write(run_dir / "run.json", b"{}")
    _write(run_dir / "outputs" / "final.onnx")
    best = _write(tmp_path / "checkpoints" / "best.pth")
    _write(tmp_path / "runs" / "Dec02_07-15-18_host" / "model.pt")    # not a Workbench run: another file
    _write(tmp_path / "pretrained.onnx")
    record_products(run_dir, tmp_path, [best])
    groups = {group.run_id: sorted(m.path.relative_to(tmp_path).as_posix() for m in group.models)
              for group in group_by_run(list_models(tmp_path))}
    assert groups == {"20261202-071518-250": ["checkpoints/best.pth", "runs/20261202-071518-250/outputs/final.onnx"],
                      None: ["pretrained.onnx", "runs/Dec02_07-15-18_host/model.pt"]}

"""The Sparsify tool: magnitude pruning of checkpoints and ONNX graphs, structured channel
pruning that really removes channels, fine-tuning through the project's code, and the report."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.modeltools.conftest import model_path
from workbench.modeltools.context import ToolContext
from workbench.modeltools.errors import ModelToolError, ToolCancelled
from workbench.modeltools.sparsify import SPEC, run


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """Tiny models train and export faster on one thread, and far faster when other processes
    share the cores (a second OpenMP thread then mostly waits)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def sparsify(values: dict, events: list | None = None, context: ToolContext | None = None):
    """Run the tool as a job does: values resolved by its declaration, events collected."""
    context = context or ToolContext()
    context.stages = SPEC.stages
    if events is not None:
        context.on_event = events.append
    return run(SPEC.resolve(values), context)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".partial"))


def model_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.suffix in (".onnx", ".pt2"))


@pytest.fixture
def onnx_copy(digits_onnx, tmp_path) -> Path:
    """The trained digits ONNX model, alone in a folder outside any project."""
    folder = tmp_path / "outside"
    folder.mkdir()
    return Path(shutil.copy(digits_onnx, folder / "digits.onnx"))


def onnx_weight_zeros(path: Path, name: str) -> tuple[int, int]:
    import onnx
    from onnx import numpy_helper

    for init in onnx.load(str(path)).graph.initializer:
        if init.name == name:
            array = numpy_helper.to_array(init)
            return int((array == 0).sum()), int(array.size)
    raise KeyError(name)


# --- the declaration ------------------------------------------------------------------------

def test_the_declaration_offers_the_pruning_parameters_and_stages():
    names = [p.name for p in SPEC.params]
    for name in ("model", "output", "method", "scope", "sparsity", "finetune_epochs",
                 "learning_rate", "ignore_layers", "model_factory", "data", "threads"):
        assert name in names
    assert SPEC.param("method").choices == ("magnitude", "channels")
    assert SPEC.param("scope").choices == ("global", "layer")
    assert SPEC.param("sparsity").default == 0.5
    assert SPEC.stages == ("Load model", "Load data", "Prune", "Fine-tune", "Export", "Evaluate")
    assert ".onnx" in SPEC.applies_to and ".pt" in SPEC.applies_to


# --- ONNX input: magnitude pruning in the graph ---------------------------------------------

def test_global_magnitude_pruning_of_an_onnx_model_outside_any_project(onnx_copy, digits_npz):
    before = onnx_copy.read_bytes()
    events = []
    report = sparsify({"model": str(onnx_copy), "data": str(digits_npz)}, events)

    target = onnx_copy.with_name("digits.sparse.onnx")
    assert report.outputs == [str(target)]
    assert onnx_copy.read_bytes() == before
    rows = report.table("Sparsity per layer").rows
    assert {row[1] for row in rows} == {"Conv", "Gemm"}
    # One threshold for all: exactly half of all the pruned weights, unevenly per layer.
    assert sum(row[3] for row in rows) == round(0.5 * sum(row[2] for row in rows))
    assert len({row[4] for row in rows}) > 1
    zeros, size = onnx_weight_zeros(target, "classifier.1.weight")
    assert zeros == next(row[3] for row in rows if row[0] == "classifier.1.weight")
    figures = report.figures
    assert 45 < figures["sparsity"] < 50
    assert figures["accuracy_before"] > 90 and figures["accuracy_after"] is not None
    assert figures["size_bytes_after"] == pytest.approx(figures["size_bytes_before"], rel=0.01)
    assert figures["compressed_size_ratio"] < 0.8  # the zeros compress
    assert figures["latency_p50_ms_before"] > 0 and figures["latency_ratio"] > 0
    assert leftovers(onnx_copy.parent) == []
    assert [e["name"] for e in events if e["event"] == "stage"] == list(SPEC.stages)
    # The last stage reaches 100 % once, as the report is done, not before.
    last = events[max(i for i, e in enumerate(events) if e["event"] == "stage"):]
    fractions = [e["fraction"] for e in last if e["event"] == "progress"]
    assert fractions == sorted(fractions) and fractions.count(1.0) == 1 and fractions[-1] == 1.0
    assert events[-1] == {"event": "progress", "fraction": 1.0}

    # Again: the first variant is kept, the second takes the next free name.
    written = target.read_bytes()
    again = sparsify({"model": str(onnx_copy), "data": str(digits_npz), "sparsity": 0.7})
    assert again.outputs == [str(onnx_copy.with_name("digits.sparse-2.onnx"))]
    assert target.read_bytes() == written


def test_layer_magnitude_pruning_of_onnx_leaves_ignored_layers_alone(onnx_copy):
    target = onnx_copy.with_name("custom.onnx")
    report = sparsify({"model": str(onnx_copy), "scope": "layer", "sparsity": 0.8,
                       "ignore_layers": "classifier", "output": str(target)})

    rows = {row[0]: row for row in report.table("Sparsity per layer").rows}
    assert sorted(rows) == ["features.0.0.weight", "features.1.0.weight", "features.3.0.weight"]
    assert all(abs(row[4] - 80) < 0.5 for row in rows.values())
    assert onnx_weight_zeros(target, "classifier.1.weight")[0] == 0
    assert report.outputs == [str(target)]
    assert any("accuracy was not measured" in w for w in report.warnings)


# --- bad input: clear errors, nothing written --------------------------------------------------

def test_channel_pruning_of_an_onnx_model_asks_for_the_checkpoint(onnx_copy):
    with pytest.raises(ModelToolError, match="needs the PyTorch checkpoint.*model factory"):
        sparsify({"model": str(onnx_copy), "method": "channels"})
    with pytest.raises(ModelToolError, match="fine-tuning needs the PyTorch checkpoint"):
        sparsify({"model": str(onnx_copy), "finetune_epochs": 1})
    assert model_files(onnx_copy.parent) == ["digits.onnx"] and leftovers(onnx_copy.parent) == []


def test_a_file_that_is_not_a_model_is_refused(digits_project, onnx_copy):
    fake_onnx = onnx_copy.with_name("notes.onnx")
    fake_onnx.write_text("not a model")
    with pytest.raises(ModelToolError, match="notes.onnx is not a model file: it is a text file"):
        sparsify({"model": str(fake_onnx)})
    truncated = onnx_copy.with_name("truncated.onnx")
    data = onnx_copy.read_bytes()
    truncated.write_bytes(data[:len(data) // 2])
    with pytest.raises(ModelToolError, match="truncated.onnx"):
        sparsify({"model": str(truncated)})
    fake_checkpoint = digits_project / "notes.pt"
    fake_checkpoint.write_text("not a checkpoint")
    with pytest.raises(ModelToolError, match="notes.pt is not a model file: it is a text file"):
        sparsify({"model": str(fake_checkpoint)})
    program = digits_project / "model.pruned.pt2"
    write_exported_program(program)
    with pytest.raises(ModelToolError, match="is an ExportedProgram.*checkpoint"):
        sparsify({"model": str(program)})
    assert leftovers(onnx_copy.parent) == [] and leftovers(digits_project) == []
    assert model_files(digits_project) == ["model.pruned.pt2"]


def write_exported_program(path: Path) -> Path:
    """A file laid out as torch.export.save writes one (only its table of contents matters)."""
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("model/archive_format", "pt2")
        archive.writestr("model/models/model.json", "{}")
    return path


def test_a_mistyped_input_shape_is_refused_before_anything_loads(digits_project):
    for typed, message in (("1x1x8x8", r"--input-shape 1x1x8x8: '1x1x8x8' is not a positive "
                                        r"whole number \(separate the sizes with commas"),
                           ("1,0,8,8", r"--input-shape 1,0,8,8: '0' is not a positive"),
                           ("8", r"--input-shape 8: give the batch and at least one more size")):
        events = []
        with pytest.raises(ModelToolError, match=message):
            sparsify({"model": str(model_path(digits_project)), "input_shape": typed}, events)
        assert events == []  # not even the first stage began
    assert model_files(model_path(digits_project).parent) == []


def test_the_input_shape_given_is_the_one_used_and_quoted(digits_project, onnx_copy, digits_npz):
    with pytest.raises(ModelToolError, match=r"does not run on inputs of --input-shape 1,1,8:"):
        sparsify({"model": str(model_path(digits_project)), "input_shape": "1,1,8"})
    with pytest.raises(ModelToolError, match=r"--input-shape 1,1,16,16 does not fit .*digits.onnx"):
        sparsify({"model": str(onnx_copy), "data": str(digits_npz), "input_shape": "1,1,16,16"})
    assert model_files(model_path(digits_project).parent) == []
    assert model_files(onnx_copy.parent) == ["digits.onnx"]


def test_a_checkpoint_outside_any_project_needs_its_project(digits_project, tmp_path):
    lone = Path(shutil.copy(model_path(digits_project), tmp_path / "lone.pt"))
    with pytest.raises(ModelToolError, match="not inside a Workbench project.*ONNX"):
        sparsify({"model": str(lone)})


def test_a_checkpoint_that_does_not_match_the_factory_is_refused(digits_project):
    import torch

    other = digits_project / "other.pt"
    torch.save(torch.nn.Linear(3, 4).state_dict(), other)
    with pytest.raises(ModelToolError, match="does not match the model factory 'digits_net'"):
        sparsify({"model": str(other), "method": "channels"})
    with pytest.raises(ModelToolError, match="unknown model_name 'digit_net'.*digits_net"):
        sparsify({"model": str(model_path(digits_project)), "model_factory": "digit_net"})
    assert model_files(digits_project) == [] and leftovers(digits_project) == []


def test_a_model_factory_that_fails_is_reported_without_a_traceback(digits_project,
                                                                    fresh_project_imports):
    code = digits_project / "model.py"
    code.write_text(code.read_text().replace(
        "    return DigitsNet(", "    raise RuntimeError('no such backbone')\n    return DigitsNet("))
    with pytest.raises(ModelToolError, match="factory 'digits_net'.*failed.*no such backbone"):
        sparsify({"model": str(model_path(digits_project))})


@pytest.mark.parametrize("sparsity", ["0", "1.5", "-0.1", "lots"])
def test_sparsity_out_of_range_is_refused(digits_project, sparsity):
    with pytest.raises(ModelToolError, match="--sparsity"):
        sparsify({"model": str(model_path(digits_project)), "sparsity": sparsity})


def test_ignoring_a_layer_that_does_not_exist_suggests_close_names(digits_project, onnx_copy):
    with pytest.raises(ModelToolError, match=r"no module named 'featurs\.0'.*features\.0"):
        sparsify({"model": str(model_path(digits_project)), "method": "channels",
                  "ignore_layers": "featurs.0"})
    with pytest.raises(ModelToolError, match=r"no layer named 'clasifier'.*classifier"):
        sparsify({"model": str(onnx_copy), "ignore_layers": "clasifier"})
    outputs = model_path(digits_project).parent
    assert model_files(outputs) == [] and leftovers(outputs) == []


def test_data_of_the_wrong_shape_is_refused_before_anything_is_pruned(digits_project, onnx_copy):
    wrong = onnx_copy.with_name("images.npz")
    np.savez(wrong, x=np.zeros((4, 3, 32, 32), np.float32))
    with pytest.raises(ModelToolError, match=r"images.npz.*\(3, 32, 32\)"):
        sparsify({"model": str(model_path(digits_project)), "data": str(wrong)})
    events = []
    with pytest.raises(ModelToolError, match="samples of shape"):
        sparsify({"model": str(onnx_copy), "data": str(wrong)}, events)
    assert [e["name"] for e in events if e["event"] == "stage"] == ["Load model", "Load data"]


def test_cancelling_during_finetuning_writes_nothing(digits_project):
    context = ToolContext()
    events = []

    def cancel_once_training(event):
        events.append(event)
        if event["event"] == "progress" and any(
                e.get("name") == "Fine-tune" for e in events if e["event"] == "stage"):
            context.cancel()

    context.on_event = cancel_once_training
    with pytest.raises(ToolCancelled):
        sparsify({"model": str(model_path(digits_project)), "method": "channels",
                  "finetune_epochs": 2}, context=context)
    outputs = model_path(digits_project).parent
    assert model_files(outputs) == [] and leftovers(outputs) == []


def test_the_exporters_chatter_goes_to_the_log_without_the_known_harmless_messages(
        tmp_path, monkeypatch, capfd):
    import logging
    import warnings

    import torch

    from workbench.modeltools.pruning.export import export_onnx

    def chatty_export(model, args, target, **options):
        logging.getLogger("torch.onnx._internal.exporter._registration").warning(
            "torchvision is not installed. Skipping torchvision::roi_align")
        warnings.warn("`isinstance(treespec, LeafSpec)` is deprecated", FutureWarning)
        print("W1130 12:06:37.369000 11246 torch/onnx/_internal/_core.py:9] opset 18 chosen")
        Path(target).write_bytes(b"onnx")

    monkeypatch.setattr(torch.onnx, "export", chatty_export)
    lines: list[str] = []
    assert export_onnx(torch.nn.Linear(2, 2), torch.zeros(2, 2), tmp_path / "m.onnx", "the model",
                       lines.append) == "dynamo"
    assert lines == ["torch/onnx/_internal/_core.py:9] opset 18 chosen"]
    terminal = capfd.readouterr()
    assert terminal.out == terminal.err == ""


# --- structured channel pruning ------------------------------------------------------------

def test_channel_pruning_keeps_the_classifier_outputs_and_ignored_layers(trained_digits_project):
    import torch

    from workbench.modeltools.project_code import ProjectCode
    from workbench.modeltools.pruning.channels import prune_channels, snapshot
    from workbench.modeltools.pruning.layers import final_layer

    code = ProjectCode(trained_digits_project)
    model = code.build_model("digits_net", code.hparams(), model_path(trained_digits_project))
    example = torch.rand(2, 1, 8, 8)
    before = snapshot(model)
    assert final_layer(model, example) == "classifier.4"
    prune_channels(model, example, 0.5, ["features.0"], "classifier.4", "digits")
    after = snapshot(model)
    assert after["features.0.0"][3] == before["features.0.0"][3] == 16
    assert after["features.1.0"][2:] == (16, 16)
    assert after["classifier.4"][3] == 10 and after["classifier.4"][2] == 32
    assert model(example).shape == (2, 10)


@pytest.mark.slow
def test_half_the_channels_removed_and_two_epochs_of_finetuning_keep_digits_accuracy(
        digits_project):
    import onnxruntime
    import torch

    source = model_path(digits_project)
    events = []
    report = sparsify({"model": str(source), "method": "channels", "sparsity": 0.5,
                       "finetune_epochs": 2}, events)

    onnx_file = source.with_name("model.pruned.onnx")
    pt2_file = source.with_name("model.pruned.pt2")
    assert report.outputs == [str(onnx_file), str(pt2_file)]
    rows = {row[0]: row for row in report.table("Sparsity per layer").rows}
    # conv -> conv: half the outputs and half the inputs, a quarter of the weights remain.
    assert rows["features.1.0"][2:4] == [4608, 1152]
    assert rows["features.1.0"][5:] == ["16 → 8", "32 → 16"]
    assert rows["classifier.1"][5] == "256 → 128"  # the linear layer after the flatten
    assert rows["classifier.4"][6] == "10 → 10"
    figures = report.figures
    assert 0.2 < figures["parameters_after"] / figures["parameters_before"] < 0.3
    assert figures["accuracy_drop"] <= 1.0, figures
    assert figures["size_ratio"] < 0.4
    assert figures["finetune_epochs"] == 2 and figures["final_loss"] < 0.5
    assert figures["latency_ratio"] > 0  # measured; never asserted on time

    session = onnxruntime.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
    images = np.zeros((5, 1, 8, 8), np.float32)
    logits = session.run(None, {session.get_inputs()[0].name: images})[0]
    assert logits.shape == (5, 10)
    program = torch.export.load(str(pt2_file)).module()
    assert program(torch.zeros(3, 1, 8, 8)).shape == (3, 10)
    assert sum(p.numel() for p in program.parameters()) == figures["parameters_after"]

    stages = [e["name"] for e in events if e["event"] == "stage"]
    assert stages == list(SPEC.stages)
    epoch_logs = [e["text"] for e in events
                  if e["event"] == "log" and e["text"].startswith("fine-tune epoch")]
    assert len(epoch_logs) == 2 and "loss" in epoch_logs[-1]
    assert sum(e["event"] == "progress" for e in events) > 50  # every training step
    assert leftovers(source.parent) == []


@pytest.mark.slow
def test_magnitude_masks_stay_fixed_through_finetuning(digits_project):
    source = model_path(digits_project)
    # An earlier run's program: the default outputs take the next number, both of them.
    earlier = source.with_name("model.sparse.pt2")
    earlier.write_bytes(b"an earlier variant")
    report = sparsify({"model": str(source), "method": "magnitude", "scope": "global",
                       "sparsity": 0.6, "finetune_epochs": 1})

    rows = report.table("Sparsity per layer").rows
    assert sum(row[3] for row in rows) == round(0.6 * sum(row[2] for row in rows))
    target = source.with_name("model.sparse-2.onnx")
    assert report.outputs == [str(target), str(source.with_name("model.sparse-2.pt2"))]
    assert earlier.read_bytes() == b"an earlier variant"
    assert not source.with_name("model.sparse.onnx").exists()
    # The linear layer's weight reaches the ONNX file as it is: its zeros survived training.
    zeros, _ = onnx_weight_zeros(target, "classifier.1.weight")
    assert zeros >= next(row[3] for row in rows if row[0] == "classifier.1")
    assert report.figures["parameters_after"] == report.figures["parameters_before"]
    assert report.figures["accuracy_drop"] <= 1.0, report.figures


MOBILENET_STYLE = '''
"""A MobileNet-style network on 3x32x32 images: depthwise separable convolutions."""
from torch import nn
from workbench_trainkit import models


def block(cin, cout, stride=1, groups=1, kernel=3):
    return nn.Sequential(nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups,
                                   bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


def separable(cin, cout, stride=1):
    return nn.Sequential(block(cin, cin, stride, groups=cin), block(cin, cout, kernel=1))


class MobileNetStyle(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(block(3, 32, 2), separable(32, 64), separable(64, 128, 2),
                                      separable(128, 128), separable(128, 256, 2),
                                      separable(256, 256), nn.AdaptiveAvgPool2d(1))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(256, classes))

    def forward(self, images):
        return self.classifier(self.features(images))


@models.register("mobilenet_style")
def mobilenet_style(hp):
    return MobileNetStyle()
'''


@pytest.mark.slow
def test_channel_pruning_of_a_mobilenet_style_network_shrinks_it(digits_project,
                                                                 fresh_project_imports):
    import torch

    (digits_project / "mobilenet_style.py").write_text(MOBILENET_STYLE)
    script = digits_project / "train.py"
    text = script.read_text().replace("import model ", "import mobilenet_style\nimport model ", 1)
    script.write_text(text)
    from workbench.modeltools.project_code import ProjectCode

    code = ProjectCode(digits_project)
    torch.manual_seed(0)
    checkpoint = digits_project / "mobilenet.pt"
    torch.save(code.build_model("mobilenet_style", code.hparams()).state_dict(), checkpoint)
    images = digits_project / "images.npz"
    rng = np.random.default_rng(0)
    np.savez(images, x=rng.random((8, 3, 32, 32), dtype=np.float32), y=rng.integers(0, 10, 8))

    report = sparsify({"model": str(checkpoint), "method": "channels", "sparsity": 0.5,
                       "model_factory": "mobilenet_style", "data": str(images)})

    rows = {row[0]: row for row in report.table("Sparsity per layer").rows}
    # A depthwise convolution loses the channels of the pointwise one before it.
    assert rows["features.1.0.0"][6] == "32 → 16" and rows["features.1.1.0"][5] == "32 → 16"
    assert rows["classifier.1"][6] == "10 → 10"
    figures = report.figures
    assert figures["parameters_after"] < 0.35 * figures["parameters_before"]
    assert figures["latency_p50_ms_after"] > 0 and figures["latency_ratio"] > 0
    print(f"mobilenet-style, half the channels: latency ratio {figures['latency_ratio']}")

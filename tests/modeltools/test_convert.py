"""Convert: PyTorch models to one verified ONNX file, run the way the CLI and the job run it
(run_tool with a ToolInvocation), on the digits project and on tiny models outside any project."""

from __future__ import annotations

import re
import shutil
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

from tests.modeltools.conftest import RUN_ID, model_path
from workbench.modeltools import ModelToolError, ToolCancelled, ToolInvocation
from workbench.modeltools.running import run_tool


def convert(values: dict, events: list | None = None):
    sink = events.append if events is not None else (lambda event: None)
    return run_tool(ToolInvocation("convert", values), sink)


def written(folder: Path) -> list[str]:
    """The ONNX and temporary files in ``folder``: what a failed conversion must not leave."""
    return sorted(p.name for p in folder.rglob("*") if p.suffix in (".onnx", ".partial", ".data"))


def onnx_input_shape(path: Path) -> list:
    import onnx

    model = onnx.load(str(path))
    return [d.dim_param or d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]


def logged(events: list) -> str:
    return "\n".join(e["text"] for e in events if e["event"] == "log")


def float_weights(path: Path) -> int:
    """The elements of the float initializers of an ONNX file."""
    import onnx
    from onnx import numpy_helper

    arrays = [numpy_helper.to_array(i) for i in onnx.load(str(path)).graph.initializer]
    return sum(a.size for a in arrays if a.dtype.kind == "f")


def tiny_model():
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(4 * 6 * 6, 3)).eval()


def quietly(save, *args, **kwargs):
    """torch.jit and torch.export functions, without their deprecation warnings."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return save(*args, **kwargs)


# --- the digits project -------------------------------------------------------------------------

def test_trained_digits_weights_become_one_verified_onnx_file_beside_them(digits_project, capfd):
    import onnx

    from workbench.modeltools.data import from_project
    from workbench.modeltools.project_code import ProjectCode
    from workbench.modeltools.runtimes import open_model

    events = []
    report = convert({"model": str(model_path(digits_project))}, events)

    target = digits_project / "runs" / RUN_ID / "outputs" / "model.onnx"
    assert report.outputs == [str(target)]
    assert written(target.parent) == ["model.onnx"]
    figures = report.figures
    assert list(figures) == ["exporter", "opset", "max_abs_diff", "source_size_bytes",
                             "onnx_size_bytes", "nodes", "parameters", "torch_parameters",
                             "parameters_note", "seconds"]
    assert figures["exporter"] == "dynamo" and figures["opset"] == 18
    assert figures["max_abs_diff"] <= 1e-4
    assert figures["onnx_size_bytes"] == target.stat().st_size
    assert figures["source_size_bytes"] == model_path(digits_project).stat().st_size
    assert figures["nodes"] > 5
    # Parameters as PyTorch counts them (no batch-norm statistics); in the file, the float
    # weights and biases the layers take (no integer shape constant). The three batch norms
    # (224 scales and shifts) are folded into the convolutions, which gain 112 biases.
    assert figures["torch_parameters"] == 40_506
    assert figures["parameters"] == 40_506 - 224 + 112 == float_weights(target)
    assert figures["parameters_note"].startswith(
        "the ONNX model holds 40,394 parameters and the PyTorch model 40,506: the export folded "
        "its 3 batch-norm layers (224 parameters) into the layers before them")
    assert report.warnings == []

    # One self-contained file with a dynamic batch, valid for the ONNX checker.
    model = onnx.load(str(target))
    onnx.checker.check_model(model, full_check=True)
    assert all(i.data_location != onnx.TensorProto.EXTERNAL for i in model.graph.initializer)
    assert onnx_input_shape(target) == ["batch", 1, 8, 8]
    assert [i.name for i in model.graph.input] == ["images"]
    assert [o.name for o in model.graph.output] == ["output"]

    # Verified on the project's samples, at batch 8 and at batch 1, per output.
    table = report.table("Verification")
    assert table.columns == ["output", "batch", "shape", "max abs diff", "mean abs diff"]
    assert [row[:3] for row in table.rows] == [["output", 8, "(8, 10)"], ["output", 1, "(1, 10)"]]
    assert all(row[3] <= 1e-4 and row[4] <= row[3] for row in table.rows)

    # The file predicts what the PyTorch model predicts on the whole test split.
    code = ProjectCode(digits_project)
    data = from_project(code, "test")
    torch_model = code.build_model("digits_net", code.hparams(), model_path(digits_project))
    import torch

    with torch.no_grad():
        expected = torch_model(torch.from_numpy(data.x)).numpy()
    produced = open_model(target).run_batched(data.x, 64)
    assert (produced.argmax(1) == expected.argmax(1)).all()

    stages = [e["name"] for e in events if e["event"] == "stage"]
    assert stages == ["Load model", "Load data", "Export", "Simplify", "Check", "Verify", "Save"]
    # The export reports its steps; 100 % comes once, when the report is done.
    export = events.index(next(e for e in events if e.get("name") == "Export"))
    simplify = events.index(next(e for e in events if e.get("name") == "Simplify"))
    steps = [e["fraction"] for e in events[export:simplify] if e["event"] == "progress"]
    assert len(set(steps)) >= 4 and steps == sorted(steps)
    save = events.index(next(e for e in events if e.get("name") == "Save"))
    assert [e for e in events[save + 1:] if e["event"] == "progress"][-1]["fraction"] == 1.0
    assert events[-1] == {"event": "progress", "fraction": 1.0}
    # The exporter's chatter is in the log, not on the terminal, without the known harmless
    # messages: torchvision's operators, torch's own deprecated tree spec, glog prefixes.
    assert "[torch.onnx]" in logged(events)
    for noise in ("torchvision is not installed", "LeafSpec", "FutureWarning"):
        assert noise not in logged(events)
    assert not re.search(r"^[IWEF]\d{4} [\d:.]+ \d+ ", logged(events), re.MULTILINE)
    terminal = capfd.readouterr()
    assert "torch.onnx" not in terminal.out + terminal.err
    assert "Warning" not in terminal.out + terminal.err


def test_the_torchscript_exporter_writes_a_fixed_batch_at_an_old_opset(digits_project):
    # The model was trained with the run's copy of the hyper-parameters, which is what counts.
    project_settings = digits_project / "hparams" / "digits.hparams"
    project_settings.write_text(project_settings.read_text().replace(
        "model_name=digits_net", "model_name=a_model_of_later_work"))
    output = digits_project / "exported" / "digits-13.onnx"
    output.parent.mkdir()
    output.write_bytes(b"an older export")  # named with -o: replaced
    report = convert({"model": str(model_path(digits_project)), "output": str(output),
                      "exporter": "torchscript", "opset": 13, "dynamic_batch": False,
                      "simplify": False, "verify_samples": 5})

    assert report.outputs == [str(output)]
    assert report.figures["exporter"] == "torchscript" and report.figures["opset"] == 13
    assert report.figures["max_abs_diff"] <= 1e-4
    assert onnx_input_shape(output) == [1, 1, 8, 8]
    rows = report.table("Verification").rows
    assert [row[1:3] for row in rows] == [[1, "(1, 10)"]]
    assert written(model_path(digits_project).parent) == []


def test_auto_falls_back_to_torchscript_when_dynamo_cannot_write_the_opset(digits_project):
    earlier = model_path(digits_project).with_name("model.onnx")
    earlier.write_bytes(b"an earlier conversion")  # the default output never replaces it
    events = []
    report = convert({"model": str(model_path(digits_project)), "opset": 13,
                      "verify_samples": 2}, events)
    assert report.outputs == [str(earlier.with_name("model-2.onnx"))]
    assert earlier.read_bytes() == b"an earlier conversion"

    assert report.figures["exporter"] == "torchscript" and report.figures["opset"] == 13
    assert report.warnings[0].startswith("Exported with the TorchScript exporter because the "
                                         "dynamo exporter cannot write opset 13")
    assert "Falling back to the TorchScript exporter" in logged(events)
    assert report.figures["max_abs_diff"] <= 1e-4


def test_forcing_dynamo_at_an_opset_it_cannot_write_is_an_error(digits_project):
    with pytest.raises(ModelToolError) as caught:
        convert({"model": str(model_path(digits_project)), "opset": 13, "exporter": "dynamo"})
    message = str(caught.value)
    assert "the dynamo exporter cannot write opset 13 for" in message
    assert str(model_path(digits_project)) in message
    assert "use --opset 18 or --exporter torchscript" in message
    assert written(model_path(digits_project).parent) == []


EXTRA_MODELS = '''
    """Models the converter finds hard, registered beside digits_net."""
    import torch
    from torch import nn
    from workbench_trainkit import models

    from model import DigitsNet


    class GuardedDigitsNet(DigitsNet):
        """DigitsNet refusing NaN inputs: a Python branch on a tensor value."""

        def forward(self, images):
            if torch.isnan(images).any():
                raise ValueError("NaN in the input")
            return super().forward(images)


    class ScriptedHeadNet(nn.Module):
        """A TorchScript layer inside a Python model, which neither exporter takes."""

        def __init__(self):
            super().__init__()
            self.flatten = nn.Flatten()
            self.head = torch.jit.script(nn.Linear(64, 10))

        def forward(self, images):
            return self.head(self.flatten(images)).relu()


    @models.register("guarded_net")
    def guarded_net(hp):
        return GuardedDigitsNet()


    @models.register("scripted_head_net")
    def scripted_head_net(hp):
        return ScriptedHeadNet()
'''


@pytest.fixture
def hard_models_project(digits_project, fresh_project_imports) -> Path:
    """The digits project with extra_models.py (guarded_net, scripted_head_net) imported by
    train.py, and weights for scripted_head_net in the run's outputs."""
    import torch

    (digits_project / "extra_models.py").write_text(textwrap.dedent(EXTRA_MODELS))
    train = digits_project / "train.py"
    train.write_text("import extra_models\n" + train.read_text())
    torch.save({"head.weight": torch.randn(10, 64), "head.bias": torch.zeros(10)},
               model_path(digits_project).with_name("scripted.pt"))
    return digits_project


def test_auto_falls_back_to_torchscript_when_dynamo_cannot_capture_the_model(hard_models_project,
                                                                             capfd):
    events = []
    report = convert({"model": str(model_path(hard_models_project)),
                      "model_factory": "guarded_net", "verify_samples": 4}, events)

    assert report.figures["exporter"] == "torchscript"
    fallback = report.warnings[0]
    assert fallback.startswith("Exported with the TorchScript exporter because the dynamo exporter "
                               "failed (forward branches on a value computed from its input (Python "
                               "control flow on tensor values) at extra_models.py:")
    line = textwrap.dedent(EXTRA_MODELS).splitlines().index(
        "        if torch.isnan(images).any():") + 1
    assert f"extra_models.py:{line} `if torch.isnan(images).any():`" in fallback
    # The trace took the branch of the example input; the report says so.
    assert report.warnings[1].startswith(
        "The TorchScript exporter treated a Python value computed from tensors as a constant "
        f"(extra_models.py:{line}): the ONNX model always takes the branch the example input took")
    assert report.figures["max_abs_diff"] <= 1e-4
    assert onnx_input_shape(Path(report.outputs[0])) == ["batch", 1, 8, 8]
    assert "The dynamo exporter failed" in logged(events)
    terminal = capfd.readouterr()
    assert terminal.out == "" and terminal.err == ""


def test_a_model_neither_exporter_takes_is_an_error_naming_both(hard_models_project):
    source = model_path(hard_models_project).with_name("scripted.pt")
    with pytest.raises(ModelToolError) as caught:
        convert({"model": str(source), "model_factory": "scripted_head_net"})
    message = str(caught.value)
    assert message.startswith(f"{source} cannot be exported to ONNX: the dynamo exporter failed (")
    assert "and the TorchScript exporter failed (" in message
    assert "Make forward exportable" in message
    assert written(source.parent) == []


# --- TorchScript and ExportedProgram files outside any project ------------------------------------

def test_a_torchscript_file_outside_a_project_converts_with_its_input_shape(tmp_path):
    import torch

    source = tmp_path / "classifier.torchscript"
    quietly(torch.jit.save, quietly(torch.jit.trace, tiny_model(), torch.zeros(2, 1, 8, 8)), source)
    events = []
    report = convert({"model": str(source), "input_shape": "1,1,8,8", "verify_samples": 6}, events)

    assert report.outputs == [str(tmp_path / "classifier.onnx")]
    assert report.figures["exporter"] == "torchscript"
    assert report.figures["max_abs_diff"] <= 1e-4
    assert report.warnings == []
    assert onnx_input_shape(tmp_path / "classifier.onnx") == ["batch", 1, 8, 8]
    assert [row[1] for row in report.table("Verification").rows] == [6, 1]
    assert "6 seeded random inputs" in logged(events)


def test_every_output_is_named_and_verified_and_verification_can_be_skipped(tmp_path):
    import torch

    class TwoHeads(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = tiny_model()

        def forward(self, images):
            logits = self.body(images)
            return logits, logits.softmax(dim=1)

    source = tmp_path / "two-heads.pt"
    quietly(torch.jit.save, quietly(torch.jit.trace, TwoHeads().eval(), torch.zeros(2, 1, 8, 8)),
            source)
    report = convert({"model": str(source), "input_shape": "1,1,8,8", "verify_samples": 4})

    import onnx

    model = onnx.load(report.outputs[0])
    assert [i.name for i in model.graph.input] == ["images"]
    assert [o.name for o in model.graph.output] == ["output_0", "output_1"]
    assert [row[:3] for row in report.table("Verification").rows] == [
        ["output_0", 4, "(4, 3)"], ["output_1", 4, "(4, 3)"],
        ["output_0", 1, "(1, 3)"], ["output_1", 1, "(1, 3)"]]

    unverified = convert({"model": str(source), "input_shape": "1,1,8,8", "verify_samples": 0,
                          "output": str(tmp_path / "unverified.onnx")})
    assert unverified.figures["max_abs_diff"] is None
    assert unverified.tables == []
    assert unverified.warnings == ["Not verified (verify_samples is 0): nothing compared the "
                                   "ONNX model's outputs with PyTorch's"]


def test_a_torchscript_file_outside_a_project_needs_an_input_shape(tmp_path):
    import torch

    source = tmp_path / "classifier.pt"
    quietly(torch.jit.save, quietly(torch.jit.script, tiny_model()), source)
    with pytest.raises(ModelToolError) as caught:
        convert({"model": str(source)})
    assert str(caught.value) == (
        f"the input shape of {source} is unknown (it lies outside a project, so no dataset "
        "tells it); give it with --input-shape, batch first, e.g. --input-shape 1,3,224,224")
    assert written(tmp_path) == []


def test_an_input_shape_the_model_does_not_take_is_reported_before_exporting(tmp_path):
    import torch

    source = tmp_path / "classifier.pt"
    quietly(torch.jit.save, quietly(torch.jit.script, tiny_model()), source)
    with pytest.raises(ModelToolError) as caught:
        convert({"model": str(source), "input_shape": "1,3,8,8"})
    message = str(caught.value)
    # The shape as typed, not the batch of 2 the dynamic batch is traced at.
    assert message.startswith(f"{source} fails on an input of --input-shape 1,3,8,8 (")
    assert "give the shape it takes, batch first" in message
    assert written(tmp_path) == []


def test_an_exported_program_converts_with_its_own_example_inputs(tmp_path):
    import torch

    source = tmp_path / "classifier.pt2"
    program = quietly(torch.export.export, tiny_model(), (torch.randn(4, 1, 8, 8),),
                      dynamic_shapes=({0: torch.export.Dim("batch")},))
    quietly(torch.export.save, program, source)
    report = convert({"model": str(source), "verify_samples": 3})

    assert report.figures["exporter"] == "dynamo"
    assert report.figures["max_abs_diff"] <= 1e-4
    batch, *sample = onnx_input_shape(tmp_path / "classifier.onnx")
    assert isinstance(batch, str) and sample == [1, 8, 8]
    assert [row[1] for row in report.table("Verification").rows] == [3, 1]
    assert report.warnings == []


def test_an_exported_program_with_a_fixed_batch_keeps_it_and_says_so(tmp_path):
    import torch

    source = tmp_path / "classifier.pt2"
    quietly(torch.export.save,
            quietly(torch.export.export, tiny_model(), (torch.randn(3, 1, 8, 8),)), source)
    report = convert({"model": str(source), "verify_samples": 7})

    assert onnx_input_shape(tmp_path / "classifier.onnx") == [3, 1, 8, 8]
    assert report.warnings == [
        "classifier.pt2 was exported with a fixed batch of 3, so the ONNX model takes batches "
        "of exactly that size; for a dynamic batch, export the program with dynamic_shapes "
        "holding a torch.export.Dim for the batch"]
    assert [row[1:3] for row in report.table("Verification").rows] == [[3, "(3, 3)"]]
    assert report.figures["max_abs_diff"] <= 1e-4


def test_each_exporter_refuses_the_format_it_cannot_read(tmp_path):
    import torch

    scripted = tmp_path / "scripted.pt"
    quietly(torch.jit.save, quietly(torch.jit.script, tiny_model()), scripted)
    with pytest.raises(ModelToolError, match=r"scripted\.pt is TorchScript, which the dynamo "
                                             r"exporter cannot read .*use --exporter torchscript"):
        convert({"model": str(scripted), "input_shape": "1,1,8,8", "exporter": "dynamo"})
    program = tmp_path / "program.pt2"
    quietly(torch.export.save,
            quietly(torch.export.export, tiny_model(), (torch.randn(2, 1, 8, 8),)), program)
    with pytest.raises(ModelToolError, match=r"program\.pt2 is an ExportedProgram, which only "
                                             r"the dynamo exporter converts"):
        convert({"model": str(program), "exporter": "torchscript"})
    assert written(tmp_path) == []


# --- bad input ----------------------------------------------------------------------------------

def test_a_text_file_named_pt_is_not_a_model(digits_project):
    source = digits_project / "runs" / RUN_ID / "outputs" / "notes.pt"
    source.write_text("best epoch: 4\n")
    with pytest.raises(ModelToolError) as caught:
        convert({"model": str(source)})
    assert str(caught.value).startswith(f"{source} is not a model file: it is a text file")
    assert written(source.parent) == []


def test_a_truncated_checkpoint_says_to_save_it_again(digits_project):
    source = model_path(digits_project)
    source.write_bytes(source.read_bytes()[:20_000])
    with pytest.raises(ModelToolError) as caught:
        convert({"model": str(source)})
    assert str(caught.value) == (f"{source} is a damaged or truncated PyTorch file (its zip "
                                 "archive is incomplete); save or copy it again")
    assert written(source.parent) == []


def test_weights_of_another_model_do_not_match_the_factory(digits_project):
    import torch

    source = model_path(digits_project).with_name("other.pt")
    torch.save(tiny_model().state_dict(), source)
    with pytest.raises(ModelToolError) as caught:
        convert({"model": str(source)})
    message = str(caught.value)
    assert message.startswith(f"{source} does not match the model factory 'digits_net': missing:")
    assert "--model-factory" in message
    assert written(source.parent) == []


def test_an_unknown_factory_suggests_the_close_names(digits_project):
    with pytest.raises(ModelToolError) as caught:
        convert({"model": str(model_path(digits_project)), "model_factory": "digit_net"})
    message = str(caught.value)
    assert message.startswith(f"{model_path(digits_project)}: the project ")
    assert "has no model factory 'digit_net'. Did you mean 'digits_net'?" in message
    assert "Give --model-factory with one of its models (registered: digits_net)" in message
    assert written(model_path(digits_project).parent) == []


def test_weights_outside_a_project_need_the_projects_code(trained_digits_project, tmp_path):
    source = tmp_path / "model.pt"
    shutil.copy(model_path(trained_digits_project), source)
    with pytest.raises(ModelToolError) as caught:
        convert({"model": str(source)})
    assert str(caught.value).startswith(f"{source} holds only weights (a state_dict), and "
                                        "building the model needs its code")
    assert written(tmp_path) == []


def test_the_output_cannot_be_the_input(digits_project):
    source = model_path(digits_project)
    before = source.read_bytes()
    with pytest.raises(ModelToolError, match="is also the input; choose another output path"):
        convert({"model": str(source), "output": str(source)})
    assert source.read_bytes() == before
    assert written(source.parent) == []


def test_an_onnx_model_is_already_converted(digits_onnx, tmp_path):
    source = tmp_path / "digits.onnx"
    shutil.copy(digits_onnx, source)
    with pytest.raises(ModelToolError, match=r"digits\.onnx is already an ONNX model; Convert makes"):
        convert({"model": str(source)})


def test_a_model_too_big_for_one_onnx_file_is_refused_clearly(digits_project, monkeypatch):
    from workbench.modeltools.conversion import onnx_file as convert_module

    monkeypatch.setattr(convert_module, "ONE_FILE_LIMIT_BYTES", 100_000)
    with pytest.raises(ModelToolError) as caught:
        convert({"model": str(model_path(digits_project))})
    message = str(caught.value)
    assert message.startswith(f"{model_path(digits_project)} is too big for one ONNX file")
    assert "at most 2 GB (the protobuf limit)" in message
    assert written(model_path(digits_project).parent) == []


@pytest.mark.parametrize("shape, expected", [
    ("1,x,8,8", "--input-shape 1,x,8,8: 'x' is not a positive whole number; give"),
    ("1x1x8x8", r"--input-shape 1x1x8x8: '1x1x8x8' is not a positive whole number \(separate "
                r"the sizes with commas, not 'x'\)"),
    ("1,0,8", "--input-shape 1,0,8: '0' is not a positive whole number"),
    ("8", "--input-shape 8: give the batch and at least one more size"),
])
def test_a_malformed_input_shape_is_explained_before_anything_loads(digits_project, shape,
                                                                    expected):
    events = []
    with pytest.raises(ModelToolError, match=expected):
        convert({"model": str(model_path(digits_project)), "input_shape": shape}, events)
    assert events == []  # refused before the first stage, so before torch is imported


def test_opsets_outside_what_the_exporters_write_are_refused(digits_project):
    with pytest.raises(ModelToolError, match="--opset: 12 is below the minimum 13"):
        convert({"model": str(model_path(digits_project)), "opset": 12})
    with pytest.raises(ModelToolError, match="--opset: 22 is above the maximum 21"):
        convert({"model": str(model_path(digits_project)), "opset": 22})


def test_cancel_leaves_nothing_behind(digits_project):
    from workbench.modeltools.context import ToolContext

    context = ToolContext()

    def cancel_at_export(event):
        if event["event"] == "stage" and event["name"] == "Export":
            context.cancel()

    with pytest.raises(ToolCancelled):
        run_tool(ToolInvocation("convert", {"model": str(model_path(digits_project))}),
                 cancel_at_export, context)
    assert written(model_path(digits_project).parent) == []


def test_the_declaration_offers_convert_on_pytorch_files():
    from workbench.modeltools.registry import get_tool, tools_for

    spec = get_tool("convert")
    assert spec.run == "workbench.modeltools.convert:run_convert"
    assert spec.param("opset").default == 18
    assert spec.param("output").short == "o" and spec.param("output").is_output
    for suffix in (".pt", ".pth", ".ckpt", ".pt2"):
        assert spec in tools_for(suffix)
    assert spec not in tools_for(".onnx")


def test_verification_compares_with_nans_and_infinities_in_the_same_places():
    from workbench.modeltools.conversion.verification import differences as _differences

    reference = np.array([1.0, np.nan, np.inf, 2.0])
    assert _differences(reference, np.array([1.5, np.nan, np.inf, 2.0])).tolist() == [0.5, 0, 0, 0]
    assert _differences(reference, np.array([1.0, 0.0, np.inf, np.nan])).tolist() == [
        0, np.inf, 0, np.inf]


def test_known_harmless_exporter_messages_are_dropped_and_real_ones_kept(capfd):
    """torch.onnx warns once per process that torchvision's operators cannot be registered, and
    torch warns about its own deprecated tree specs: neither reaches the log. Other messages do,
    without torch's glog-style prefix."""
    import logging

    from workbench.modeltools.library_output import captured_output

    lines: list[str] = []
    registration = logging.getLogger("torch.onnx._internal.exporter._registration")
    console = logging.StreamHandler(sys.stderr)  # as torch's own handler writes its log
    registration.addHandler(console)
    try:
        with captured_output(lines.append):
            registration.warning("torchvision is not installed. Skipping torchvision::nms")
            registration.warning("an operator could not be registered")
            warnings.warn("`isinstance(treespec, LeafSpec)` is deprecated, use `isinstance("
                          "treespec, TreeSpec) and treespec.is_leaf()` instead.", FutureWarning)
            warnings.warn("this argument is deprecated", FutureWarning)
            print("W1130 12:06:37.369000 11246 torch/onnx/_internal/exporter/_core.py:1] a real "
                  "warning")
    finally:
        registration.removeHandler(console)
    text = "\n".join(lines)
    assert "torchvision" not in text and "LeafSpec" not in text
    assert "an operator could not be registered" in text
    assert "FutureWarning: this argument is deprecated" in text
    assert "torch/onnx/_internal/exporter/_core.py:1] a real warning" in text and "W1130" not in text
    terminal = capfd.readouterr()
    assert terminal.out == terminal.err == ""
    assert not registration.filters  # the filter is there only while exporting

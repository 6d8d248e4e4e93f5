"""Inspect: what an ONNX or PyTorch model file holds, and clear errors for files that are not
models."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.modeltools.conftest import model_path
from workbench.modeltools.context import ToolContext
from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.inspect import SPEC, run_inspect
from workbench.modeltools.report import ToolReport


def inspect(path: Path, **values) -> ToolReport:
    events = []
    report = run_inspect(SPEC.resolve({"model": str(path), **values}),
                         ToolContext(stages=SPEC.stages, on_event=events.append))
    assert [e["name"] for e in events if e["event"] == "stage"][0] == "Load"
    # The report travels to the window as JSON: only plain values in it.
    assert ToolReport.from_json(json.loads(json.dumps(report.to_json()))) == report
    return report


def known_onnx(path: Path) -> Path:
    """Conv(3→8, 3x3) → Relu → Conv(8→8, 3x3, group 2) → Flatten → Gemm(2048→10, transB) →
    MatMul(10→5) on 3x16x16 images with a free batch: 149,554 MACs, 21,052 parameters."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def weight(name, *shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["images", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], kernel_shape=[3, 3], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], group=2, name="conv2"),
        helper.make_node("Flatten", ["c2"], ["flat"], axis=1, name="flatten"),
        helper.make_node("Gemm", ["flat", "w3", "b3"], ["g"], transB=1, name="fc"),
        helper.make_node("MatMul", ["g", "w4"], ["logits"], name="head"),
    ]
    graph = helper.make_graph(
        nodes, "known", [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["N", 3, 16, 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 5])],
        [weight("w1", 8, 3, 3, 3), weight("b1", 8), weight("w2", 8, 4, 3, 3),
         weight("w3", 10, 2048), weight("b3", 10), weight("w4", 10, 5)])
    model = helper.make_model(graph, producer_name="known-maker", producer_version="1.0",
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    onnx.save(model, str(path))
    return path


def test_opsets_are_those_the_nodes_use_not_all_the_exporter_declared(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Gelu", ["x"], ["g"], domain="com.microsoft", name="gelu"),
             helper.make_node("Relu", ["g"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "declared", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1),
        helper.make_opsetid("ai.onnx.ml", 3), helper.make_opsetid("ai.onnx.training", 1),
        helper.make_opsetid("ai.onnx.preview.training", 1)])
    path = tmp_path / "declared.onnx"
    onnx.save(model, str(path))
    assert inspect(path).figures["opsets"] == "ai.onnx 18, com.microsoft 1"


def rows_of(report: ToolReport, title: str) -> list[list]:
    return report.table(title).rows


def test_a_known_onnx_model_gives_exact_parameters_macs_and_operators(tmp_path):
    path = known_onnx(tmp_path / "known.onnx")
    before = sorted(tmp_path.iterdir())
    report = inspect(path)
    figures = report.figures
    assert figures["format"] == "ONNX"
    assert figures["parameters"] == 216 + 8 + 288 + 20480 + 10 + 50
    assert figures["macs"] == 8 * 16 * 16 * 27 + 8 * 16 * 16 * 36 + 2048 * 10 + 10 * 5
    assert figures["nodes"] == 6
    # com.microsoft is declared, but no node uses it: it is not the model's.
    assert figures["opset"] == 17 and figures["opsets"] == "ai.onnx 17"
    assert figures["producer"] == "known-maker 1.0" and isinstance(figures["ir_version"], int)
    assert figures["size_bytes"] == path.stat().st_size and figures["file"] == str(path.resolve())
    assert rows_of(report, "Inputs") == [["images", "float32", "[N, 3, 16, 16]"]]
    assert rows_of(report, "Outputs") == [["logits", "float32", "[N, 5]"]]
    assert rows_of(report, "Operators") == [["Conv", 2], ["Flatten", 1], ["Gemm", 1], ["MatMul", 1], ["Relu", 1]]
    layers = rows_of(report, "Layers with most MACs")
    assert [row[:4] for row in layers] == [["conv2", "Conv", 73728, 288], ["conv1", "Conv", 55296, 224],
                                          ["fc", "Gemm", 20480, 20490], ["head", "MatMul", 50, 50]]
    assert layers[0][4] == "[N, 8, 16, 16]"
    assert report.plots[0].categories[0] == "Conv" and report.plots[0].series[0]["values"][0] == 2.0
    assert report.outputs == [] and report.warnings == []
    assert sorted(tmp_path.iterdir()) == before   # inspect writes nothing
    assert len(rows_of(inspect(path, top=2), "Layers with most MACs")) == 2


def test_parameters_are_weights_not_shape_constants_scales_or_statistics(tmp_path):
    """Conv → BatchNormalization (not folded) → Clip(0, 6) → Reshape (an int64 shape) → Gemm →
    Mul by a scalar: the parameters are the convolution's weight and bias, the batch norm's
    scale and shift and the Gemm's weight and bias, as PyTorch counts them."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def tensor(name, array):
        return numpy_helper.from_array(np.asarray(array), name)

    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], name="conv"),
        helper.make_node("BatchNormalization", ["c", "scale", "shift", "mean", "var"], ["n"],
                         name="norm"),
        helper.make_node("Clip", ["n", "low", "high"], ["r"], name="relu6"),
        helper.make_node("Reshape", ["r", "shape"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fw", "fb"], ["g"], transB=1, name="fc"),
        helper.make_node("Mul", ["g", "half"], ["y"], name="scale_output"),
    ]
    initializers = [
        tensor("w", np.ones((4, 1, 3, 3), np.float32)), tensor("b", np.zeros(4, np.float32)),
        tensor("scale", np.ones(4, np.float32)), tensor("shift", np.zeros(4, np.float32)),
        tensor("mean", np.zeros(4, np.float32)), tensor("var", np.ones(4, np.float32)),
        tensor("low", np.float32(0)), tensor("high", np.float32(6)),
        tensor("shape", np.array([-1, 144], np.int64)),
        tensor("fw", np.ones((3, 144), np.float32)), tensor("fb", np.zeros(3, np.float32)),
        tensor("half", np.float32(0.5)),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])], initializers)
    path = tmp_path / "constants.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    report = inspect(path)
    assert report.figures["parameters"] == 36 + 4 + 4 + 4 + 432 + 3
    # Only the layers that multiply: no rows for the batch norm, the reshape or the scaling.
    assert [row[:4] for row in rows_of(report, "Layers with most MACs")] == [
        ["conv", "Conv", 4 * 6 * 6 * 9, 40], ["fc", "Gemm", 432, 435]]


def test_a_transposed_convolution_counts_its_input_elements(tmp_path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], name="up")], "up",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.zeros((4, 2, 3, 3), np.float32), "w")])
    path = tmp_path / "up.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    report = inspect(path)
    assert report.figures["macs"] == 4 * 5 * 5 * 2 * 3 * 3
    assert rows_of(report, "Outputs") == [["y", "float32", "[1, 2, 11, 11]"]]


def test_the_digits_onnx_model_shows_its_interface_and_heaviest_layers(digits_onnx):
    import onnx
    from onnx import numpy_helper

    report = inspect(digits_onnx)
    model = onnx.load(str(digits_onnx))
    (name, dtype, shape), = rows_of(report, "Inputs")
    assert name == "images" and dtype == "float32" and shape.endswith(", 1, 8, 8]")
    assert shape[1:].split(",")[0] not in ("1", "?")   # the free batch dimension keeps its name
    (name, dtype, shape), = rows_of(report, "Outputs")
    assert name == "logits" and shape.endswith(", 10]")
    # The float weights and biases; not the int64 shape of the Reshape before the classifier.
    arrays = [numpy_helper.to_array(i) for i in model.graph.initializer]
    assert any(a.dtype == np.int64 for a in arrays)
    assert report.figures["parameters"] == sum(a.size for a in arrays if a.dtype.kind == "f")
    # What PyTorch counts, with the three batch norms (224 scales and shifts) folded into the
    # convolutions before them (112 biases), as the exporter does.
    assert report.figures["parameters"] == 40_506 - 224 + 112
    operators = dict((op, n) for op, n in rows_of(report, "Operators"))
    assert operators["Conv"] == 3 and sum(operators.values()) == report.figures["nodes"] == len(model.graph.node)
    counts = [n for _, n in rows_of(report, "Operators")]
    assert counts == sorted(counts, reverse=True)
    layers = rows_of(report, "Layers with most MACs")
    assert [row[2] for row in layers] == sorted((row[2] for row in layers), reverse=True)
    assert [row[1] for row in layers] == ["Conv", "Conv", "Gemm", "Conv", "Gemm"]  # no 0-MAC rows
    # Convolutions 16→32 on 8x8 and 32→64 on 4x4 tie at 294,912 MACs; more weights rank first.
    assert [row[1:3] for row in layers[:2]] == [["Conv", 64 * 4 * 4 * 32 * 9], ["Conv", 32 * 8 * 8 * 16 * 9]]
    assert report.figures["macs"] == 16 * 64 * 9 + 32 * 64 * 144 + 64 * 16 * 288 + 256 * 64 + 64 * 10


def test_a_state_dict_lists_its_tensors_and_counts_parameters_as_torch_does(trained_digits_project):
    import torch

    from workbench.modeltools.project_code import ProjectCode

    path = model_path(trained_digits_project)
    state = torch.load(path, weights_only=True)
    code = ProjectCode(trained_digits_project)
    net = code.build_model("digits_net", code.hparams(), path)
    report = inspect(path)
    assert report.figures["format"] == "PyTorch state_dict"
    # Parameters as PyTorch counts them; the batch norms' running statistics are buffers.
    assert report.figures["parameters"] == sum(p.numel() for p in net.parameters()) == 40_506
    assert report.figures["buffers"] == sum(b.numel() for b in net.buffers()) == 227
    assert report.figures["tensors"] == len(state)
    rows = rows_of(report, "Tensors")
    assert [r[0] for r in rows] == list(state)
    first = next(iter(state))
    assert rows[0] == [first, "[" + ", ".join(map(str, state[first].shape)) + "]", "float32",
                       "parameter", state[first].numel()]
    kinds = {r[0]: r[3] for r in rows}
    assert kinds["features.0.1.running_var"] == kinds["features.0.1.num_batches_tracked"] == "buffer"
    assert kinds["features.0.1.weight"] == kinds["features.0.1.bias"] == "parameter"
    heaviest = rows_of(report, "Layers with most parameters")[0]
    assert heaviest[1] == max(sum(p.numel() for p in module.parameters(recurse=False))
                              for module in net.modules())


def test_a_training_checkpoint_counts_only_the_model(tmp_path, trained_digits_project):
    import torch

    state = torch.load(model_path(trained_digits_project), weights_only=True)
    path = tmp_path / "last.pth"
    torch.save({"model": state, "epoch": 3, "optimizer": {"lr": 0.01, "momentum": torch.zeros(5)}}, path)
    report = inspect(path)
    assert report.figures["format"] == "PyTorch checkpoint (model)"
    assert report.figures["checkpoint_keys"] == "epoch, optimizer"
    assert report.figures["parameters"] + report.figures["buffers"] == sum(t.numel() for t in state.values())
    assert report.figures["parameters"] == 40_506


class TinyNet:
    """Built inside the tests (torch is imported lazily)."""

    @staticmethod
    def make():
        import torch

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
                self.norm = torch.nn.BatchNorm2d(4)
                self.fc = torch.nn.Linear(4 * 8 * 8, 10)

            def forward(self, x):
                return self.fc(torch.relu(self.norm(self.conv(x))).flatten(1))

        torch.manual_seed(0)
        return Net().eval()


def test_a_torchscript_archive_shows_operators_and_tensors(tmp_path):
    import torch

    net = TinyNet.make()
    path = tmp_path / "scripted.pt"
    torch.jit.save(torch.jit.trace(net, torch.zeros(1, 1, 8, 8)), str(path))
    report = inspect(path)
    assert report.figures["format"] == "TorchScript"
    assert report.figures["parameters"] == sum(p.numel() for p in net.parameters())
    assert report.figures["buffers"] == sum(b.numel() for b in net.buffers())
    operators = dict(map(tuple, rows_of(report, "Operators")))
    assert operators.get("aten::_convolution", operators.get("aten::conv2d")) == 1
    assert len(rows_of(report, "Inputs")) == 1


def test_an_exported_program_is_read_from_its_description(tmp_path):
    import torch

    net = TinyNet.make()
    path = tmp_path / "net.pt2"
    program = torch.export.export(net, (torch.zeros(2, 1, 8, 8),),
                                  dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    torch.export.save(program, str(path))
    report = inspect(path)
    assert report.figures["format"] == "torch.export program"
    assert report.figures["parameters"] == sum(p.numel() for p in net.parameters())
    assert report.figures["buffers"] == sum(b.numel() for b in net.buffers())
    (name, dtype, shape), = rows_of(report, "Inputs")
    assert name == "x" and dtype == "float32" and shape.endswith(", 1, 8, 8]") and not shape.startswith("[2,")
    operators = dict(map(tuple, rows_of(report, "Operators")))
    assert operators["aten.conv2d"] == 1 and operators["aten.linear"] == 1
    assert rows_of(report, "Outputs")[0][2].endswith(", 10]")


# --- files that are not (whole) models --------------------------------------------------------


def test_a_text_file_named_onnx_is_reported_as_not_onnx(tmp_path):
    path = tmp_path / "notes.onnx"
    path.write_text("these are notes, not a model\n" * 10)
    with pytest.raises(ModelToolError, match=r"notes\.onnx is not a model file: it is a text file"):
        inspect(path)


def test_an_empty_onnx_file_was_not_saved_completely(tmp_path):
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    with pytest.raises(ModelToolError, match=r"empty\.onnx is empty \(0 bytes\), so it was not saved"):
        inspect(path)


def test_a_truncated_onnx_model_is_named_and_called_truncated(digits_onnx, tmp_path):
    data = digits_onnx.read_bytes()
    path = tmp_path / "copied-half.onnx"
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(ModelToolError, match=r"copied-half\.onnx.*truncated"):
        inspect(path)


def test_a_truncated_state_dict_is_named(trained_digits_project, tmp_path):
    data = model_path(trained_digits_project).read_bytes()
    path = tmp_path / "cut.pt"
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(ModelToolError, match=r"cut\.pt is a damaged or truncated PyTorch file"):
        inspect(path)


class Payload:
    """Unpickling this would create the marker file."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_a_pickled_object_is_refused_without_running_its_code(tmp_path):
    import torch

    marker = tmp_path / "code-ran"
    path = tmp_path / "whole-model.pt"
    torch.save({"model": Payload(marker)}, path)
    with pytest.raises(ModelToolError, match=r"whole-model\.pt holds a whole pickled Python object"
                                             r".*state_dict"):
        inspect(path)
    assert not marker.exists()


def test_a_pt2_that_is_not_an_archive_is_named(tmp_path):
    path = tmp_path / "program.pt2"
    path.write_bytes(b"\x00" * 64)
    with pytest.raises(ModelToolError, match=r"program\.pt2 is not a model file"):
        inspect(path)


def flatbuffer() -> bytes:
    """The smallest file laid out as a FlatBuffer (root table at 8, its vtable at 4)."""
    import struct

    return struct.pack("<IHHi", 8, 4, 4, 4) + b"\x00" * 52


def test_other_formats_point_to_their_own_tools(tmp_path):
    path = tmp_path / "digits.mnn"
    path.write_bytes(flatbuffer())
    with pytest.raises(ModelToolError, match=r"digits\.mnn: inspect reads \.onnx, \.pt, \.pth and \.pt2"):
        inspect(path)
    assert ".mnn" not in SPEC.applies_to


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(ModelToolError, match=r"gone\.onnx does not exist"):
        inspect(tmp_path / "gone.onnx")


def test_a_model_with_external_weights_is_inspected_without_loading_them(tmp_path):
    import onnx

    source = known_onnx(tmp_path / "source.onnx")
    model = onnx.load(str(source))
    target = tmp_path / "split" / "split.onnx"
    target.parent.mkdir()
    onnx.save(model, str(target), save_as_external_data=True, location="split.onnx.data",
              size_threshold=0)
    report = inspect(target)
    assert report.figures["parameters"] == 21052
    assert report.figures["size_bytes"] == target.stat().st_size + (target.parent / "split.onnx.data").stat().st_size
    shutil.rmtree(target.parent)


def test_inspect_is_a_registered_tool_that_runs_by_name(tmp_path):
    from workbench.modeltools.params import ToolInvocation
    from workbench.modeltools.registry import get_tool, tools_for
    from workbench.modeltools.running import run_tool

    assert get_tool("inspect") == SPEC
    assert SPEC in tools_for(".onnx") and SPEC in tools_for(".pt2")
    events = []
    report = run_tool(ToolInvocation("inspect", {"model": str(known_onnx(tmp_path / "known.onnx"))}),
                      events.append)
    assert report.figures["macs"] == 149554
    assert [e["index"] for e in events if e["event"] == "stage"] == [0, 1, 2]

"""What the MNN plugin's tests build on: running the tool in this process, and small ONNX models
made to show one behaviour each (an operator MNN lacks, a fixed batch, a QDQ convolution, a
fully connected model), and models quantized by Workbench's Quantize tool."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def mnn_spec():
    from workbench.modeltools.registry import get_tool

    return get_tool("mnn")


def convert(model: Path, context=None, on_stage: dict | None = None, **values):
    """The tool run in this process; returns (report, log lines). ``on_stage`` maps a stage name
    to a function called when the tool enters it."""
    from workbench.modeltools.context import ToolContext

    spec = mnn_spec()
    lines: list[str] = []
    context = context or ToolContext(stages=spec.stages)

    def on_event(event):
        if event["event"] == "log":
            lines.append(event["text"])
        elif event["event"] == "stage" and event["name"] in (on_stage or {}):
            on_stage[event["name"]]()

    context.on_event = on_event
    report = spec.load_runner()(spec.resolve({"model": model, **values}), context)
    return report, lines


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.suffix in (".mnn", ".partial"))


def tiny_onnx(path: Path, op: str, domain: str = "", name: str = "odd_one") -> Path:
    """A one-node ONNX model x (1, 4) -> op -> y (1, 4)."""
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node(op, ["x"], ["y"], name=name, domain=domain)
    graph = helper.make_graph([node], "tiny",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    onnx.save(helper.make_model(graph, opset_imports=opsets), str(path))
    return path


def fixed_batch_onnx(path: Path) -> Path:
    """x (1, 4, 2, 2) -> Reshape to the constant (1, 16) -> MatMul -> y (1, 3): the batch is baked
    into the graph, as in models exported without a dynamic batch axis."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    weights = numpy_helper.from_array(rng.standard_normal((16, 3)).astype(np.float32), "w")
    shape = numpy_helper.from_array(np.array([1, 16], dtype=np.int64), "shape")
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["flat"]),
         helper.make_node("MatMul", ["flat", "w"], ["y"])], "fixed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])], [weights, shape])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def qdq_conv_onnx(path: Path) -> Path:
    """x (1, 3, 8, 8) -> QuantizeLinear/DequantizeLinear -> Conv with int8 weights through a
    DequantizeLinear -> QuantizeLinear/DequantizeLinear -> y: MNN 3.6.1 converts it into a file
    that crashes MNN as it loads."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def constant(value, name):
        return numpy_helper.from_array(np.asarray(value), name)

    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"]),
             helper.make_node("Conv", ["xd", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("QuantizeLinear", ["c", "s2", "z"], ["cq"]),
             helper.make_node("DequantizeLinear", ["cq", "s2", "z"], ["y"])]
    initializers = [constant(np.float32(0.05), "s"), constant(np.float32(0.1), "s2"),
                    constant(np.uint8(128), "z"),
                    constant(rng.integers(-127, 127, (8, 3, 3, 3)).astype(np.int8), "wq"),
                    constant(np.float32(0.01), "ws"), constant(np.int8(0), "wz"),
                    constant(rng.standard_normal(8).astype(np.float32), "b")]
    graph = helper.make_graph(
        nodes, "qdq_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])], initializers)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def mlp_onnx(path: Path) -> Path:
    """x (N, 1, 8, 8) -> Flatten -> Gemm (64 -> 32) -> Relu -> Gemm (32 -> 10): fully connected
    layers only, batch free."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(2)

    def weights(shape, name):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32), name)

    graph = helper.make_graph(
        [helper.make_node("Flatten", ["x"], ["flat"]),
         helper.make_node("Gemm", ["flat", "w1", "b1"], ["h"], transB=1),
         helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], transB=1)], "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])],
        [weights((32, 64), "w1"), weights((32,), "b1"), weights((10, 32), "w2"),
         weights((10,), "b2")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def quantize(model: Path, data: Path, mode: str, output: Path, **values) -> Path:
    """``model`` quantized by Workbench's Quantize tool (as ``workbench model quantize`` does);
    ``values`` are more of its parameters."""
    from workbench.modeltools.params import ToolInvocation
    from workbench.modeltools.running import run_tool

    run_tool(ToolInvocation("quantize", {
        "model": str(model), "data": str(data), "mode": mode, "output": str(output),
        "calibration_samples": 32, "samples": 32, "layer_report": False, "repeats": 0,
        **values}))
    return output

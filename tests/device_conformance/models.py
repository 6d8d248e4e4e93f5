"""The ONNX model the conformance tests push and run: y = relu(x @ W + b), twice = y + y, with x
float32 [batch, 4]; and its numpy reference."""

from __future__ import annotations

import numpy as np

WEIGHTS = np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0 - 0.4


def reference(x: np.ndarray, bias: np.ndarray) -> np.ndarray:
    return np.maximum(x @ WEIGHTS + bias, 0.0)


def tiny_onnx(bias=(0.1, -0.2, 0.3)) -> bytes:
    """The model's ONNX bytes (opset 13); another ``bias`` gives another file."""
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["xw"]),
         helper.make_node("Add", ["xw", "b"], ["pre"]),
         helper.make_node("Relu", ["pre"], ["y"]),
         helper.make_node("Add", ["y", "y"], ["twice"])],
        "conformance",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("twice", TensorProto.FLOAT, ["batch", 3])],
        initializer=[numpy_helper.from_array(WEIGHTS, "W"),
                     numpy_helper.from_array(np.asarray(bias, np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()

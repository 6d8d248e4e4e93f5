"""The per-layer error table, as MNN's quantization debug mode prints it: every node output of the
float model next to the same tensor in the quantized model, on the same few samples.

Both models run with graph optimizations off and every compared tensor exposed as an output, so
the quantized model is simulated in float (quantize, dequantize, float operator); the int8
kernels compute the same values up to rounding. A tensor of the quantized model is taken after
its QuantizeLinear/DequantizeLinear pair, as the next layer sees it. Node names are those of the
model that was quantized, so they can be passed to ``exclude_nodes``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from workbench.modeltools.quantization.model_file import QDQ_OPS

DEQUANTIZED_SUFFIX = "_DequantizeLinear_Output"
# Nodes a quantizer or converter puts between an operator and the tensor name it kept.
PASS_THROUGH_OPS = (*QDQ_OPS, "Cast")
INTEGER_OPS = ("QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger", "QGemm",
               "QLinearAdd", "QLinearMul")
FLOAT_TYPES = (1, 10)  # TensorProto.FLOAT, FLOAT16

COLUMNS = ["node", "op type", "precision", "output", "cosine distance", "added distance",
           "max abs diff"]


@dataclass
class LayerError:
    """One node output compared. ``added_distance`` is the cosine distance of this output minus
    the largest of its inputs': the error the node itself adds. ``order`` is its place in the
    graph."""

    node: str
    op_type: str
    precision: str | None
    tensor: str
    cosine_distance: float
    added_distance: float
    max_abs_diff: float
    order: int

    def row(self) -> list:
        return [self.node, self.op_type, self.precision, self.tensor,
                _significant(self.cosine_distance), _significant(self.added_distance),
                _significant(self.max_abs_diff)]


def _significant(value: float) -> float:
    return float(f"{value:.4g}") + 0.0  # + 0.0 turns -0.0 into 0.0


@dataclass
class _Pair:
    tensor: str          # name in the float model
    quantized: str       # the tensor compared with it in the quantized model
    node: str            # the node the user would exclude
    op_type: str
    precision: str | None
    inputs: list[str]    # float inputs of that node, as names in the float model
    order: int
    dot: float = 0.0
    norm_a: float = 0.0
    norm_b: float = 0.0
    max_diff: float = 0.0


def compare_layers(reference_path: Path, quantized_path: Path, x: np.ndarray, batch: int,
                   check_cancelled: Callable[[], None] = lambda: None,
                   on_progress: Callable[[float], None] = lambda fraction: None) -> list[LayerError]:
    """The error of every comparable node output, worst first (by the error the node adds,
    then by its total distance). ``on_progress`` hears the fraction done: building the two
    sessions, then each batch."""
    import onnx

    reference = onnx.load(str(reference_path))
    quantized = onnx.load(str(quantized_path))
    reference_types = _tensor_types(reference)
    quantized_types = _tensor_types(quantized)
    pairs = _match(reference, quantized, reference_types, quantized_types)
    if not pairs:
        return []
    on_progress(0.1)
    run_reference = _session(_exposing(reference, [p.tensor for p in pairs], reference_types))
    run_quantized = _session(_exposing(quantized, [p.quantized for p in pairs], quantized_types))
    on_progress(0.3)
    input_name = _input_name(reference)
    quantized_input = _input_name(quantized)
    for start in range(0, len(x), batch):
        check_cancelled()
        chunk = np.ascontiguousarray(x[start:start + batch], dtype=np.float32)
        a_values = run_reference([p.tensor for p in pairs], {input_name: chunk})
        b_values = run_quantized([p.quantized for p in pairs], {quantized_input: chunk})
        for pair, a, b in zip(pairs, a_values, b_values):
            if a.size != b.size:
                continue
            a64, b64 = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
            pair.dot += float(a64 @ b64)
            pair.norm_a += float(a64 @ a64)
            pair.norm_b += float(b64 @ b64)
            if a64.size:
                pair.max_diff = max(pair.max_diff, float(np.max(np.abs(a64 - b64))))
        # The rest (the report, writing the model) is quick but not nothing: 95 % at most.
        on_progress(0.3 + 0.65 * min(1.0, (start + batch) / max(1, len(x))))
    distance = {p.tensor: _cosine_distance(p) for p in pairs}
    errors = []
    for pair in pairs:
        inputs = [distance[name] for name in pair.inputs if name in distance]
        own = distance[pair.tensor]
        errors.append(LayerError(pair.node, pair.op_type, pair.precision, pair.tensor, own,
                                 own - max(inputs, default=0.0), pair.max_diff, pair.order))
    errors.sort(key=lambda e: (-e.added_distance, -e.cosine_distance, e.order))
    return errors


def _cosine_distance(pair: _Pair) -> float:
    norm = float(np.sqrt(pair.norm_a) * np.sqrt(pair.norm_b))
    if norm == 0.0:
        return 0.0 if pair.norm_a == pair.norm_b else 1.0
    return float(max(0.0, 1.0 - pair.dot / norm))


def _match(reference, quantized, reference_types: dict, quantized_types: dict) -> list[_Pair]:
    """Which tensor of ``quantized`` stands for each float node output of ``reference``."""
    quantized_producer = {out: node for node in quantized.graph.node for out in node.output}
    quantized_nodes = {node.name: node for node in quantized.graph.node if node.name}
    quantized_initializers = {i.name for i in quantized.graph.initializer}
    available = set(quantized_producer) | {i.name for i in quantized.graph.input}
    reference_nodes = {node.name: node for node in reference.graph.node if node.name}
    reference_initializers = {i.name for i in reference.graph.initializer}

    def source_node(tensor: str):
        node = quantized_producer.get(tensor)
        while node is not None and node.op_type in PASS_THROUGH_OPS and node.input:
            node = quantized_producer.get(node.input[0])
        return node

    def precision(name: str) -> str | None:
        node = quantized_nodes.get(name)
        if node is None:
            # Dynamic quantization replaces a node by integer operators named after it, and a
            # Gemm by a MatMul (quantized or not) and an Add.
            for derived in (f"{name}_quant", f"{name}_MatMul_quant"):
                if derived in quantized_nodes and quantized_nodes[derived].op_type in INTEGER_OPS:
                    return "int8"
            return "float" if f"{name}_MatMul" in quantized_nodes else None
        if node.op_type in INTEGER_OPS:
            return "int8"
        data = [i for i in node.input if i and i not in quantized_initializers]
        float_weights = [i for i in node.input if i in quantized_initializers
                         and quantized_types.get(i) in FLOAT_TYPES]
        if any(quantized_types.get(i) == 10 for i in data) or any(
                quantized_types.get(i) == 10 for i in float_weights):
            return "fp16"
        dequantized = any(quantized_producer.get(i) is not None
                          and quantized_producer[i].op_type == "DequantizeLinear" for i in data)
        return "int8" if dequantized and not float_weights else "float"

    pairs: list[_Pair] = []
    input_name = _input_name(reference)
    if quantized_types.get(input_name + DEQUANTIZED_SUFFIX) in FLOAT_TYPES:
        pairs.append(_Pair(input_name, input_name + DEQUANTIZED_SUFFIX, input_name, "(input)",
                           "int8", [], -1))
    for order, node in enumerate(reference.graph.node):
        for tensor in node.output:
            if not tensor or reference_types.get(tensor) not in FLOAT_TYPES:
                continue
            if tensor + DEQUANTIZED_SUFFIX in available:
                counterpart = tensor + DEQUANTIZED_SUFFIX
            elif tensor in available:
                counterpart = tensor
            else:
                continue  # fused away (a ReLU folded into the convolution before it)
            if quantized_types.get(counterpart) not in FLOAT_TYPES:
                continue
            source = source_node(counterpart)
            known = source is not None and source.name in reference_nodes
            name = source.name if known else node.name
            owner = reference_nodes.get(name, node) if name != node.name else node
            op_type = owner.op_type if name == node.name else f"{owner.op_type}+{node.op_type}"
            inputs = [i for i in owner.input if i and i not in reference_initializers]
            pairs.append(_Pair(tensor, counterpart, name or tensor, op_type, precision(name),
                               inputs, order))
    return pairs


def _tensor_types(model) -> dict[str, int]:
    """Element type of every tensor whose type onnx can infer."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:
        inferred = model
    types = {}
    for info in (*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output):
        if info.type.HasField("tensor_type"):
            types[info.name] = info.type.tensor_type.elem_type
    for init in model.graph.initializer:
        types[init.name] = init.data_type
    return types


def _exposing(model, names: list[str], types: dict[str, int]):
    """A copy of ``model`` whose outputs include ``names``."""
    import onnx
    from onnx import helper

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    present = {o.name for o in copy.graph.output}
    for name in dict.fromkeys(names):
        if name not in present:
            copy.graph.output.append(helper.make_tensor_value_info(name, types[name], None))
    return copy


def _session(model) -> Callable[[list[str], dict], list[np.ndarray]]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run


def _input_name(model) -> str:
    initializers = {i.name for i in model.graph.initializer}
    return next(i.name for i in model.graph.input if i.name not in initializers)

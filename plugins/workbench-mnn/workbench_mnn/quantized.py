"""Quantized ONNX models, and which of them MNN's converter takes.

Measured with MNN 3.6.1 on small models (onnxruntime's quantizer, as Workbench's Quantize tool
runs it, and hand-made graphs):

- static int8 in QDQ form (Quantize's ``model.int8.onnx``), per channel or per tensor, uint8 or
  int8 activations: the converter aborts the process (``std::out_of_range``) where a
  DequantizeLinear gives a Gemm its weights or bias. Where a DequantizeLinear feeds a Conv or
  ConvTranspose (weights or activations) it writes a model that computes garbage (values of
  1e36 and more), outputs the wrong shape, cannot run, or crashes the runtime (SIGSEGV, SIGBUS)
  as it loads.
- QDQ pairs elsewhere (on a MatMul's weights or activations, on a Gemm's activations only,
  before an activation function): converted; the outputs differ from onnxruntime's by about
  what the quantization itself changes.
- dynamic int8 (DynamicQuantizeLinear + MatMulInteger, Quantize's ``--mode dynamic`` on a model
  of fully connected layers): converted, outputs equal to onnxruntime's; with convolutions the
  converter stops cleanly at ConvInteger ("These Op Not Support").
- QOperator form (QLinearConv, QGemm): the converter stops cleanly ("These Op Not Support").

So the tool refuses, before converting, only the first kind, and adds ``ADVICE`` to the error of
a quantized model MNN stops on.
"""

from __future__ import annotations

from pathlib import Path

from workbench.modeltools import ModelToolError

ADVICE = ("MNN converts float models: convert the fp32 model and use --weight-quant-bits 8 or "
          "--fp16, or quantize with MNN's own tools")

# Operators only quantized models hold (standard ONNX and onnxruntime's com.microsoft ones).
QUANTIZED_OPERATORS = frozenset({
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "ConvInteger",
    "MatMulInteger", "QLinearConv", "QLinearMatMul", "QGemm", "QLinearAdd", "QLinearMul",
    "QLinearConcat", "QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax",
    "QLinearAveragePool", "QLinearGlobalAveragePool", "QLinearReduceMean", "QAttention",
    "DynamicQuantizeMatMul", "MatMulIntegerToFloat", "DynamicQuantizeLSTM",
})

# For each operator, the inputs MNN 3.6.1 mishandles when a DequantizeLinear produces them.
BROKEN_DEQUANTIZED_INPUTS = {"Conv": (0, 1, 2), "ConvTranspose": (0, 1, 2), "Gemm": (1, 2)}


def is_quantized_operator(op_type: str) -> bool:
    return op_type in QUANTIZED_OPERATORS or op_type.startswith("QLinear")


def is_quantized(graph) -> bool:
    """Whether the ONNX model ``graph`` holds any quantization operator."""
    return any(is_quantized_operator(node.op_type) for node in graph.graph.node)


def dequantized_weights(graph) -> list[tuple[str, str]]:
    """(operator, node name) of each node that takes an input MNN mishandles straight from a
    DequantizeLinear (see BROKEN_DEQUANTIZED_INPUTS), in graph order."""
    dequantized = {output for node in graph.graph.node if node.op_type == "DequantizeLinear"
                   for output in node.output}
    found = []
    for index, node in enumerate(graph.graph.node):
        inputs = BROKEN_DEQUANTIZED_INPUTS.get(node.op_type, ())
        if any(i < len(node.input) and node.input[i] in dequantized for i in inputs):
            found.append((node.op_type, node.name or f"#{index}"))
    return found


def refuse_what_mnn_breaks(graph, source: Path, version: str) -> None:
    """ModelToolError, before any conversion, for a QDQ model MNN ``version`` cannot convert
    (aborting, or writing a model that is wrong); nothing for any other model."""
    found = dequantized_weights(graph)
    if not found:
        return
    raise ModelToolError(
        f"{source} is a quantized (int8 QDQ) model: DequantizeLinear nodes feed "
        f"{_describe(found)}. MNN {version} cannot convert that (its converter aborts, or "
        f"writes a model that computes wrong outputs or crashes). {ADVICE}")


def _describe(found: list[tuple[str, str]], shown: int = 3) -> str:
    """"the Conv nodes 'a', 'b' and the Gemm node 'c'", at most ``shown`` names per operator."""
    by_operator: dict[str, list[str]] = {}
    for op, name in found:
        by_operator.setdefault(op, []).append(name)
    parts = []
    for op, names in by_operator.items():
        listed = ", ".join(repr(n) for n in names[:shown])
        more = f" and {len(names) - shown} more" if len(names) > shown else ""
        parts.append(f"the {op} node{'s' if len(names) > 1 else ''} {listed}{more}")
    return " and ".join(parts)

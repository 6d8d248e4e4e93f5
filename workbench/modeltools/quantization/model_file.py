"""The ONNX model the Quantize tool starts from: read and checked with a message a user can act
on, prepared for quantization (shape inference and graph clean-up), and the node names
``exclude_nodes`` may name."""

from __future__ import annotations

import difflib
from pathlib import Path

from workbench.modeltools import library_output
from workbench.modeltools.errors import ModelToolError

# The most characters of a library's error a message quotes.
ERROR_QUOTE_LIMIT = 300
# Nodes that only move quantization parameters around; never worth excluding.
QDQ_OPS = ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear")


def first_line(exc: BaseException) -> str:
    """An onnxruntime or onnx error in the line a message quotes (they can be pages long)."""
    return library_output.first_line(exc, ERROR_QUOTE_LIMIT)


def read_onnx(path: Path):
    """The checked ModelProto of ``path``; ModelToolError for a file that is not ONNX (the
    message every tool gives, see ``model_files.expect``), a damaged one, or a model that does
    not take exactly one input. Messages name ``path`` as given."""
    import onnx

    from workbench.modeltools import model_files

    model_files.expect(path, (model_files.ONNX,), "Quantize")
    try:
        model = onnx.load(str(path))
    except Exception:
        raise ModelToolError(model_files.damaged(path, model_files.ONNX)) from None
    try:
        onnx.checker.check_model(model)
    except Exception as exc:
        raise ModelToolError(
            f"{path} is not a complete ONNX model ({first_line(exc)}); it may be truncated: "
            "export or convert it again") from None
    if not model.graph.node:
        raise ModelToolError(f"{path} has no operators; export the model again")
    initializers = {i.name for i in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in initializers]
    if len(inputs) != 1:
        raise ModelToolError(
            f"{path} takes {len(inputs)} inputs ({', '.join(inputs)}); the Quantize tool feeds "
            "models with one input. Export the model with a single input tensor")
    return model


def prepare(source: Path, target: Path, log) -> Path:
    """``source`` after onnxruntime's pre-processing for quantization (symbolic shape inference
    and basic graph optimizations) written to ``target``; without symbolic shape inference if
    that fails on this model."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    try:
        quant_pre_process(str(source), str(target))
        return target
    except Exception as exc:
        log(f"full pre-processing failed ({first_line(exc)}); retrying without symbolic "
            "shape inference")
    try:
        quant_pre_process(str(source), str(target), skip_symbolic_shape=True)
    except Exception as exc:
        raise ModelToolError(
            f"{source} could not be prepared for quantization ({first_line(exc)}); check that "
            "onnxruntime runs it, or export it again with a recent opset") from None
    return target


def check_exclusions(names: list[str], model, model_path: Path) -> list[str]:
    """``names`` unchanged when each is a node of ``model``; ModelToolError naming the unknown
    one and the closest node names otherwise."""
    known = [node.name for node in model.graph.node if node.name and node.op_type not in QDQ_OPS]
    known_set = set(known)
    for name in names:
        if name in known_set:
            continue
        close = difflib.get_close_matches(name, known, n=5, cutoff=0.5)
        if close:
            hint = "close names: " + ", ".join(close)
        else:
            shown = ", ".join(known[:8]) + (f" and {len(known) - 8} more" if len(known) > 8 else "")
            hint = "its nodes are " + shown
        raise ModelToolError(
            f"{model_path} has no node named {name!r} to exclude ({hint}). Node names are those "
            "of the per-layer error table of a quantize run")
    return list(names)

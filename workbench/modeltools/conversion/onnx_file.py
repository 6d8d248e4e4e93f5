"""The ONNX file a conversion writes: whether the model fits in one file, simplifying it, checking
it, saving it, and why its parameter count may differ from the PyTorch model's."""

from __future__ import annotations

import contextlib
from pathlib import Path

from workbench.modeltools.context import ToolContext
from workbench.modeltools.conversion.source import Source
from workbench.modeltools.errors import ModelToolError, ToolCancelled
from workbench.modeltools.library_output import captured_output, first_line
from workbench.modeltools.report import ToolReport

# One ONNX file is one protobuf message, and protobuf refuses messages of 2 GB or more.
ONE_FILE_LIMIT_BYTES = 2 * 1024 ** 3


def weight_bytes(source: Source) -> int:
    """The bytes the PyTorch model's weights (and a program's constants) take."""
    tensors = []
    if source.program is not None:
        tensors = list(source.program.state_dict.values()) + list(source.program.constants.values())
    else:
        with contextlib.suppress(Exception):
            tensors = list(source.module.state_dict().values())
    return sum(t.numel() * t.element_size() for t in tensors if hasattr(t, "element_size"))


def check_one_file(size: int, path: Path) -> None:
    """ModelToolError naming ``path`` when ``size`` bytes cannot go into one ONNX file."""
    if size >= ONE_FILE_LIMIT_BYTES:
        raise ModelToolError(
            f"{path} is too big for one ONNX file: it holds {size / 1024 ** 3:.1f} GB of weights, "
            "and an ONNX file stores at most 2 GB (the protobuf limit) unless its weights go to "
            "a separate data file, which Convert does not write. Make the model smaller (fewer "
            "or half-precision weights) before converting it")


def simplify(model, context: ToolContext, report: ToolReport):
    """The model simplified by onnxslim; the model as it is (and a warning) when onnxslim fails."""
    before = len(model.graph.node)
    try:
        import onnxslim

        with captured_output(context.log):
            simplified = onnxslim.slim(model)
    except ToolCancelled:
        raise
    except Exception as exc:
        report.warnings.append(f"onnxslim could not simplify the model ({first_line(exc)}); "
                               "the file holds the graph as exported")
        return model
    if simplified is None:
        report.warnings.append("onnxslim could not simplify the model; the file holds the graph "
                               "as exported")
        return model
    context.log(f"onnxslim: {before} → {len(simplified.graph.node)} nodes")
    return simplified


def check(model, target: Path, simplified: bool) -> None:
    """ModelToolError unless the ONNX checker and strict shape inference accept the model."""
    import onnx

    try:
        onnx.checker.check_model(model, full_check=True)
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except Exception as exc:
        also = ", or --no-simplify" if simplified else ""
        raise ModelToolError(
            f"the ONNX model converted for {target} is not valid ({first_line(exc)[:300]}); "
            f"nothing was written. Try --exporter torchscript, another --opset{also}") from None


def save(model, temporary: Path, target: Path) -> None:
    """Write the model to ``temporary`` (``target`` is the name a failure gives)."""
    import onnx

    try:
        onnx.save(model, str(temporary))
    except (OSError, ValueError) as exc:
        raise ModelToolError(f"cannot write {target}: {first_line(exc)}") from None


def torch_parameter_count(source: Source) -> int | None:
    """The PyTorch model's parameters (its buffers, such as batch norms' running statistics,
    are not parameters); None when the module cannot say."""
    try:
        return sum(p.numel() for p in source.module.parameters())
    except Exception:
        return None


def parameters_note(source: Source, model, parameters: int, torch_parameters: int) -> str:
    """Why the ONNX model's parameter count differs from the PyTorch model's."""
    norms = [m for m in _modules(source.module) if "BatchNorm" in _module_type(m)]
    norm_parameters = sum(p.numel() for m in norms for p in m.parameters(recurse=False))
    kept = any(node.op_type == "BatchNormalization" for node in model.graph.node)
    if norms and not kept:
        why = (f"the export folded its {len(norms)} batch-norm layer"
               f"{'s' if len(norms) != 1 else ''} ({norm_parameters:,} parameters) into the "
               "layers before them, as runtimes do; the outputs stay the same (max_abs_diff)")
    else:
        why = ("the export folded constant computations into the weights, or left out weights "
               "the outputs do not depend on")
    return (f"the ONNX model holds {parameters:,} parameters and the PyTorch model "
            f"{torch_parameters:,}: {why}")


def _modules(module) -> list:
    try:
        return list(module.modules())
    except Exception:
        return []


def _module_type(module) -> str:
    # A TorchScript module keeps the name of the class it was made from.
    return str(getattr(module, "original_name", "") or type(module).__name__)

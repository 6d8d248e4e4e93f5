"""The two exporters of torch.onnx and the choice between them: the dynamo exporter
(``torch.onnx.export(..., dynamo=True)``) goes first; where it cannot capture the model, the
TorchScript-based exporter takes over and the report says why."""

from __future__ import annotations

import contextlib
import importlib
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.modeltools import model_files
from workbench.modeltools.context import ToolContext
from workbench.modeltools.conversion.source import Source
from workbench.modeltools.errors import ModelToolError, ToolCancelled
from workbench.modeltools.library_output import captured_output, clean_text, first_line
from workbench.modeltools.report import ToolReport

EXPORTERS = ("auto", "dynamo", "torchscript")
# The TorchScript exporter writes opsets up to 20 (the dynamo exporter's operators are written
# for opset 18 and converted from there, which fails for some models).
TORCHSCRIPT_MAX_OPSET = 20
# Progress through the Export stage: the dynamo exporter's imports, then its steps as it prints
# them (step: fraction when it begins, when it is done), measured on a small CNN.
DYNAMO_IMPORTED = 0.25
DYNAMO_STEPS = {"Obtain model graph": (0.3, 0.7), "Run decompositions": (0.7, 0.85),
                "Translate the graph into ONNX": (0.85, 0.9),
                "Optimize the ONNX graph": (0.9, 0.95)}


@dataclass
class Exported:
    """What an exporter made: the ONNX model, which exporter made it, and its opset."""

    model: Any                         # onnx.ModelProto
    exporter: str
    opset: int


def export(source: Source, example: tuple, input_names: list[str], output_names: list[str],
           values: dict, context: ToolContext, report: ToolReport) -> Exported:
    """``source`` as an ONNX model, by the exporter ``values["exporter"]`` asks for: auto tries
    the dynamo exporter first and falls back to the TorchScript one, saying why in the report."""
    choice, opset, dynamic = values["exporter"], values["opset"], values["dynamic_batch"]
    path = source.path
    if source.kind == model_files.TORCHSCRIPT:
        if choice == "dynamo":
            raise ModelToolError(f"{path} is TorchScript, which the dynamo exporter cannot read "
                                 "(torch.export captures Python code); use --exporter torchscript "
                                 "or auto")
        if choice == "auto":
            context.log("TorchScript input: the TorchScript exporter converts it (torch.export "
                        "cannot capture a TorchScript module)")
        return _run_torchscript_exporter(source, example, input_names, output_names, opset,
                                         dynamic, context, report)
    if source.program is not None and choice == "torchscript":
        raise ModelToolError(f"{path} is an ExportedProgram, which only the dynamo exporter "
                             "converts; use --exporter dynamo or auto")
    if choice == "torchscript":
        return _run_torchscript_exporter(source, example, input_names, output_names, opset,
                                         dynamic, context, report)
    try:
        exported = _run_dynamo_exporter(source, example, input_names, output_names, opset,
                                        dynamic, context, report)
    except _ExportFailed as failure:
        if choice == "dynamo" or source.program is not None:
            raise ModelToolError(
                f"{path} cannot be exported to ONNX: the dynamo exporter failed "
                f"({failure.reason}). {_EXPORTABLE_ADVICE}") from None
        reason = f"the dynamo exporter failed ({failure.reason})"
    else:
        if exported.opset == opset:
            return exported
        if choice == "dynamo" or source.program is not None:
            raise ModelToolError(
                f"the dynamo exporter cannot write opset {opset} for {path} (it wrote opset "
                f"{exported.opset}); use --opset {exported.opset}"
                f"{'' if source.program is not None else ' or --exporter torchscript'}")
        reason = (f"the dynamo exporter cannot write opset {opset} for this model (it wrote "
                  f"{exported.opset})")
    context.log(f"Falling back to the TorchScript exporter: {reason}")
    try:
        exported = _run_torchscript_exporter(source, example, input_names, output_names, opset,
                                             dynamic, context, report)
    except ModelToolError as exc:
        raise ModelToolError(
            f"{path} cannot be exported to ONNX: {reason}, and {exc}. "
            f"{_EXPORTABLE_ADVICE}") from None
    report.warnings.insert(0, f"Exported with the TorchScript exporter because {reason}.")
    return exported


_EXPORTABLE_ADVICE = (
    "Make forward exportable: no Python branches on tensor values (use torch.where or "
    "torch.cond), no TorchScript submodules, only tensor inputs and outputs; the log has the "
    "exporters' full messages")


class _ExportFailed(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _run_dynamo_exporter(source: Source, example: tuple, input_names: list[str],
                         output_names: list[str], opset: int, dynamic: bool,
                         context: ToolContext, report: ToolReport) -> Exported:
    import torch

    model, args = source.module, example
    shapes = _dynamic_shapes(example) if dynamic else None
    if source.program is not None:
        model, args, shapes = _program_to_export(source, example, dynamic, context, report)
    try:
        with captured_output(context.log):
            # The exporter imports it on its first use, which takes seconds of this stage.
            importlib.import_module("onnxscript")
        _progress(context, DYNAMO_IMPORTED)
        context.check_cancelled()
        with captured_output(context.log, lambda line: _dynamo_step(line, context)):
            program = torch.onnx.export(
                model, args, dynamo=True, opset_version=opset, input_names=input_names,
                output_names=output_names, dynamic_shapes=shapes, external_data=False)
            onnx_model = program.model_proto
    except ToolCancelled:
        raise
    except Exception as exc:
        context.log(f"The dynamo exporter failed:\n{_excerpt(exc)}")
        raise _ExportFailed(_reason(exc)) from None
    return Exported(onnx_model, "dynamo", _opset_of(onnx_model))


def _dynamo_step(line: str, context: ToolContext) -> None:
    """Move the progress bar as the dynamo exporter reports its steps."""
    if not line.startswith("[torch.onnx]"):
        return
    for step, (begun, done) in DYNAMO_STEPS.items():
        if step in line:
            _progress(context, done if line.rstrip().endswith("✅") else begun)
            return


def _progress(context: ToolContext, fraction: float) -> None:
    # Called from inside an exporter, which would wrap a ToolCancelled in an error of its own:
    # the cancel is noticed at the next check after the export instead.
    with contextlib.suppress(ToolCancelled):
        context.progress(fraction)


def _program_to_export(source: Source, example: tuple, dynamic: bool, context: ToolContext,
                       report: ToolReport):
    """The ExportedProgram to hand the exporter, with the batch asked for where it can be had:
    a dynamic batch can be fixed by exporting the program's module again; a fixed one is baked
    into the program's graph."""
    import torch

    program = source.program
    program_dynamic = _program_has_dynamic_batch(program)
    batch = tuple(example[0].shape)[0] if example and example[0].dim() else "?"
    if dynamic and not program_dynamic:
        report.warnings.append(
            f"{source.path.name} was exported with a fixed batch of {batch}, so the ONNX model "
            "takes batches of exactly that size; for a dynamic batch, export the program with "
            "dynamic_shapes holding a torch.export.Dim for the batch")
    elif program_dynamic and not dynamic:
        try:
            with captured_output(context.log):
                return torch.export.export(source.module, example), (), None
        except ToolCancelled:
            raise
        except Exception as exc:
            report.warnings.append(
                f"{source.path.name} could not be fixed at batch {batch} ({_reason(exc)}); "
                "the ONNX model keeps the program's dynamic batch")
    return program, (), None


def _dynamic_shapes(example: tuple) -> tuple:
    import torch

    batch = torch.export.Dim("batch")
    return tuple({0: batch} if t.dim() else None for t in example)


def _program_has_dynamic_batch(program) -> bool:
    for node in program.graph.nodes:
        if node.op == "placeholder" and node.name in program.graph_signature.user_inputs:
            value = node.meta.get("val")
            shape = getattr(value, "shape", ())
            return bool(shape) and not isinstance(shape[0], int)
    return False


def _run_torchscript_exporter(source: Source, example: tuple, input_names: list[str],
                              output_names: list[str], opset: int, dynamic: bool,
                              context: ToolContext, report: ToolReport) -> Exported:
    import onnx
    import torch

    used = min(opset, TORCHSCRIPT_MAX_OPSET)
    if used != opset:
        report.warnings.append(f"The TorchScript exporter writes opsets up to "
                               f"{TORCHSCRIPT_MAX_OPSET}; the file uses opset {used}, not {opset}.")
    axes = None
    if dynamic:
        axes = {name: {0: "batch"} for name in [*input_names, *output_names]}
    buffer = io.BytesIO()
    try:
        with captured_output(context.log) as chatter:
            torch.onnx.export(source.module, example, buffer, dynamo=False, opset_version=used,
                              input_names=input_names, output_names=output_names,
                              dynamic_axes=axes, do_constant_folding=True)
        onnx_model = onnx.load_from_string(buffer.getvalue())
    except ToolCancelled:
        raise
    except Exception as exc:
        context.log(f"The TorchScript exporter failed:\n{_excerpt(exc)}")
        raise ModelToolError(f"the TorchScript exporter failed ({_reason(exc)})") from None
    traced = [w for w in chatter.warnings if w.category.__name__ == "TracerWarning"
              and "Python boolean" in str(w.message)]
    if traced:
        report.warnings.append(
            "The TorchScript exporter treated a Python value computed from tensors as a constant "
            f"({Path(traced[0].filename).name}:{traced[0].lineno}): the ONNX model always takes "
            "the branch the example input took, whatever its input. The verification shows "
            "whether that matters on the samples")
    return Exported(onnx_model, "torchscript", _opset_of(onnx_model))


def _opset_of(model) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    return 0


def _reason(exc: BaseException) -> str:
    """What went wrong in an exporter, in one line: the innermost error and, when the message
    names it, the line of the model's code that caused it."""
    chain = [exc]
    while chain[-1].__cause__ is not None and len(chain) < 10:
        chain.append(chain[-1].__cause__)
    inner = chain[-1]
    text = clean_text(str(inner))
    for candidate in chain:
        match = re.search(r'File "([^"]+)", line (\d+), in (\w+)\n\s+(.+)', clean_text(str(candidate)))
        if match:
            break
    if "data-dependent" in text:
        summary = ("forward branches on a value computed from its input (Python control flow "
                   "on tensor values)")
    else:
        summary = f"{type(inner).__name__}: {first_line(text)}"
    if match:
        summary += f" at {Path(match.group(1)).name}:{match.group(2)} `{match.group(4).strip()}`"
    return summary[:600]


def _excerpt(exc: BaseException, count: int = 15) -> str:
    """The part of an exporter's error message that says what went wrong (the dynamo exporter
    wraps it in general advice)."""
    text = clean_text(str(exc))
    if "## Exception summary" in text:
        text = text.split("## Exception summary", 1)[1].split("The error above occurred", 1)[0]
    lines = [line for line in text.splitlines() if line.strip()]
    more = f"\n… ({len(lines) - count} more lines)" if len(lines) > count else ""
    return "\n".join(lines[:count]) + more

"""Convert: a PyTorch model to one ONNX file, checked, and verified against PyTorch.

The model comes as weights (a state_dict or a checkpoint) built by one of the project's model
factories, as TorchScript (``torch.jit.save``), or as an ExportedProgram (``torch.export.save``,
``.pt2``); ``model_files.identify`` tells which from the file's content. The dynamo exporter
(``torch.onnx.export(..., dynamo=True)``) goes first; where it cannot capture the model, the
TorchScript-based exporter takes over and the report says why. Both PyTorch and onnxruntime then
run the same inputs (the project's samples, else seeded random ones), at batch 1 and at batch N
when the batch is dynamic, and the report gives the largest difference per output.

torch, onnx, onnxruntime and onnxslim are imported inside the functions: this module is imported
to list the tools, and that must stay cheap.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import inspect
import io
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from workbench.modeltools import model_files
from workbench.modeltools.context import ToolContext
from workbench.modeltools.errors import ModelToolError, ToolCancelled
from workbench.modeltools.outputs import NEVER_OVERWRITES
from workbench.modeltools.params import Param, ToolSpec, parse_input_shape, shape_text
from workbench.modeltools.report import ReportTable, ToolReport

EXPORTERS = ("auto", "dynamo", "torchscript")
DEFAULT_OPSET = 18
# The dynamo exporter's operators are written for opset 18 and converted down from there, which
# fails for some models; the TorchScript exporter writes opsets up to 20.
DYNAMO_NATIVE_OPSET = 18
TORCHSCRIPT_MAX_OPSET = 20
# One ONNX file is one protobuf message, and protobuf refuses messages of 2 GB or more.
ONE_FILE_LIMIT_BYTES = 2 * 1024 ** 3
# Outputs that differ by more than this (relative to the largest output, at least 1) get a warning.
DIFF_WARNING = 1e-3
# The most lines of the exporters' chatter passed on to the log (which a terminal shows); a
# failing dynamo export prints whole graphs.
MAX_LOG_LINES = 40
# Progress through the Export stage: the dynamo exporter's imports, then its steps as it prints
# them (step: fraction when it begins, when it is done), measured on a small CNN.
DYNAMO_IMPORTED = 0.25
DYNAMO_STEPS = {"Obtain model graph": (0.3, 0.7), "Run decompositions": (0.7, 0.85),
                "Translate the graph into ONNX": (0.85, 0.9),
                "Optimize the ONNX graph": (0.9, 0.95)}

SUFFIXES = (".pt", ".pth", ".ckpt", ".pt2", ".ts", ".torchscript")

SPEC = ToolSpec(
    name="convert",
    title="Convert to ONNX",
    summary="Export a PyTorch model (weights with the project's model factory, TorchScript or an "
            "ExportedProgram .pt2) to one ONNX file, check it, and verify it gives PyTorch's "
            "outputs.",
    params=(
        Param("model", "path", "The PyTorch model: weights (state_dict or checkpoint) from a run "
              "of this project, a TorchScript file, or an ExportedProgram (.pt2).",
              required=True, positional=True, suffixes=SUFFIXES),
        Param("output", "path", "The ONNX file to write (default: beside the model, named "
              f"<stem>.onnx, e.g. runs/<id>/outputs/model.onnx; {NEVER_OVERWRITES}).",
              short="o", is_output=True, suffixes=(".onnx",)),
        Param("model_factory", "str", "For weights: the project's registered model that builds "
              "them (default: model_name of the hyper-parameters the model was trained with).",
              group="Model"),
        Param("input_shape", "strings", "The input's shape with the batch first, e.g. 1,3,224,224 "
              "(default: one sample of the project's dataset; a .pt2 has its example inputs).",
              group="Model"),
        Param("opset", "int", "The ONNX operator set to write.", default=DEFAULT_OPSET,
              minimum=13, maximum=21, group="Export"),
        Param("dynamic_batch", "bool", "Let the ONNX model take any batch size (otherwise the "
              "batch of the input shape is fixed).", default=True, group="Export"),
        Param("exporter", "choice", "auto: the dynamo exporter, falling back to the TorchScript "
              "exporter when it fails; or force one of them.", default="auto", choices=EXPORTERS,
              group="Export", advanced=True),
        Param("simplify", "bool", "Simplify the graph with onnxslim (fold constants, fuse "
              "operators).", default=True, group="Export"),
        Param("verify_samples", "int", "Samples run through both PyTorch and onnxruntime to "
              "compare their outputs (0: do not verify).", default=8, minimum=0, maximum=4096,
              group="Verify"),
    ),
    run="workbench.modeltools.convert:run_convert",
    stages=("Load model", "Load data", "Export", "Simplify", "Check", "Verify", "Save"),
    applies_to=SUFFIXES,
)


@dataclass
class Source:
    """The PyTorch model to convert, loaded."""

    path: Path
    kind: str
    module: Any                        # what runs: an nn.Module, a ScriptModule, ep.module()
    program: Any = None                # the ExportedProgram of a .pt2
    example: tuple | None = None       # a .pt2's example inputs
    code: Any = None                   # ProjectCode when the model lies in a project
    hparams: Any = None


@dataclass
class Exported:
    model: Any                         # onnx.ModelProto
    exporter: str
    opset: int


def run_convert(values: dict, context: ToolContext) -> ToolReport:
    """Convert ``values["model"]`` to ONNX; the report's first output is the ONNX file."""
    from workbench.modeltools.outputs import atomic_output, check_output, default_output, file_size

    started = time.perf_counter()
    # Checked before anything slow (torch alone takes seconds to import): a typing mistake
    # costs no waiting.
    typed_shape = parse_input_shape(values["input_shape"])
    given = Path(values["model"]).expanduser()
    report = ToolReport("convert", f"Convert {given.name} to ONNX")

    context.stage("Load model")
    identified = model_files.identify(given)
    if not identified.is_pytorch:
        raise ModelToolError(
            f"{given} is already {identified.description}; Convert makes ONNX from PyTorch "
            "models (weights, TorchScript or .pt2)")
    source_path = given.resolve()
    explicit = values["output"]
    target = Path(explicit) if explicit else default_output(source_path, "", ".onnx")
    target = check_output(target, [source_path])
    context.progress(0.1)
    source = _load(identified, values, context, report)
    context.progress(1.0)

    context.stage("Load data")
    shape, example, data = _inputs(source, values, typed_shape, context, report)
    context.progress(0.7)
    _check_input_count(source, len(example))
    outputs, output_names = _dry_run(source, example, typed_shape)
    input_names = _input_names(source, len(example), output_names)
    _check_one_file(_weight_bytes(source), given)
    context.log(f"Inputs: {_named_shapes(input_names, example)}; "
                f"outputs: {_named_shapes(output_names, outputs)}")
    context.progress(1.0)

    context.stage("Export")
    exported = _export(source, example, input_names, output_names, values, context, report)
    context.log(f"Exported with the {exported.exporter} exporter at opset {exported.opset}: "
                f"{len(exported.model.graph.node)} nodes")
    _check_one_file(exported.model.ByteSize(), given)
    context.progress(1.0)

    context.stage("Simplify")
    model = exported.model
    if values["simplify"]:
        model = _simplify(model, context, report)
    else:
        context.log("Not simplified (simplify is off)")
    context.progress(1.0)

    context.stage("Check")
    _check(model, target, values["simplify"])
    context.log("The ONNX checker and shape inference accept the model")
    context.progress(1.0)

    context.stage("Verify")
    with atomic_output(target, overwrite=bool(explicit)) as temporary:
        _save(model, temporary, target)
        diff, rows = _verify(source, temporary, target, example, shape, data, output_names,
                             values, context, report)
        context.stage("Save")
    context.progress(0.5)

    from workbench.modeltools.inspect import onnx_parameter_count

    parameters = onnx_parameter_count(model)
    torch_parameters = _torch_parameter_count(source)
    report.figures = {
        "exporter": exported.exporter,
        "opset": exported.opset,
        "max_abs_diff": diff,
        "source_size_bytes": file_size(source_path),
        "onnx_size_bytes": file_size(target),
        "nodes": len(model.graph.node),
        "parameters": parameters,
    }
    if torch_parameters is not None and torch_parameters != parameters:
        report.figures["torch_parameters"] = torch_parameters
        report.figures["parameters_note"] = _parameters_note(source, model, parameters,
                                                             torch_parameters)
    report.figures["seconds"] = round(time.perf_counter() - started, 3)
    if rows:
        report.tables.append(ReportTable(
            "Verification", ["output", "batch", "shape", "max abs diff", "mean abs diff"], rows))
    report.outputs = [str(target)]
    context.log(f"Wrote {target}")
    context.progress(1.0)
    return report


# --- Load ----------------------------------------------------------------------------------------

def _load(identified, values: dict, context: ToolContext, report: ToolReport) -> Source:
    path = identified.path
    code, hparams = _project(path, identified.kind, context)
    if identified.kind == model_files.STATE_DICT:
        return _load_weights(path, values, code, hparams, context)
    if values["model_factory"]:
        report.warnings.append(f"model_factory {values['model_factory']!r} was not used: "
                               f"{path.name} is {identified.description}, which holds its own code")
    import torch

    if identified.kind == model_files.TORCHSCRIPT:
        try:
            with _captured(context):
                module = torch.jit.load(str(path), map_location="cpu")
        except Exception as exc:
            raise ModelToolError(f"{path} cannot be loaded as TorchScript ({_first_line(exc)}); "
                                 "save it again with torch.jit.save") from None
        module.eval()
        context.log(f"Loaded TorchScript {type(module).__name__} from {path.name}")
        return Source(path, identified.kind, module, code=code, hparams=hparams)
    try:
        with _captured(context):
            program = torch.export.load(str(path))
            module = program.module()
    except Exception as exc:
        raise ModelToolError(
            f"{path} cannot be loaded as an ExportedProgram ({_first_line(exc)}); save it again "
            "with torch.export.save, with the torch version Workbench uses") from None
    example = None
    if program.example_inputs is not None:
        args, kwargs = program.example_inputs
        if kwargs:
            raise ModelToolError(f"{path} takes keyword inputs ({', '.join(kwargs)}); Convert "
                                 "feeds positional inputs only: export the program with them")
        example = tuple(args)
    context.log(f"Loaded an ExportedProgram from {path.name}")
    return Source(path, identified.kind, module, program=program, example=example, code=code,
                  hparams=hparams)


def _project(path: Path, kind: str, context: ToolContext):
    """The project's code and the hyper-parameters ``path`` was trained with, or (None, None)
    outside a project. Weights cannot do without; TorchScript and .pt2 use it for samples."""
    if context.project is None:
        if kind == model_files.STATE_DICT:
            raise ModelToolError(
                f"{path} holds only weights (a state_dict), and building the model needs its "
                "code: convert it from inside its project (a folder with workbench.toml), or "
                "save the model as TorchScript (torch.jit.save) or an ExportedProgram "
                "(torch.export.save) and convert that")
        return None, None
    from workbench.modeltools.project_code import ProjectCode

    try:
        code = ProjectCode(context.project)
        return code, code.hparams(path)
    except ModelToolError as exc:
        if kind == model_files.STATE_DICT:
            raise
        context.log(f"The project's settings are not usable here ({exc}); going on without them")
        return None, None


def _load_weights(path: Path, values: dict, code, hparams, context: ToolContext) -> Source:
    factory = values["model_factory"] or hparams.get("model_name")
    settings = code.hparams_file_for(path)
    names = code.model_names()
    if not factory:
        raise ModelToolError(
            f"{path}: no model factory builds these weights: set model_name in "
            f"{settings or 'the hyper-parameters'} or give --model-factory "
            f"({_registered(names)})")
    if factory not in names:
        close = difflib.get_close_matches(factory, names, n=3, cutoff=0.5)
        hint = f" Did you mean {' or '.join(repr(n) for n in close)}?" if close else ""
        given = "" if values["model_factory"] else f" (model_name in {settings})"
        raise ModelToolError(
            f"{path}: the project {code.root} has no model factory {factory!r}{given}.{hint} "
            f"Give --model-factory with one of its models ({_registered(names)})")
    with _captured(context):
        module = code.build_model(factory, hparams, path)
    context.log(f"Built {factory!r} ({type(module).__name__}) with the weights of {path.name}"
                f"{f'; hyper-parameters from {settings}' if settings else ''}")
    return Source(path, model_files.STATE_DICT, module, code=code, hparams=hparams)


def _registered(names: list[str]) -> str:
    return f"registered: {', '.join(names)}" if names else "the project registers none"


# --- Inputs --------------------------------------------------------------------------------------

def _project_samples(source: Source, values: dict, context: ToolContext):
    """Up to verify_samples samples of the project's test split, or None (outside a project,
    for a model with several inputs, or when the dataset cannot load)."""
    if source.code is None or (source.example is not None and len(source.example) != 1):
        return None
    from workbench.modeltools.data import from_project

    wanted = max(values["verify_samples"], 2)
    try:
        data = from_project(source.code, "test", source.hparams, limit=wanted)
    except ModelToolError as exc:
        context.log(f"The project's dataset is not usable here ({exc})")
        return None
    context.log(f"{len(data)} samples of shape {_shape_text(data.x.shape[1:])} from {data.source}")
    return data


def _inputs(source: Source, values: dict, typed_shape: tuple[int, ...] | None,
            context: ToolContext, report: ToolReport):
    """The input shape (batch first), the example inputs the exporters trace, and the project's
    samples when they fit the model (else None).

    The shape is --input-shape's (``typed_shape``), else one project sample's (batch 1), else a
    .pt2's first example input's. A dynamic batch is traced at 2: torch.export treats a
    dimension of 1 as the constant 1, and tracing at 1 hides code that fixes the batch size."""
    import torch

    data = _project_samples(source, values, context)
    if source.example is not None:
        example = source.example
        shape = tuple(example[0].shape)
        if typed_shape is not None:
            report.warnings.append(f"input_shape was not used: {source.path.name} is an "
                                   "ExportedProgram, which has its own example inputs")
        if data is not None and (tuple(data.x.shape[1:]) != shape[1:]
                                 or example[0].dtype != torch.float32):
            context.log(f"The samples of {data.source} do not fit the program's example input "
                        f"{_shape_text(shape)}; verifying on random inputs")
            data = None
        return shape, example, data
    if typed_shape is not None:
        shape = typed_shape
        if data is not None and tuple(data.x.shape[1:]) != shape[1:]:
            context.log(f"The samples of {data.source} are {_shape_text(data.x.shape[1:])}, not "
                        f"{_shape_text(shape[1:])}; verifying on random inputs")
            data = None
    elif data is not None:
        shape = (1, *data.x.shape[1:])
    else:
        where = ("the project's dataset is not usable" if source.code is not None
                 else "it lies outside a project, so no dataset tells it")
        raise ModelToolError(
            f"the input shape of {source.path} is unknown ({where}); give it with "
            "--input-shape, batch first, e.g. --input-shape 1,3,224,224")
    batch = max(2, shape[0]) if values["dynamic_batch"] else shape[0]
    if data is not None:
        x = data.x[:batch] if len(data.x) >= batch else np.resize(data.x,
                                                                 (batch, *data.x.shape[1:]))
        example = (torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)),)
    else:
        generator = torch.Generator().manual_seed(0)
        example = (torch.randn((batch, *shape[1:]), generator=generator),)
    return shape, example, data


def _dry_run(source: Source, example: tuple, typed_shape: tuple[int, ...] | None = None):
    """Run the model once on the example: the outputs (tensors) and their names. A model that
    fails here gets a message about its input, not an exporter's stack; the input is named as
    the user typed it when it came from --input-shape (the example may hold a larger batch)."""
    import torch

    try:
        with torch.no_grad(), _torch_threads(1):
            result = source.module(*example)
    except ToolCancelled:
        raise
    except Exception as exc:
        if typed_shape is not None and source.example is None:
            raise ModelToolError(
                f"{source.path} fails on an input of --input-shape {shape_text(typed_shape)} "
                f"({_first_line(exc)}); give the shape it takes, batch first (Convert feeds "
                "float32 tensors; for other inputs save an ExportedProgram with example inputs)"
            ) from None
        raise ModelToolError(
            f"{source.path} fails on an input of shape {_shape_text(example[0].shape)} "
            f"({_first_line(exc)}); give the shape it takes with --input-shape (Convert feeds "
            "float32 tensors; for other inputs save an ExportedProgram with example inputs)"
        ) from None
    outputs = _flat_tensors(result)
    if not outputs:
        raise ModelToolError(f"{source.path}: forward returns no tensor, so there is nothing "
                             "to convert; return the model's output tensors")
    if isinstance(result, dict) and len(result) == len(outputs):
        names = [_identifier(str(k)) for k in result]
    elif len(outputs) == 1:
        names = ["output"]
    else:
        names = [f"output_{i}" for i in range(len(outputs))]
    return outputs, names


def _flat_tensors(result) -> list:
    import torch
    from torch.utils._pytree import tree_flatten

    return [leaf for leaf in tree_flatten(result)[0] if isinstance(leaf, torch.Tensor)]


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _check_input_count(source: Source, count: int) -> None:
    """ModelToolError when forward needs more inputs than Convert feeds it."""
    required = []
    with contextlib.suppress(AttributeError, TypeError, ValueError, RuntimeError):
        if source.kind == model_files.TORCHSCRIPT:
            required = [a.name for a in source.module.forward.schema.arguments[1:]
                        if not a.has_default_value()]
        elif source.program is None:
            parameters = inspect.signature(source.module.forward).parameters.values()
            required = [p.name for p in parameters
                        if p.default is p.empty and p.kind in _POSITIONAL]
    if len(required) > count:
        raise ModelToolError(
            f"{source.path}: forward takes {len(required)} inputs ({', '.join(required)}) and "
            "Convert feeds one; save an ExportedProgram with example inputs (torch.export.save) "
            "and convert that")


def _input_names(source: Source, count: int, output_names: list[str]) -> list[str]:
    """Keep the model's own names for its inputs (forward's parameters), else input / input_N."""
    names: list[str] = []
    with contextlib.suppress(AttributeError, TypeError, ValueError, RuntimeError):
        if source.program is not None:
            names = list(source.program.graph_signature.user_inputs)
        elif source.kind == model_files.TORCHSCRIPT:
            names = [a.name for a in source.module.forward.schema.arguments[1:]]
        else:
            names = [p.name for p in inspect.signature(source.module.forward).parameters.values()
                     if p.kind in _POSITIONAL]
    names = [_identifier(n) for n in names[:count]]
    if len(names) < count or len(set(names) | set(output_names)) < len(names) + len(output_names):
        names = ["input"] if count == 1 else [f"input_{i}" for i in range(count)]
    return names


def _identifier(text: str) -> str:
    return re.sub(r"\W", "_", text) or "output"


def _weight_bytes(source: Source) -> int:
    tensors = []
    if source.program is not None:
        tensors = list(source.program.state_dict.values()) + list(source.program.constants.values())
    else:
        with contextlib.suppress(Exception):
            tensors = list(source.module.state_dict().values())
    return sum(t.numel() * t.element_size() for t in tensors if hasattr(t, "element_size"))


def _check_one_file(size: int, path: Path) -> None:
    if size >= ONE_FILE_LIMIT_BYTES:
        raise ModelToolError(
            f"{path} is too big for one ONNX file: it holds {size / 1024 ** 3:.1f} GB of weights, "
            "and an ONNX file stores at most 2 GB (the protobuf limit) unless its weights go to "
            "a separate data file, which Convert does not write. Make the model smaller (fewer "
            "or half-precision weights) before converting it")


# --- Export --------------------------------------------------------------------------------------

def _export(source: Source, example: tuple, input_names: list[str], output_names: list[str],
            values: dict, context: ToolContext, report: ToolReport) -> Exported:
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
        with _captured(context):
            # The exporter imports it on its first use, which takes seconds of this stage.
            importlib.import_module("onnxscript")
        _progress(context, DYNAMO_IMPORTED)
        context.check_cancelled()
        with _captured(context, lambda line: _dynamo_step(line, context)):
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
            with _captured(context):
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
        with _captured(context) as chatter:
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
    text = _clean(str(inner))
    for candidate in chain:
        match = re.search(r'File "([^"]+)", line (\d+), in (\w+)\n\s+(.+)', _clean(str(candidate)))
        if match:
            break
    if "data-dependent" in text:
        summary = ("forward branches on a value computed from its input (Python control flow "
                   "on tensor values)")
    else:
        summary = f"{type(inner).__name__}: {_first_line(text)}"
    if match:
        summary += f" at {Path(match.group(1)).name}:{match.group(2)} `{match.group(4).strip()}`"
    return summary[:600]


# --- Simplify, check, save -----------------------------------------------------------------------

def _simplify(model, context: ToolContext, report: ToolReport):
    before = len(model.graph.node)
    try:
        import onnxslim

        with _captured(context):
            simplified = onnxslim.slim(model)
    except ToolCancelled:
        raise
    except Exception as exc:
        report.warnings.append(f"onnxslim could not simplify the model ({_first_line(exc)}); "
                               "the file holds the graph as exported")
        return model
    if simplified is None:
        report.warnings.append("onnxslim could not simplify the model; the file holds the graph "
                               "as exported")
        return model
    context.log(f"onnxslim: {before} → {len(simplified.graph.node)} nodes")
    return simplified


def _check(model, target: Path, simplified: bool) -> None:
    import onnx

    try:
        onnx.checker.check_model(model, full_check=True)
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except Exception as exc:
        also = ", or --no-simplify" if simplified else ""
        raise ModelToolError(
            f"the ONNX model converted for {target} is not valid ({_first_line(exc)[:300]}); "
            f"nothing was written. Try --exporter torchscript, another --opset{also}") from None


def _save(model, temporary: Path, target: Path) -> None:
    import onnx

    try:
        onnx.save(model, str(temporary))
    except (OSError, ValueError) as exc:
        raise ModelToolError(f"cannot write {target}: {_first_line(exc)}") from None


def _torch_parameter_count(source: Source) -> int | None:
    """The PyTorch model's parameters (its buffers, such as batch norms' running statistics,
    are not parameters); None when the module cannot say."""
    try:
        return sum(p.numel() for p in source.module.parameters())
    except Exception:
        return None


def _parameters_note(source: Source, model, parameters: int, torch_parameters: int) -> str:
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


# --- Verify --------------------------------------------------------------------------------------

def _verify(source: Source, onnx_path: Path, target: Path, example: tuple, shape, data,
            output_names: list[str], values: dict, context: ToolContext, report: ToolReport):
    """Run PyTorch and onnxruntime on the same inputs; (max abs diff, table rows)."""
    count = values["verify_samples"]
    if count == 0:
        report.warnings.append("Not verified (verify_samples is 0): nothing compared the ONNX "
                               "model's outputs with PyTorch's")
        return None, []
    run_onnx, fixed_batch = _onnx_runner(onnx_path, target, example)
    inputs, described = _verification_inputs(example, data, count, fixed_batch)
    total = len(inputs[0])
    if fixed_batch:
        batches = [fixed_batch]
    else:
        batches = [total, 1] if total > 1 else [1]
    context.log(f"Verifying on {described} at batch {' and '.join(str(b) for b in batches)}")
    rows, largest, scale = [], 0.0, 1.0
    with _torch_threads(1):
        for step, batch in enumerate(batches):
            batch_rows, batch_scale = _compare_at_batch(source, run_onnx, inputs, batch,
                                                        output_names, target, context)
            rows += batch_rows
            largest = max([largest] + [row[3] for row in batch_rows])
            scale = max(scale, batch_scale)
            context.progress((step + 1) / len(batches))
    context.log(f"Largest difference between PyTorch and onnxruntime: {largest:.3g}")
    if largest > DIFF_WARNING * scale:
        report.warnings.append(
            f"The ONNX model's outputs differ from PyTorch's by up to {largest:.3g}: it may not "
            "compute what the PyTorch model does (see the Verification table)")
    return largest, rows


def _compare_at_batch(source: Source, run_onnx, inputs: list[np.ndarray], batch: int,
                      output_names: list[str], target: Path, context: ToolContext):
    """Feed ``inputs`` ``batch`` samples at a time to both; a table row per output, and the
    largest output magnitude (what the differences are measured against)."""
    expected, produced = [], []
    for start in range(0, len(inputs[0]), batch):
        context.check_cancelled()
        chunk = [a[start:start + batch] for a in inputs]
        expected.append(_run_torch(source, chunk))
        try:
            produced.append(list(run_onnx(chunk)))
        except ModelToolError:
            raise
        except Exception as exc:
            raise ModelToolError(
                f"onnxruntime cannot run the converted model for {target} at batch {batch} "
                f"({_first_line(exc)[:300]}); nothing was written. The model's code may fix the "
                "batch size: try --no-dynamic-batch") from None
        if len(produced[-1]) != len(expected[-1]):
            raise ModelToolError(
                f"the converted model for {target} gives {len(produced[-1])} outputs where "
                f"PyTorch gives {len(expected[-1])}; nothing was written. Try --exporter "
                "torchscript")
    rows, scale = [], 1.0
    for index, name in enumerate(output_names):
        reference = _joined([e[index] for e in expected])
        result = _joined([p[index] for p in produced])
        if reference.shape != result.shape:
            raise ModelToolError(
                f"the converted model for {target} gives output {name!r} the shape "
                f"{_shape_text(result.shape)} where PyTorch gives {_shape_text(reference.shape)}; "
                "nothing was written. Try --exporter torchscript or --no-dynamic-batch")
        difference = _differences(reference, result)
        rows.append([name, batch, _shape_text(produced[0][index].shape),
                     float(difference.max(initial=0.0)),
                     float(difference.mean()) if difference.size else 0.0])
        finite = np.abs(reference[np.isfinite(reference)].astype(np.float64))
        scale = max(scale, float(finite.max(initial=0.0)))
    return rows, scale


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts[0].ndim else parts[0]


@contextlib.contextmanager
def _torch_threads(count: int):
    """Run PyTorch on ``count`` threads for a while. Verification feeds a few samples at a time,
    where a thread pool only waits for its threads (badly, on a busy machine)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _onnx_runner(onnx_path: Path, target: Path, example: tuple):
    """A function running a list of input arrays through onnxruntime, and the model's fixed
    batch (None when dynamic)."""
    from workbench.modeltools.runtimes import open_onnx

    session = open_onnx(onnx_path)
    if len(example) == 1 and str(example[0].dtype) == "torch.float32":
        return (lambda arrays: session.run(arrays[0])), session.fixed_batch
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    raw = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
    names = [i.name for i in raw.get_inputs()]

    def run(arrays):
        return raw.run(None, {n: np.ascontiguousarray(a) for n, a in zip(names, arrays)})

    return run, session.fixed_batch


def _verification_inputs(example: tuple, data, count: int, fixed_batch: int | None):
    """Arrays per model input, ``count`` samples (a multiple of a fixed batch), and what they
    are."""
    total = max(fixed_batch or 1, (count // (fixed_batch or 1)) * (fixed_batch or 1))
    if data is not None and len(example) == 1:
        x = data.x if len(data.x) >= total else np.resize(data.x, (total, *data.x.shape[1:]))
        described = f"{total} samples of {data.source}"
        return [np.ascontiguousarray(x[:total], dtype=np.float32)], described
    rng = np.random.default_rng(0)
    arrays = [_random_like(t.numpy(), total, rng) for t in example]
    return arrays, f"{total} seeded random inputs"


def _random_like(array: np.ndarray, total: int, rng) -> np.ndarray:
    shape = (total, *array.shape[1:]) if array.ndim else array.shape
    if array.ndim == 0:
        return array.copy()
    if np.issubdtype(array.dtype, np.floating):
        return rng.standard_normal(shape).astype(array.dtype)
    if array.dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    low, high = (int(array.min()), int(array.max())) if array.size else (0, 1)
    return rng.integers(low, high + 1, shape).astype(array.dtype)


def _run_torch(source: Source, arrays: list[np.ndarray]) -> list[np.ndarray]:
    import torch

    with torch.no_grad():
        result = source.module(*[torch.from_numpy(np.ascontiguousarray(a)) for a in arrays])
    return [t.detach().cpu().numpy() for t in _flat_tensors(result)]


def _differences(reference: np.ndarray, result: np.ndarray) -> np.ndarray:
    a = reference.astype(np.float64)
    b = result.astype(np.float64)
    with np.errstate(invalid="ignore"):
        difference = np.abs(a - b)
    both_nan = np.isnan(a) & np.isnan(b)
    same_inf = np.isinf(a) & (a == b)
    difference[both_nan | same_inf] = 0.0
    difference[np.isnan(difference)] = np.inf
    return difference


# --- The exporters' chatter ----------------------------------------------------------------------

@dataclass
class _Chatter:
    warnings: list = field(default_factory=list)


# What the exporters say that tells a user nothing, dropped where it is said. torch.onnx logs a
# warning for each torchvision operator it cannot register when torchvision is not installed
# (a model cannot use operators of a library that is not there); torch pickles its tree specs
# through a deprecated class of its own, and warns about it.
HARMLESS_LOG_MESSAGES = {
    "torch.onnx._internal.exporter._registration": ("torchvision is not installed",),
}
HARMLESS_WARNINGS = ((FutureWarning, r".*isinstance\(treespec, LeafSpec\)"),)


class _HarmlessMessages:
    """A logging filter dropping the records HARMLESS_LOG_MESSAGES names."""

    def __init__(self, fragments: tuple[str, ...]):
        self.fragments = fragments

    def filter(self, record) -> bool:
        message = record.getMessage()
        return not any(fragment in message for fragment in self.fragments)


@contextlib.contextmanager
def harmless_messages_dropped() -> Iterator[None]:
    """Drop the exporters' known harmless log records and warnings for a while (see
    HARMLESS_LOG_MESSAGES); every other message passes."""
    import logging
    import warnings

    filters = []
    for name, fragments in HARMLESS_LOG_MESSAGES.items():
        logger = logging.getLogger(name)
        dropping = _HarmlessMessages(fragments)
        logger.addFilter(dropping)
        filters.append((logger, dropping))
    try:
        with warnings.catch_warnings():
            for category, message in HARMLESS_WARNINGS:
                warnings.filterwarnings("ignore", message=message, category=category)
            yield
    finally:
        for logger, dropping in filters:
            logger.removeFilter(dropping)


class _Transcript(io.StringIO):
    """What Python code prints while captured; each complete line also goes to ``on_line``
    (which the dynamo exporter's step lines move the progress bar with)."""

    def __init__(self, on_line: Callable[[str], None] | None = None):
        super().__init__()
        self._on_line = on_line
        self._pending = ""

    def write(self, text: str) -> int:
        written = super().write(text)
        if self._on_line is not None:
            self._pending += text
            *lines, self._pending = self._pending.split("\n")
            for line in lines:
                self._on_line(line)
        return written


@contextlib.contextmanager
def _captured(context: ToolContext, on_line: Callable[[str], None] | None = None):
    """``captured_output`` for a tool run: the chatter goes to the context's log."""
    with captured_output(context.log, on_line) as chatter:
        yield chatter


@contextlib.contextmanager
def captured_output(log: Callable[[str], None], on_line: Callable[[str], None] | None = None):
    """Whatever the exporters print, log or warn inside goes to ``log``, not the terminal,
    short and without the messages known to be harmless (``harmless_messages_dropped``).

    Python's streams are swapped, so are the streams of logging handlers writing to them (torch
    and onnxscript log through their own handlers), and file descriptors 1 and 2 point at a
    temporary file for the time, for C++ code. ``on_line`` sees each line Python code prints,
    as it is printed. Whatever is emitted inside must not go to descriptors 1 and 2 (a job
    writes its events to a descriptor of its own)."""
    import warnings

    chatter = _Chatter()
    python_text = _Transcript(on_line)
    handlers = _stream_handlers()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    sink = tempfile.TemporaryFile()
    saved: dict[int, int] = {}
    for fd in (1, 2):
        try:
            saved[fd] = os.dup(fd)
            os.dup2(sink.fileno(), fd)
        except OSError:
            saved.pop(fd, None)
    for handler, _ in handlers:
        handler.setStream(python_text)
    try:
        with warnings.catch_warnings(record=True) as caught, \
                contextlib.redirect_stdout(python_text), contextlib.redirect_stderr(python_text):
            warnings.simplefilter("always")
            try:
                with harmless_messages_dropped():
                    yield chatter
            finally:
                chatter.warnings = list(caught)
    finally:
        for handler, stream in handlers:
            handler.setStream(stream)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
        sink.seek(0)
        fd_text = sink.read().decode("utf-8", errors="replace")
        sink.close()
        lines = [f"{Path(w.filename).name}:{w.lineno}: {w.category.__name__}: {w.message}"
                 for w in chatter.warnings]
        _log_lines(log, python_text.getvalue() + "\n" + fd_text + "\n" + "\n".join(lines))


def _stream_handlers() -> list:
    """The logging handlers writing to this process's stdout or stderr, with their streams."""
    import logging

    consoles = {id(s) for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__) if s}
    loggers = [logging.getLogger()] + [logger for logger in logging.root.manager.loggerDict.values()
                                       if isinstance(logger, logging.Logger)]
    found = []
    for logger in loggers:
        for handler in logger.handlers:
            if (type(handler) is logging.StreamHandler and id(handler.stream) in consoles
                    and all(handler is not h for h, _ in found)):
                found.append((handler, handler.stream))
    return found


def _log_lines(log: Callable[[str], None], text: str) -> None:
    """Pass the chatter on, short: a terminal shows the log. Repeated lines, the glog-style
    prefixes of torch's log lines and the "step..." lines that a "step... ✅" line repeats go."""
    lines: list[str] = []
    for line in _clean(text).splitlines():
        line = _GLOG_PREFIX.sub("", line.rstrip())
        if not line.strip() or line in lines[-1:]:
            continue
        if lines and line.startswith(lines[-1]) and line.endswith(("✅", "❌")):
            lines[-1] = line
        else:
            lines.append(line)
    if len(lines) > MAX_LOG_LINES:
        lines = lines[:MAX_LOG_LINES] + [f"… ({len(lines) - MAX_LOG_LINES} more lines)"]
    if lines:
        log("\n".join(lines))


def _excerpt(exc: BaseException, count: int = 15) -> str:
    """The part of an exporter's error message that says what went wrong (the dynamo exporter
    wraps it in general advice)."""
    text = _clean(str(exc))
    if "## Exception summary" in text:
        text = text.split("## Exception summary", 1)[1].split("The error above occurred", 1)[0]
    lines = [line for line in text.splitlines() if line.strip()]
    more = f"\n… ({len(lines) - count} more lines)" if len(lines) > count else ""
    return "\n".join(lines[:count]) + more


# --- Text ----------------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# "W1130 11:47:44.171000 31491 " before torch's own log lines.
_GLOG_PREFIX = re.compile(r"^[IWEF]\d{4} [\d:.]+ \d+ ")


def _clean(text: str) -> str:
    return _ANSI.sub("", text)


def _first_line(value: Any) -> str:
    text = _clean(str(value)).strip()
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return type(value).__name__ if isinstance(value, BaseException) else ""


def _named_shapes(names: list[str], tensors) -> str:
    return ", ".join(f"{name} {_shape_text(t.shape)}" for name, t in zip(names, tensors))


def _shape_text(shape) -> str:
    return "(" + ", ".join(str(int(d)) if isinstance(d, (int, np.integer)) else str(d)
                           for d in shape) + ")"

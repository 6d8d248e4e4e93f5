"""The inputs of a conversion: the shape (batch first), the example the exporters trace, the
project's samples the verification runs, and the names of the model's inputs and outputs."""

from __future__ import annotations

import contextlib
import inspect
import re

import numpy as np

from workbench.modeltools import model_files
from workbench.modeltools.context import ToolContext
from workbench.modeltools.conversion.source import Source, unknown_input_shape
from workbench.modeltools.conversion.tensors import flat_tensors, shape_label, torch_threads
from workbench.modeltools.errors import ModelToolError, ToolCancelled
from workbench.modeltools.library_output import first_line
from workbench.modeltools.params import shape_text
from workbench.modeltools.report import ToolReport


def _project_samples(source: Source, values: dict, context: ToolContext):
    """Up to verify_samples samples of the project's test split, or None (outside a project,
    for a model with several inputs, or when the dataset cannot load)."""
    if (source.code is None or source.code.adopted
            or (source.example is not None and len(source.example) != 1)):
        return None
    from workbench.modeltools.data import from_project

    wanted = max(values["verify_samples"], 2)
    try:
        data = from_project(source.code, "test", source.hparams, limit=wanted)
    except ModelToolError as exc:
        context.log(f"The project's dataset is not usable here ({exc})")
        return None
    context.log(f"{len(data)} samples of shape {shape_label(data.x.shape[1:])} from {data.source}")
    return data


def example_inputs(source: Source, values: dict, typed_shape: tuple[int, ...] | None,
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
                        f"{shape_label(shape)}; verifying on random inputs")
            data = None
        return shape, example, data
    if typed_shape is not None:
        shape = typed_shape
        if data is not None and tuple(data.x.shape[1:]) != shape[1:]:
            context.log(f"The samples of {data.source} are {shape_label(data.x.shape[1:])}, not "
                        f"{shape_label(shape[1:])}; verifying on random inputs")
            data = None
    elif data is not None:
        shape = (1, *data.x.shape[1:])
    else:
        if source.code is None:
            where = "it lies outside a project, so no dataset tells it"
        elif source.code.adopted:
            raise unknown_input_shape(source.path)
        else:
            where = "the project's dataset is not usable"
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


def _has_own_forward(module) -> bool:
    """Whether a class of the user's defines the forward that runs: torch's and Lightning's
    own (LightningModule only passes on to torch's, which raises) are not one."""
    import torch

    for cls in type(module).__mro__:
        if "forward" in vars(cls):
            return not (cls is torch.nn.Module or cls.__module__.startswith(("lightning.", "pytorch_lightning.")))
    return False


def dry_run(source: Source, example: tuple, typed_shape: tuple[int, ...] | None = None):
    """Run the model once on the example: the outputs (tensors) and their names. A model that
    fails here gets a message about its input, not an exporter's stack; the input is named as
    the user typed it when it came from --input-shape (the example may hold a larger batch)."""
    import torch

    module = source.module
    if isinstance(module, torch.nn.Module) and not _has_own_forward(module):
        # Lightning's quickstart defines training_step only: a forward the user must write.
        held = [name for name, _ in module.named_children()]
        suggestion = f", e.g. def forward(self, x): return self.{held[0]}(x)" if held else ""
        raise ModelToolError(
            f"{source.path}: {type(module).__name__} has no forward(), so there is nothing to run "
            f"and convert (a LightningModule's training_step is not one); give "
            f"{type(module).__name__} a forward() that runs what should be deployed{suggestion}")
    try:
        with torch.no_grad(), torch_threads(1):
            result = module(*example)
    except ToolCancelled:
        raise
    except Exception as exc:
        if typed_shape is not None and source.example is None:
            raise ModelToolError(
                f"{source.path} fails on an input of --input-shape {shape_text(typed_shape)} "
                f"({first_line(exc)}); give the shape it takes, batch first (Convert feeds "
                "float32 tensors; for other inputs save an ExportedProgram with example inputs)"
            ) from None
        raise ModelToolError(
            f"{source.path} fails on an input of shape {shape_label(example[0].shape)} "
            f"({first_line(exc)}); give the shape it takes with --input-shape (Convert feeds "
            "float32 tensors; for other inputs save an ExportedProgram with example inputs)"
        ) from None
    outputs = flat_tensors(result)
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


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def check_input_count(source: Source, count: int) -> None:
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


def input_names(source: Source, count: int, output_names: list[str]) -> list[str]:
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

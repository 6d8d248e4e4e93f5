"""Sparsify from an ONNX model: magnitude pruning of its Conv / Gemm / MatMul weights directly in
the graph, so a model from outside any project can be sparsified. Removing channels and
fine-tuning need the PyTorch checkpoint and the project's code, and say so."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from workbench.modeltools.context import ToolContext
from workbench.modeltools.data import EvaluationData, from_project, load_npz
from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.outputs import atomic_output
from workbench.modeltools.params import shape_text
from workbench.modeltools.pruning import magnitude
from workbench.modeltools.pruning.evaluate import measure_onnx
from workbench.modeltools.pruning.export import describe
from workbench.modeltools.pruning.layers import check_ignored
from workbench.modeltools.pruning.summary import pruning_report
from workbench.modeltools.report import ToolReport


def sparsify_onnx(source: Path, target: Path, values: dict, sparsity: float,
                  context: ToolContext, shape: tuple[int, ...] | None = None,
                  overwrite: bool = True, shown_as: Path | None = None) -> ToolReport:
    """The Sparsify tool on the ONNX model ``source``, writing ``target`` (replacing a file
    there only when ``overwrite``). ``shape`` is --input-shape's, checked already; messages
    name the model ``shown_as`` (the path as the user gave it)."""
    import onnx

    from workbench.modeltools import model_files
    from workbench.modeltools.runtimes import open_onnx

    shown_as = shown_as or source

    method = values.get("method") or "magnitude"
    scope = values.get("scope") or "global"
    if method != "magnitude":
        raise ModelToolError(
            f"{source} is an ONNX model: removing channels rebuilds a smaller model, which needs "
            "the PyTorch checkpoint (.pt) and the project's model factory. Give the checkpoint "
            "from the project's run folder, or use --method magnitude")
    if values.get("finetune_epochs"):
        raise ModelToolError(
            f"{source} is an ONNX model: fine-tuning needs the PyTorch checkpoint and the "
            "project's training code. Give the checkpoint, or --finetune-epochs 0")
    warnings: list[str] = []

    context.stage("Load model")
    try:
        model = onnx.load(str(source))
    except Exception:
        raise ModelToolError(model_files.damaged(shown_as, model_files.ONNX)) from None
    context.progress(0.5)
    threads = int(values.get("threads") or 1)
    session = open_onnx(source, threads)  # a model onnxruntime cannot run stops here
    ignored = check_ignored(values.get("ignore_layers") or [], magnitude.onnx_layer_names(model),
                            source, what="layer")
    if shape is not None:
        _check_shape_fits(shape, session.input_shape, shown_as)
    count_before, _ = magnitude.onnx_parameter_counts(model)
    context.progress(1.0)

    context.stage("Load data")
    data = _evaluation_data(values, source, context, warnings)
    if data is not None:
        data.check_fits(session.input_shape, source)
    latency_input = _latency_input(data, shape, session.input_shape, source, warnings)
    context.progress(1.0)

    context.stage("Prune")
    rows = magnitude.prune_onnx(model, sparsity, scope, ignored, source)
    context.log(magnitude.SHAPE_KEPT)
    count_after, nonzero_after = magnitude.onnx_parameter_counts(model)
    context.progress(1.0)

    context.stage("Fine-tune")
    context.log("no fine-tuning: an ONNX model is pruned as it is")

    context.stage("Export")
    with atomic_output(target, overwrite=overwrite) as partial:
        try:
            onnx.save(model, str(partial))
        except Exception as exc:
            raise ModelToolError(f"{target} could not be written ({describe(exc)})") from None
        context.progress(1.0)
        context.stage("Evaluate")
        before = measure_onnx(source, source, data, latency_input, threads, context.check_cancelled)
        context.progress(0.45)
        after = measure_onnx(partial, target, data, latency_input, threads, context.check_cancelled)
        context.progress(0.9)
    report = pruning_report(source, method, scope, sparsity, rows,
                            (count_before, count_after, nonzero_after), before, after, 0, None,
                            (len(data) if data is not None else 0, data and data.source),
                            [target], warnings)
    context.progress(1.0)
    return report


def _evaluation_data(values: dict, source: Path, context: ToolContext,
                     warnings: list[str]) -> EvaluationData | None:
    """The --data file, else the dataset of the project holding ``source``, else None (with a
    warning: accuracy cannot be measured)."""
    from workbench.modeltools.project_code import ProjectCode, find_project_root

    samples = values.get("samples")
    if values.get("data"):
        return load_npz(Path(values["data"])).take(samples)
    root = find_project_root(source.parent) or context.project
    if root is None:
        warnings.append("no evaluation data: accuracy was not measured; give --data file.npz")
        return None
    try:
        code = ProjectCode(root)
        return from_project(code, values.get("split") or "test", code.hparams(source), samples)
    except ModelToolError as exc:
        warnings.append(f"the project's dataset could not be read ({exc}); accuracy was not "
                        "measured; give --data file.npz")
        return None


def _check_shape_fits(shape: tuple[int, ...], input_shape: list, shown_as: Path) -> None:
    """ModelToolError, quoting --input-shape as typed, when the model's fixed sizes differ."""
    fits = len(shape) == len(input_shape) and all(
        wanted is None or wanted == size for wanted, size in zip(input_shape, shape))
    if not fits:
        takes = ",".join("?" if d is None else str(d) for d in input_shape)
        raise ModelToolError(
            f"--input-shape {shape_text(shape)} does not fit {shown_as}, which takes inputs "
            f"shaped {takes} (? is free); give a shape that fits, or leave --input-shape out")


def _latency_input(data: EvaluationData | None, shape: tuple[int, ...] | None, input_shape: list,
                   source: Path, warnings: list[str]) -> np.ndarray | None:
    """What to time: zeros shaped by --input-shape when given, else the data's first sample,
    else zeros of the model's fixed input shape; None (with a warning) when the shape is not
    known."""
    if shape is not None:
        return np.zeros(shape, dtype=np.float32)
    if data is not None:
        return data.x[:1]
    free = [i for i, d in enumerate(input_shape) if d is None]
    if free and free != [0]:
        warnings.append(f"{source}'s input shape is not fixed; latency was not measured; give "
                        "--input-shape or --data")
        return None
    return np.zeros([1 if d is None else d for d in input_shape], dtype=np.float32)

"""Sparsify from a PyTorch checkpoint: rebuild the model with the project's factory, prune it,
fine-tune it through the project's dataset and optimizer, write it as ONNX and ``.pt2``, and
measure it against the unpruned model exported the same way."""

from __future__ import annotations

import contextlib
import copy
import tempfile
from pathlib import Path

import numpy as np

from workbench.modeltools.context import ToolContext
from workbench.modeltools.data import EvaluationData, from_project, load_npz
from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.outputs import atomic_output, check_output
from workbench.modeltools.pruning import channels as channel_pruning
from workbench.modeltools.pruning import magnitude
from workbench.modeltools.pruning.evaluate import measure_onnx
from workbench.modeltools.pruning.export import describe, export_onnx, export_program, save_program
from workbench.modeltools.pruning.finetune import finetune, train_split
from workbench.modeltools.pruning.layers import (check_ignored, count_nonzero, count_parameters,
                                                 final_layer, is_ignored, prunable_layers)
from workbench.modeltools.pruning.summary import pruning_report
from workbench.modeltools.report import ToolReport

# An accuracy drop (points) past which the report suggests fine-tuning.
NOTABLE_DROP = 1.0


def sparsify_checkpoint(source: Path, target: Path, values: dict, sparsity: float,
                        context: ToolContext) -> ToolReport:
    """The Sparsify tool on a checkpoint ``source``, writing ``target`` (.onnx) and the
    ``.pt2`` beside it."""
    from workbench.modeltools.project_code import ProjectCode, find_project_root

    method = values.get("method") or "magnitude"
    scope = values.get("scope") or "global"
    epochs = int(values.get("finetune_epochs") or 0)
    warnings: list[str] = []

    context.stage("Load")
    root = find_project_root(source.parent) or context.project
    if root is None:
        raise ModelToolError(
            f"{source} is not inside a Workbench project: a PyTorch checkpoint holds only weights, "
            "and the project's model factory is needed to rebuild the model. Sparsify it from its "
            "project, or give it as an ONNX model (magnitude pruning only)")
    code = ProjectCode(root)
    hparams = code.hparams(source)
    factory = values.get("model_factory") or hparams.get("model_name")
    if not factory:
        raise ModelToolError(f"no model factory for {source}: set model_name in the "
                             "hyper-parameters or give --model-factory")
    model = _project_call(lambda: code.build_model(factory, hparams, source),
                          f"the model factory {factory!r} of {root}")
    context.progress(0.5)
    data = _project_call(lambda: _evaluation_data(values, code, hparams),
                         f"the dataset factory of {root}")
    example = _example(data)
    _check_runs(model, example, factory, data, source)
    ignored = check_ignored(values.get("ignore_layers") or [],
                            [name for name, _ in model.named_modules()], source)
    classifier = final_layer(model, example)
    original = copy.deepcopy(model)
    pt2_target = check_output(target.with_suffix(".pt2"), [source])

    context.stage("Prune")
    if method == "magnitude":
        chosen = {name: module for name, module in prunable_layers(model).items()
                  if not is_ignored(name, ignored)}
        if not chosen:
            raise ModelToolError(f"every convolution and linear layer of {source}'s model is in "
                                 "--ignore-layers: nothing is left to prune")
        magnitude.mask_torch_layers(chosen, sparsity, scope)
        context.log(magnitude.SHAPE_KEPT)
    else:
        before_layers = channel_pruning.snapshot(model)
        channel_pruning.prune_channels(model, example, sparsity, ignored, classifier, source,
                                       context.log)
    context.progress(1.0)

    context.stage("Fine-tune")
    final_loss = None
    if epochs:
        rate = values.get("learning_rate")
        rate = float(rate if rate is not None else hparams.get("learning_rate") or 1e-3)
        context.log(f"fine-tuning {epochs} epoch(s) at learning rate {rate:g}, batch size "
                    f"{hparams.get('batch_size') or 32}, optimizer {hparams.get('optimizer')}")
        splits = _project_call(lambda: code.dataset_splits(hparams),
                               f"the dataset factory of {root}")
        final_loss = finetune(model, train_split(splits, root), hparams, epochs, rate, context)
    else:
        context.log("no fine-tuning (--finetune-epochs 0)")
    if method == "magnitude":
        magnitude.fix_torch_masks(chosen)
        rows = magnitude.torch_layer_rows(chosen)
    else:
        rows = channel_pruning.channel_rows(before_layers, model)
    model.eval()
    parameters = (count_parameters(original), count_parameters(model), count_nonzero(model))

    context.stage("Export")
    x1 = data.x[:1]
    with tempfile.TemporaryDirectory(prefix="workbench-sparsify-") as scratch, \
            contextlib.ExitStack() as writing:
        # The unpruned model goes through the same exporter, so sizes and latencies compare.
        reference = Path(scratch) / f"{source.stem}.onnx"
        export_onnx(original, example, reference, f"the model of {source}", context.log)
        context.progress(0.3)
        onnx_partial = writing.enter_context(atomic_output(target))
        export_onnx(model, example, onnx_partial, "the pruned model", context.log)
        context.progress(0.7)
        outputs = [target]
        program, why = export_program(model, example)
        if program is not None:
            save_program(program, writing.enter_context(atomic_output(pt2_target)))
            outputs.append(pt2_target)
        else:
            warnings.append(f"the pruned PyTorch model could not be saved as {pt2_target.name} "
                            f"({why}); only the ONNX model was written")
        context.progress(1.0)

        context.stage("Evaluate")
        threads = int(values.get("threads") or 1)
        before = measure_onnx(reference, source, data, x1, threads, context.check_cancelled)
        context.progress(0.5)
        after = measure_onnx(onnx_partial, target, data, x1, threads, context.check_cancelled)
        context.progress(1.0)
    if (before.accuracy is not None and after.accuracy is not None
            and before.accuracy - after.accuracy > NOTABLE_DROP and not epochs):
        warnings.append(f"accuracy fell by {before.accuracy - after.accuracy:.1f} points; "
                        "fine-tune for a few epochs (--finetune-epochs 2) to win it back")
    return pruning_report(source, method, scope, sparsity, rows, parameters, before, after,
                          epochs, final_loss, (len(data), data.source), outputs, warnings)


def _project_call(call, what: str):
    """``call()``; the project's own code failing becomes a ModelToolError naming ``what``."""
    try:
        return call()
    except ModelToolError:
        raise
    except Exception as exc:
        raise ModelToolError(f"{what} failed ({describe(exc)}); fix it in the project's code") from None


def _evaluation_data(values: dict, code, hparams) -> EvaluationData:
    samples = values.get("samples")
    if values.get("data"):
        data = load_npz(Path(values["data"]))
    else:
        data = from_project(code, values.get("split") or "test", hparams, limit=samples)
    return data.take(samples)


def _example(data: EvaluationData):
    """Two samples of the data as a torch batch: the example that traces and exports the
    model (two, as a batch of one would fix the batch axis)."""
    import torch

    x = data.x[:2] if len(data.x) >= 2 else np.concatenate([data.x, data.x])
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))


def _check_runs(model, example, factory: str, data: EvaluationData, source: Path) -> None:
    import torch

    try:
        with torch.no_grad():
            output = model(example)
    except Exception as exc:
        raise ModelToolError(
            f"the model {factory!r} built for {source} does not run on the samples of "
            f"{data.source} (shaped {tuple(data.x.shape[1:])}): {describe(exc)}; give data "
            "shaped for this model") from None
    if not isinstance(output, torch.Tensor) or output.ndim < 2:
        raise ModelToolError(
            f"the model {factory!r} built for {source} returns "
            f"{type(output).__name__ if not isinstance(output, torch.Tensor) else tuple(output.shape)}"
            ", not a batch of class scores; Sparsify prunes classifiers that return one tensor")

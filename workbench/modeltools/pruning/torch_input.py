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
from workbench.modeltools.params import shape_text
from workbench.modeltools.pruning import channels as channel_pruning
from workbench.modeltools.pruning import magnitude
from workbench.modeltools.pruning.evaluate import measure_onnx
from workbench.modeltools.pruning.export import (describe, export_onnx, export_program,
                                                 load_exporter, save_program)
from workbench.modeltools.pruning.finetune import finetune, train_split
from workbench.modeltools.pruning.layers import (check_ignored, count_nonzero, count_parameters,
                                                 final_layer, is_ignored, prunable_layers)
from workbench.modeltools.pruning.summary import pruning_report
from workbench.modeltools.report import ToolReport

# An accuracy drop (points) past which the report suggests fine-tuning.
NOTABLE_DROP = 1.0


def sparsify_checkpoint(source: Path, target: Path, values: dict, sparsity: float,
                        context: ToolContext, shape: tuple[int, ...] | None = None,
                        overwrite: bool = True, shown_as: Path | None = None) -> ToolReport:
    """The Sparsify tool on a checkpoint ``source``, writing ``target`` (.onnx) and the
    ``.pt2`` beside it (replacing files there only when ``overwrite``). ``shape`` is
    --input-shape's, checked already: the model is traced, exported and timed with it; the
    evaluation data's sample shape is the default."""
    from workbench.modeltools.project_code import ProjectCode, find_project_root

    method = values.get("method") or "magnitude"
    scope = values.get("scope") or "global"
    epochs = int(values.get("finetune_epochs") or 0)
    warnings: list[str] = []
    shown = shown_as or source

    context.stage("Load model")
    root = find_project_root(source.parent) or context.project
    if root is None:
        raise ModelToolError(
            f"{shown} is not inside a Workbench project: a PyTorch checkpoint holds only weights, "
            "and the project's model factory is needed to rebuild the model. Sparsify it from its "
            "project, or give it as an ONNX model (magnitude pruning only)")
    code = ProjectCode(root)
    hparams = code.hparams(source)
    # A project of the user's own training code records its script's arguments, not a
    # registered model_name: a class of its code builds the weights.
    factory = values.get("model_factory") or (None if code.adopted else hparams.get("model_name"))
    context.progress(0.1)
    if not factory and code.adopted:
        from workbench.modeltools.project_classes import matching_class

        factory, model, used = matching_class(root, source, hparams, context.log)
        taken = f"; with the run's {', '.join(f'{n}={hparams[n]!r}' for n in used)}" if used else ""
        context.log(f"Built {factory} (its keys and shapes match {shown.name}){taken}")
    elif not factory:
        raise ModelToolError(f"no model factory for {shown}: set model_name in the "
                             "hyper-parameters or give --model-factory")
    else:
        model = _project_call(lambda: code.build_model(factory, hparams, source),
                              f"the model factory {factory!r} of {root}")
    context.progress(1.0)
    context.stage("Load data")
    data = _project_call(lambda: _evaluation_data(values, code, hparams),
                         f"the dataset factory of {root}")
    context.progress(0.8)
    evaluation = data
    if shape is not None and tuple(data.x.shape[1:]) != shape[1:]:
        if epochs:
            raise ModelToolError(
                f"--input-shape {shape_text(shape)} does not fit the samples of {data.source} "
                f"(shaped {tuple(data.x.shape[1:])}), which fine-tuning trains on; give a shape "
                "that fits them, or --finetune-epochs 0")
        warnings.append(f"the samples of {data.source} are shaped {tuple(data.x.shape[1:])}, "
                        f"which does not fit --input-shape {shape_text(shape)}: accuracy was "
                        "not measured")
        evaluation = None
    example = _example(evaluation, shape)
    _check_runs(model, example, factory, evaluation, shown, shape)
    ignored = check_ignored(values.get("ignore_layers") or [],
                            [name for name, _ in model.named_modules()], source)
    classifier = final_layer(model, example)
    original = copy.deepcopy(model)
    pt2_target = check_output(target.with_suffix(".pt2"), [source])
    context.progress(1.0)

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
    timed = np.zeros(shape, dtype=np.float32) if shape is not None else data.x[:1]
    with tempfile.TemporaryDirectory(prefix="workbench-sparsify-") as scratch, \
            contextlib.ExitStack() as writing:
        # The unpruned model goes through the same exporter, so sizes and latencies compare.
        reference = Path(scratch) / f"{source.stem}.onnx"
        load_exporter()
        context.progress(0.2)
        export_onnx(original, example, reference, f"the model of {source}", context.log)
        context.progress(0.5)
        onnx_partial = writing.enter_context(atomic_output(target, overwrite=overwrite))
        export_onnx(model, example, onnx_partial, "the pruned model", context.log)
        context.progress(0.8)
        outputs = [target]
        program, why = export_program(model, example)
        if program is not None:
            save_program(program, writing.enter_context(atomic_output(pt2_target,
                                                                      overwrite=overwrite)))
            outputs.append(pt2_target)
        else:
            warnings.append(f"the pruned PyTorch model could not be saved as {pt2_target.name} "
                            f"({why}); only the ONNX model was written")
        context.progress(1.0)

        context.stage("Evaluate")
        threads = int(values.get("threads") or 1)
        before = measure_onnx(reference, source, evaluation, timed, threads,
                              context.check_cancelled)
        context.progress(0.45)
        after = measure_onnx(onnx_partial, target, evaluation, timed, threads,
                             context.check_cancelled)
        context.progress(0.9)
    if (before.accuracy is not None and after.accuracy is not None
            and before.accuracy - after.accuracy > NOTABLE_DROP and not epochs):
        warnings.append(f"accuracy fell by {before.accuracy - after.accuracy:.1f} points; "
                        "fine-tune for a few epochs (--finetune-epochs 2) to win it back")
    report = pruning_report(source, method, scope, sparsity, rows, parameters, before, after,
                            epochs, final_loss,
                            (len(evaluation), evaluation.source) if evaluation else (0, None),
                            outputs, warnings)
    context.progress(1.0)
    return report


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


def _example(data: EvaluationData | None, shape: tuple[int, ...] | None = None):
    """The example that traces and exports the model, as a torch batch of at least two (a
    batch of one would fix the batch axis): samples of the data when there are, else seeded
    random inputs of ``shape``."""
    import torch

    if data is None:
        generator = torch.Generator().manual_seed(0)
        return torch.randn((max(2, shape[0]), *shape[1:]), generator=generator)
    x = data.x[:2] if len(data.x) >= 2 else np.concatenate([data.x, data.x])
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))


def _check_runs(model, example, factory: str, data: EvaluationData | None, source: Path,
                shape: tuple[int, ...] | None = None) -> None:
    import torch

    try:
        with torch.no_grad():
            output = model(example)
    except Exception as exc:
        if data is None:
            raise ModelToolError(
                f"the model {factory!r} built for {source} does not run on inputs of "
                f"--input-shape {shape_text(shape)}: {describe(exc)}; give the shape it "
                "takes") from None
        given = f" (--input-shape {shape_text(shape)})" if shape is not None else ""
        raise ModelToolError(
            f"the model {factory!r} built for {source} does not run on the samples of "
            f"{data.source} (shaped {tuple(data.x.shape[1:])}){given}: {describe(exc)}; give "
            "data shaped for this model") from None
    if not isinstance(output, torch.Tensor) or output.ndim < 2:
        raise ModelToolError(
            f"the model {factory!r} built for {source} returns "
            f"{type(output).__name__ if not isinstance(output, torch.Tensor) else tuple(output.shape)}"
            ", not a batch of class scores; Sparsify prunes classifiers that return one tensor")

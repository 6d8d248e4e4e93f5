"""Structured pruning: whole channels of convolutions (and features of linear layers) are
removed, so the model really gets smaller and faster, not only sparser.

torch_pruning's dependency graph keeps the model consistent: removing a convolution's output
channels removes the matching batch-norm entries, the next convolution's input channels and the
columns of a linear layer after a flatten. Each prunable layer loses the same fraction of its
channels, chosen by the L2 norm of the weights that belong to each channel.
"""

from __future__ import annotations

from pathlib import Path

from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.pruning.export import describe
from workbench.modeltools.pruning.layers import (channels, count_parameters, is_ignored,
                                                 layer_parameters, prunable_layers)


def snapshot(model) -> dict[str, tuple[str, int, int, int]]:
    """Each prunable layer's (type, parameters, input channels, output channels)."""
    return {name: (type(module).__name__, layer_parameters(module), *channels(module))
            for name, module in prunable_layers(model).items()}


def prune_channels(model, example, sparsity: float, ignored: list[str], final_layer: str | None,
                   model_path: Path | str, log=lambda text: None) -> None:
    """Remove ``sparsity`` of the output channels of every convolution and linear layer except
    ``final_layer`` (the classifier keeps its outputs) and those under ``ignored``, in place.
    ModelToolError when the model cannot be traced, or nothing could be removed."""
    import torch
    import torch_pruning as tp

    layers = prunable_layers(model)
    kept = [module for name, module in layers.items()
            if name == final_layer or is_ignored(name, ignored)]
    before = count_parameters(model)
    try:
        pruner = tp.pruner.MetaPruner(
            model, example, importance=tp.importance.GroupMagnitudeImportance(p=2),
            pruning_ratio=sparsity, global_pruning=False, ignored_layers=kept)
        pruner.step()
    except Exception as exc:
        raise ModelToolError(
            f"the channels of {model_path}'s model could not be pruned ({describe(exc)}); "
            "leave the layers concerned out with --ignore-layers, or use --method magnitude"
        ) from None
    try:
        with torch.no_grad():
            model(example)
    except Exception as exc:
        raise ModelToolError(
            f"the model of {model_path} no longer runs once its channels are pruned "
            f"({describe(exc)}); leave the layers concerned out with --ignore-layers, or use "
            "--method magnitude") from None
    after = count_parameters(model)
    if after >= before:
        raise ModelToolError(
            f"no channel of {model_path}'s model could be removed at --sparsity {sparsity:g}: "
            "every prunable layer is ignored or too small; raise the sparsity or ignore fewer "
            "layers")
    log(f"parameters {before:,} -> {after:,} ({100.0 * after / before:.1f} %)")


def channel_rows(before: dict, model) -> list[list]:
    """One row per layer: name, type, parameters before, after, sparsity %, input channels
    (before -> after), output channels (before -> after)."""
    after = snapshot(model)
    rows = []
    for name, (kind, params, inputs, outputs) in before.items():
        _, params_now, inputs_now, outputs_now = after.get(name, (kind, 0, 0, 0))
        rows.append([name, kind, params, params_now,
                     round(100.0 * (params - params_now) / max(1, params), 2),
                     f"{inputs} → {inputs_now}", f"{outputs} → {outputs_now}"])
    return rows


"""Which layers of a model may be pruned, the layers a user asked to leave alone, and counting
parameters and zeros."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Iterable

from workbench.modeltools.errors import ModelToolError


def check_ignored(names: Iterable[str], known: Iterable[str], model_path: Path | str,
                  what: str = "module") -> list[str]:
    """``names`` as given, once each; ModelToolError for one that is not in ``known``, with the
    closest known names."""
    known = [k for k in known if k]
    checked: list[str] = []
    for name in names:
        if name in checked:
            continue
        if name not in known:
            close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
            more = " ..." if len(known) > 8 else ""
            hint = (f" Did you mean {', '.join(close)}?" if close
                    else f" Its {what}s include {', '.join(known[:8])}{more}.")
            raise ModelToolError(
                f"--ignore-layers: {model_path} has no {what} named {name!r}.{hint}")
        checked.append(name)
    return checked


def is_ignored(name: str, ignored: Iterable[str]) -> bool:
    """True when ``name`` is one of ``ignored`` or lies inside one (``classifier`` covers
    ``classifier.4``)."""
    return any(name == i or name.startswith(i + ".") for i in ignored)


def prunable_layers(model) -> dict:
    """The convolutions and linear layers of a torch module, by their module names, in order."""
    from torch import nn
    from torch.nn.modules.conv import _ConvNd

    return {name: module for name, module in model.named_modules()
            if name and isinstance(module, (_ConvNd, nn.Linear))}


def final_layer(model, example) -> str | None:
    """The name of the last convolution or linear layer a forward pass runs: the classifier,
    whose outputs are the model's and must keep their number."""
    import torch

    order: list[str] = []
    handles = [module.register_forward_hook(lambda *_, name=name: order.append(name))
               for name, module in prunable_layers(model).items()]
    try:
        with torch.no_grad():
            model(example)
    finally:
        for handle in handles:
            handle.remove()
    return order[-1] if order else None


def count_parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())


def count_nonzero(model) -> int:
    return sum(int((p != 0).sum()) for p in model.parameters())


def layer_parameters(module) -> int:
    """Weights and bias of one layer (its own parameters, not its children's)."""
    return sum(p.numel() for p in module.parameters(recurse=False))


def channels(module) -> tuple[int, int]:
    """(input channels, output channels) of a convolution or linear layer."""
    if hasattr(module, "in_features"):
        return module.in_features, module.out_features
    return module.in_channels, module.out_channels

"""Small helpers over torch tensors and shapes that every step of a conversion uses."""

from __future__ import annotations

import contextlib

import numpy as np


def flat_tensors(result) -> list:
    """The tensors in a model's output, however nested (tuples, lists, dicts)."""
    import torch
    from torch.utils._pytree import tree_flatten

    return [leaf for leaf in tree_flatten(result)[0] if isinstance(leaf, torch.Tensor)]


@contextlib.contextmanager
def torch_threads(count: int):
    """Run PyTorch on ``count`` threads for a while. Verification feeds a few samples at a time,
    where a thread pool only waits for its threads (badly, on a busy machine)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def named_shapes(names: list[str], tensors) -> str:
    """``input (1, 3, 8, 8), mask (1, 8)``: each name with its tensor's shape."""
    return ", ".join(f"{name} {shape_label(t.shape)}" for name, t in zip(names, tensors))


def shape_label(shape) -> str:
    """A shape as the log and messages show it: ``(1, 3, 8, 8)``, symbolic sizes by name."""
    return "(" + ", ".join(str(int(d)) if isinstance(d, (int, np.integer)) else str(d)
                           for d in shape) + ")"

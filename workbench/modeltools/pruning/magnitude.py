"""Unstructured magnitude pruning: the weights of smallest absolute value become zero, either
the same fraction in every layer (``layer``) or under one threshold for all of them (``global``).

The model keeps its shape, so it is no faster; it compresses better, and a runtime with sparse
kernels can skip the zeros. Works on a torch module (masks kept fixed while fine-tuning) or
directly on the weight initializers of an ONNX graph's Conv, Gemm and MatMul nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.pruning.layers import is_ignored

ONNX_WEIGHTED_OPS = ("Conv", "ConvTranspose", "Gemm", "MatMul")
SHAPE_KEPT = ("magnitude pruning keeps every weight's shape: the model runs no faster, but its "
              "file compresses better (compressed_size_ratio); --method channels makes it faster")


# --- torch ---------------------------------------------------------------------------------

def mask_torch_layers(layers: dict, sparsity: float, scope: str) -> None:
    """Zero the smallest weights of ``layers`` (name -> module) through
    torch.nn.utils.prune, which keeps a mask beside each weight: fine-tuning updates the
    remaining weights while the pruned ones stay zero. Call ``fix_torch_masks`` afterwards."""
    from torch.nn.utils import prune

    if scope == "global":
        prune.global_unstructured([(m, "weight") for m in layers.values()],
                                  pruning_method=prune.L1Unstructured, amount=sparsity)
    else:
        for module in layers.values():
            prune.l1_unstructured(module, "weight", amount=sparsity)


def fix_torch_masks(layers: dict) -> None:
    """Make the masks permanent: each weight becomes a plain parameter holding its zeros."""
    from torch.nn.utils import prune

    for module in layers.values():
        if prune.is_pruned(module):
            prune.remove(module, "weight")


def torch_layer_rows(layers: dict) -> list[list]:
    """One row per layer: name, type, weights, zeros, sparsity %."""
    rows = []
    for name, module in layers.items():
        weight = module.weight.detach()
        zeros = int((weight == 0).sum())
        rows.append([name, type(module).__name__, weight.numel(), zeros,
                     round(100.0 * zeros / max(1, weight.numel()), 2)])
    return rows


# --- ONNX ----------------------------------------------------------------------------------

@dataclass
class OnnxWeight:
    """A weight initializer of a Conv / Gemm / MatMul node."""

    name: str
    op_type: str
    node_name: str


def onnx_weights(model) -> list[OnnxWeight]:
    """The floating-point weight initializers of the graph's Conv, ConvTranspose, Gemm and
    MatMul nodes, each once, in graph order (biases and integer weights are not included)."""
    from onnx import TensorProto

    floats = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BFLOAT16}
    initializers = {init.name: init for init in model.graph.initializer}
    found: dict[str, OnnxWeight] = {}
    for node in model.graph.node:
        if node.op_type not in ONNX_WEIGHTED_OPS:
            continue
        # A convolution's weight is its second input; Gemm and MatMul may hold it on either side.
        candidates = node.input[1:2] if node.op_type.startswith("Conv") else node.input[:2]
        for name in candidates:
            init = initializers.get(name)
            if init is None or name in found or init.data_type not in floats or len(init.dims) < 2:
                continue
            found[name] = OnnxWeight(name, node.op_type, node.name)
    return list(found.values())


def onnx_layer_names(model) -> list[str]:
    """The names ``--ignore-layers`` accepts for an ONNX graph: node names, the weight
    initializers' names and their dotted prefixes (``classifier`` for ``classifier.4.weight``)."""
    names = {node.name for node in model.graph.node if node.name}
    for weight in onnx_weights(model):
        names.add(weight.name)
        parts = weight.name.split(".")
        names.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return sorted(names)


def prune_onnx(model, sparsity: float, scope: str, ignored: list[str],
               model_path: Path | str) -> list[list]:
    """Zero the smallest weights of the graph's Conv/Gemm/MatMul initializers in place; returns
    one row per weight: name, op type, weights, zeros, sparsity %."""
    from onnx import numpy_helper

    initializers = {init.name: init for init in model.graph.initializer}
    chosen = [w for w in onnx_weights(model)
              if not is_ignored(w.name, ignored) and not (w.node_name and w.node_name in ignored)]
    if not chosen:
        raise ModelToolError(
            f"{model_path} has no floating-point Conv, Gemm or MatMul weights left to prune"
            f"{' after --ignore-layers' if ignored else ''}; is it already quantized?")
    arrays = {w.name: numpy_helper.to_array(initializers[w.name]).copy() for w in chosen}
    if scope == "global":
        _zero_smallest(list(arrays.values()), sparsity)
    else:
        for array in arrays.values():
            _zero_smallest([array], sparsity)
    rows = []
    for weight in chosen:
        array = arrays[weight.name]
        initializers[weight.name].CopyFrom(numpy_helper.from_array(array, weight.name))
        zeros = int((array == 0).sum())
        rows.append([weight.name, weight.op_type, int(array.size), zeros,
                     round(100.0 * zeros / max(1, array.size), 2)])
    return rows


def _zero_smallest(arrays: list[np.ndarray], fraction: float) -> None:
    """Set the ``fraction`` of all elements of ``arrays`` with the smallest absolute values to
    zero (exactly that many, ties broken by position), in place."""
    magnitudes = np.concatenate([np.abs(a.astype(np.float32)).ravel() for a in arrays])
    count = int(round(fraction * magnitudes.size))
    if count <= 0:
        return
    chosen = np.argpartition(magnitudes, count - 1)[:count]
    start = 0
    for array in arrays:
        flat = array.reshape(-1)
        mine = chosen[(chosen >= start) & (chosen < start + flat.size)] - start
        flat[mine] = 0
        start += flat.size


def onnx_parameter_counts(model) -> tuple[int, int]:
    """(parameters, how many of them are not zero), parameters as Inspect and Convert count
    them (``inspect.onnx_parameters``: no shape constants, scales or running statistics)."""
    from onnx import numpy_helper

    from workbench.modeltools.inspect import onnx_parameters

    counted = onnx_parameters(model)
    total = nonzero = 0
    for init in model.graph.initializer:
        if init.name in counted:
            array = numpy_helper.to_array(init)
            total += array.size
            nonzero += int(np.count_nonzero(array))
    return total, nonzero

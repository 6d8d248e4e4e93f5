"""Verification against PyTorch: PyTorch and onnxruntime run the same inputs (the project's
samples, else seeded random ones), at batch 1 and at batch N when the batch is dynamic, and the
report gives the largest difference per output."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from workbench.modeltools.context import ToolContext
from workbench.modeltools.conversion.source import Source
from workbench.modeltools.conversion.tensors import flat_tensors, shape_label, torch_threads
from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.library_output import first_line
from workbench.modeltools.report import ToolReport

# Outputs that differ by more than this (relative to the largest output, at least 1) get a warning.
DIFF_WARNING = 1e-3


def verify(source: Source, onnx_path: Path, target: Path, example: tuple, shape, data,
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
    with torch_threads(1):
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
                f"({first_line(exc)[:300]}); nothing was written. The model's code may fix the "
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
                f"{shape_label(result.shape)} where PyTorch gives {shape_label(reference.shape)}; "
                "nothing was written. Try --exporter torchscript or --no-dynamic-batch")
        difference = differences(reference, result)
        rows.append([name, batch, shape_label(produced[0][index].shape),
                     float(difference.max(initial=0.0)),
                     float(difference.mean()) if difference.size else 0.0])
        finite = np.abs(reference[np.isfinite(reference)].astype(np.float64))
        scale = max(scale, float(finite.max(initial=0.0)))
    return rows, scale


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts[0].ndim else parts[0]


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
    return [t.detach().cpu().numpy() for t in flat_tensors(result)]


def differences(reference: np.ndarray, result: np.ndarray) -> np.ndarray:
    """The absolute differences, element by element; NaN against NaN and an infinity against
    the same infinity count as equal, a NaN against anything else as infinitely far."""
    a = reference.astype(np.float64)
    b = result.astype(np.float64)
    with np.errstate(invalid="ignore"):
        difference = np.abs(a - b)
    both_nan = np.isnan(a) & np.isnan(b)
    same_inf = np.isinf(a) & (a == b)
    difference[both_nan | same_inf] = 0.0
    difference[np.isnan(difference)] = np.inf
    return difference

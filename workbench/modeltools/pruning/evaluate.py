"""Measuring one ONNX model the same way before and after pruning: accuracy on the evaluation
data, p50 latency at batch 1 with onnxruntime, file size raw and compressed."""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from workbench.modeltools.data import EvaluationData
from workbench.modeltools.measure import accuracy, latency
from workbench.modeltools.outputs import file_size

EVALUATION_BATCH = 64
# Latency: repeat until about this many seconds are spent, within these bounds.
LATENCY_SECONDS = 1.0
LATENCY_REPEATS = (20, 200)


@dataclass
class Measurement:
    accuracy: float | None
    latency_p50_ms: float | None
    size_bytes: int
    compressed_bytes: int
    logits: np.ndarray | None


def measure_onnx(path: Path, shown_as: Path | str, data: EvaluationData | None,
                 latency_input: np.ndarray | None, threads: int,
                 check_cancelled: Callable[[], None] = lambda: None) -> Measurement:
    """Accuracy over ``data`` (None without labels), latency of ``latency_input`` (one sample)
    and size of the ONNX file ``path``; messages name it ``shown_as`` (``path`` may be a
    temporary file)."""
    from workbench.modeltools.runtimes import open_onnx

    session = open_onnx(Path(path), threads)
    logits = None
    if data is not None:
        data.check_fits(session.input_shape, shown_as)
        logits = _checked(lambda: session.run_batched(data.x, EVALUATION_BATCH), shown_as,
                          f"the samples of {data.source}")
        check_cancelled()
    p50 = None
    if latency_input is not None:
        def run():
            session.run(latency_input)

        start = time.perf_counter()
        _checked(run, shown_as, f"an input shaped {tuple(latency_input.shape)}")
        once = max(time.perf_counter() - start, 1e-6)
        repeats = int(min(max(LATENCY_REPEATS[0], LATENCY_SECONDS / once), LATENCY_REPEATS[1]))
        p50 = latency(run, repeats=repeats, warmup=3, check_cancelled=check_cancelled)["p50"]
    raw = Path(path).read_bytes()
    return Measurement(accuracy(logits, data.y) if data is not None and logits is not None else None,
                       p50, file_size(Path(path)), len(zlib.compress(raw, 6)), logits)


def _checked(call: Callable, shown_as: Path | str, what: str):
    from workbench.modeltools.errors import ModelToolError
    from workbench.modeltools.pruning.export import describe

    try:
        return call()
    except ModelToolError:
        raise
    except Exception as exc:
        raise ModelToolError(f"{shown_as} does not run on {what} ({describe(exc)}); give data or "
                             "--input-shape that fit the model") from None

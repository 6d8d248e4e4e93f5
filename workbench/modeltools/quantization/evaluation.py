"""The float and the quantized model run side by side: accuracy, agreement, largest output
difference and latency at batch 1."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.modeltools import measure
from workbench.modeltools.context import ToolContext
from workbench.modeltools.data import EvaluationData
from workbench.modeltools.errors import ModelToolError, ToolCancelled
from workbench.modeltools.quantization.model_file import first_line
from workbench.modeltools.runtimes import ModelSession

EVALUATION_BATCH = 64


@dataclass
class Comparison:
    """Figures of one evaluation; accuracies are None without labels, latencies (ms, as
    measure.latency returns them) None when timing was skipped."""

    samples: int
    accuracy_fp32: float | None
    accuracy_quantized: float | None
    agreement: float
    max_abs_diff: float
    latency_fp32: dict | None
    latency_quantized: dict | None


def compare_models(fp32: ModelSession, quantized: ModelSession, data: EvaluationData,
                   repeats: int, context: ToolContext) -> Comparison:
    """Run both models on ``data`` (first output compared) and time each at batch 1."""
    reference = _outputs(fp32, data, context)
    context.progress(0.3)
    produced = _outputs(quantized, data, context)
    context.progress(0.6)
    latencies = [None, None]
    if repeats > 0:
        single = np.ascontiguousarray(data.x[:fp32.fixed_batch or 1], dtype=np.float32)
        for index, session in enumerate((fp32, quantized)):
            latencies[index] = measure.latency(lambda s=session: s.run(single), repeats=repeats,
                                               warmup=max(2, repeats // 10),
                                               check_cancelled=context.check_cancelled)
            context.progress(0.8 + 0.2 * index)
    return Comparison(
        samples=len(data),
        accuracy_fp32=measure.accuracy(reference, data.y),
        accuracy_quantized=measure.accuracy(produced, data.y),
        agreement=measure.agreement(produced, reference),
        max_abs_diff=measure.max_abs_diff(produced.astype(np.float32), reference),
        latency_fp32=latencies[0], latency_quantized=latencies[1])


def _outputs(session: ModelSession, data: EvaluationData, context: ToolContext) -> np.ndarray:
    context.check_cancelled()
    try:
        return session.run_batched(data.x, EVALUATION_BATCH)
    except (ModelToolError, ToolCancelled):
        raise
    except Exception as exc:
        raise ModelToolError(
            f"{session.path} failed to run on {data.source} ({first_line(exc)}); check that the "
            "data is what the model takes") from None

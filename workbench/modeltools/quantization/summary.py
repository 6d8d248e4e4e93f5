"""The Quantize report: headline figures, the two models side by side, the per-layer error
table (worst first) and its chart in graph order."""

from __future__ import annotations

from pathlib import Path

from workbench.modeltools.quantization.evaluation import Comparison
from workbench.modeltools.quantization.host_cpu import int8_instructions_figure, saturation_note
from workbench.modeltools.quantization.layers import COLUMNS, LayerError
from workbench.modeltools.report import ReportPlot, ReportTable, ToolReport

MODELS_TABLE = "Float and quantized model"
LAYERS_TABLE = "Per-layer error (worst first)"
LAYERS_PLOT = "Cosine distance to the float model, in graph order"
SLOWER_RATIO = 1.1
ACCURACY_DROP_WARNING = 1.0
WORST_SHOWN = 3


def quantize_report(source: Path, target: Path, mode: str, description: str,
                    sizes: tuple[int, int], comparison: Comparison, layers: list[LayerError],
                    calibration_samples: int | None, evaluation_source: str,
                    warnings: list[str], reduce_range: bool = False) -> ToolReport:
    """The report of one run; ``sizes`` are the float and quantized file sizes in bytes. On a
    computer whose int8 kernels can saturate, a warning says the accuracy measured here may
    understate the device's, unless the weights were quantized with ``reduce_range``."""
    fp32_size, quantized_size = sizes
    c = comparison
    figures: dict = {"mode": mode, "quantization": description,
                     "size_bytes_fp32": fp32_size, "size_bytes_quantized": quantized_size,
                     "size_ratio": round(quantized_size / max(1, fp32_size), 4)}
    if c.accuracy_fp32 is not None:
        figures.update({"accuracy_fp32": round(c.accuracy_fp32, 3),
                        "accuracy_quantized": round(c.accuracy_quantized, 3),
                        "accuracy_drop": round(c.accuracy_fp32 - c.accuracy_quantized, 3)})
    figures.update({"agreement": round(c.agreement, 3), "max_abs_diff": c.max_abs_diff})
    if c.latency_fp32 and c.latency_quantized:
        figures.update({
            "latency_p50_ms_fp32": round(c.latency_fp32["p50"], 4),
            "latency_p90_ms_fp32": round(c.latency_fp32["p90"], 4),
            "latency_p50_ms_quantized": round(c.latency_quantized["p50"], 4),
            "latency_p90_ms_quantized": round(c.latency_quantized["p90"], 4),
            "latency_ratio": round(c.latency_quantized["p50"] / max(1e-9, c.latency_fp32["p50"]),
                                   4),
        })
    figures["evaluation_samples"] = c.samples
    figures["evaluation_data"] = evaluation_source
    if calibration_samples is not None:
        figures["calibration_samples"] = calibration_samples
    if mode != "fp16":
        figures["cpu_int8_instructions"] = int8_instructions_figure()

    note = saturation_note(mode, reduce_range)
    warnings = list(warnings) + ([note] if note else []) + _advice(mode, figures, layers,
                                                                  saturating=note is not None)
    tables = [_models_table(source, target, sizes, c)]
    plots = []
    if layers:
        tables.append(ReportTable(LAYERS_TABLE, list(COLUMNS), [e.row() for e in layers]))
        in_order = sorted(layers, key=lambda e: e.order)
        plots.append(ReportPlot(LAYERS_PLOT, [e.node for e in in_order],
                                [{"name": "cosine distance",
                                  "values": [e.cosine_distance for e in in_order]}],
                                kind="line", y_label="1 - cosine similarity"))
    return ToolReport(tool="quantize", title=f"Quantize {source.name}: {description}",
                      figures=figures, tables=tables, plots=plots, outputs=[str(target)],
                      warnings=warnings)


def _models_table(source: Path, target: Path, sizes: tuple[int, int], c: Comparison) -> ReportTable:
    rows = []
    for name, size, accuracy, latency in ((source.name, sizes[0], c.accuracy_fp32, c.latency_fp32),
                                          (target.name, sizes[1], c.accuracy_quantized,
                                           c.latency_quantized)):
        rows.append([name, size, None if accuracy is None else round(accuracy, 3),
                     None if not latency else round(latency["p50"], 4),
                     None if not latency else round(latency["p90"], 4)])
    return ReportTable(MODELS_TABLE, ["model", "size (bytes)", "accuracy (%)",
                                      "latency p50 (ms)", "latency p90 (ms)"], rows)


def _advice(mode: str, figures: dict, layers: list[LayerError], saturating: bool) -> list[str]:
    advice = []
    worst = [e.node for e in layers if e.op_type != "(input)"][:WORST_SHOWN]
    drop = figures.get("accuracy_drop")
    if drop is not None and drop > ACCURACY_DROP_WARNING:
        hint = (f" or keep the worst layers in float (--exclude-nodes {','.join(worst)})"
                if worst else "")
        # Where the kernels saturate, calibration cannot win back what the arithmetic loses.
        first = "measure it again with --reduce-range, then " if saturating else ""
        advice.append(f"accuracy dropped by {drop:g} points: {first}try --calibration-method "
                      f"Entropy or Percentile, more --calibration-samples{hint}")
    ratio = figures.get("latency_ratio")
    if ratio is not None and ratio > SLOWER_RATIO:
        why = ("in a small model the time goes to running each operator more than to "
               "arithmetic, and int8 pays off in larger layers" if mode == "static"
               else "static int8 is usually the fastest mode on CPUs")
        advice.append(f"the quantized model is slower than the float one on this CPU "
                      f"(latency ratio {ratio:g}); {why}")
    return advice

"""The Sparsify report: headline figures, the table of sparsity per layer and its chart."""

from __future__ import annotations

from pathlib import Path

from workbench.modeltools.measure import agreement
from workbench.modeltools.pruning.evaluate import Measurement
from workbench.modeltools.report import ReportPlot, ReportTable, ToolReport

MAGNITUDE_COLUMNS = ["layer", "type", "weights", "zeros", "sparsity %"]
CHANNEL_COLUMNS = ["layer", "type", "parameters before", "parameters after", "sparsity %",
                   "input channels", "output channels"]
TABLE_TITLE = "Sparsity per layer"


def pruning_report(source: Path, method: str, scope: str, sparsity: float, rows: list[list],
                   parameters: tuple[int, int, int], before: Measurement, after: Measurement,
                   finetune_epochs: int, final_loss: float | None,
                   evaluation: tuple[int, str | None], outputs: list[Path],
                   warnings: list[str]) -> ToolReport:
    """The report of one run. ``parameters`` is (before, after, not zero after); ``rows`` are
    magnitude rows (MAGNITUDE_COLUMNS) or channel rows (CHANNEL_COLUMNS) as ``method`` says;
    ``evaluation`` is (samples, where they came from)."""
    count_before, count_after, nonzero_after = parameters
    figures: dict = {"method": method}
    if method == "magnitude":
        figures["scope"] = scope
    figures.update({
        "target_sparsity": round(100.0 * sparsity, 2),
        "sparsity": round(100.0 * (1.0 - nonzero_after / max(1, count_before)), 2),
        "parameters_before": count_before,
        "parameters_after": count_after,
        "nonzero_parameters_after": nonzero_after,
        "accuracy_before": _rounded(before.accuracy),
        "accuracy_after": _rounded(after.accuracy),
        "accuracy_drop": (None if before.accuracy is None or after.accuracy is None
                          else round(before.accuracy - after.accuracy, 3)),
        "agreement": (None if before.logits is None or after.logits is None
                      else round(agreement(after.logits, before.logits), 3)),
        "size_bytes_before": before.size_bytes,
        "size_bytes_after": after.size_bytes,
        "size_ratio": round(after.size_bytes / max(1, before.size_bytes), 4),
        "compressed_size_ratio": round(after.compressed_bytes / max(1, before.compressed_bytes), 4),
        "latency_p50_ms_before": _rounded(before.latency_p50_ms, 4),
        "latency_p50_ms_after": _rounded(after.latency_p50_ms, 4),
        "latency_ratio": (None if not before.latency_p50_ms or after.latency_p50_ms is None
                          else round(after.latency_p50_ms / before.latency_p50_ms, 4)),
        "finetune_epochs": finetune_epochs,
        "final_loss": None if final_loss is None else round(final_loss, 5),
        "evaluation_samples": evaluation[0],
        "evaluation_data": evaluation[1],
    })
    columns = MAGNITUDE_COLUMNS if method == "magnitude" else CHANNEL_COLUMNS
    where = columns.index("sparsity %")
    plot = ReportPlot(TABLE_TITLE, [str(r[0]) for r in rows],
                      [{"name": "sparsity %", "values": [float(r[where]) for r in rows]}],
                      kind="bar", y_label="%")
    what = "channels removed" if method == "channels" else f"{scope} magnitude"
    return ToolReport(
        tool="sparsify", title=f"Sparsify {source.name}: {what}, {100.0 * sparsity:g} %",
        figures=figures, tables=[ReportTable(TABLE_TITLE, list(columns), rows)], plots=[plot],
        outputs=[str(p) for p in outputs], warnings=list(warnings))


def _rounded(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)

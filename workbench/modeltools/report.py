"""What a tool run produces besides its files: headline figures, tables, a plot, warnings.

One ``ToolReport`` serves the CLI (``--json`` prints ``to_json()``, a terminal gets the tables),
the tool window (its result table and plot) and the Markdown / CSV exports.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from typing import Any
from workbench.platform.byte_sizes import format_size  # noqa: F401  (the reports' sizes)


@dataclass
class ReportTable:
    """A table of the report: ``columns`` are headers, each row has one cell per column
    (numbers stay numbers so a widget can sort them and the JSON keeps them exact)."""

    title: str
    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"title": self.title, "columns": list(self.columns), "rows": [list(r) for r in self.rows]}

    @classmethod
    def from_json(cls, data: dict) -> "ReportTable":
        return cls(data["title"], list(data["columns"]), [list(r) for r in data.get("rows", [])])

    def to_csv(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(self.columns)
        writer.writerows(self.rows)
        return out.getvalue()

    def to_markdown(self) -> str:
        lines = ["| " + " | ".join(self.columns) + " |",
                 "| " + " | ".join("---" for _ in self.columns) + " |"]
        for row in self.rows:
            lines.append("| " + " | ".join(format_cell(c).replace("|", "\\|") for c in row) + " |")
        return "\n".join(lines)


@dataclass
class ReportPlot:
    """A small chart: ``kind`` is "bar" (one bar per category and series) or "line";
    each series is ``{"name": str, "values": [float, ...]}`` over ``categories``."""

    title: str
    categories: list[str]
    series: list[dict]
    kind: str = "bar"
    y_label: str = ""

    def to_json(self) -> dict:
        return {"title": self.title, "categories": list(self.categories),
                "series": [dict(s) for s in self.series], "kind": self.kind, "y_label": self.y_label}

    @classmethod
    def from_json(cls, data: dict) -> "ReportPlot":
        return cls(data["title"], list(data["categories"]), [dict(s) for s in data["series"]],
                   data.get("kind", "bar"), data.get("y_label", ""))


@dataclass
class ToolReport:
    """The result of one tool run.

    ``figures`` are the headline numbers by name (``max_abs_diff``, ``size_ratio``, ...), in the
    order they matter; ``outputs`` the absolute paths of the files written (the first is the
    produced model, if any).
    """

    tool: str
    title: str
    figures: dict[str, Any] = field(default_factory=dict)
    tables: list[ReportTable] = field(default_factory=list)
    plots: list[ReportPlot] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def table(self, title: str) -> ReportTable:
        for table in self.tables:
            if table.title == title:
                return table
        raise KeyError(title)

    def to_json(self) -> dict:
        return {"tool": self.tool, "title": self.title, "figures": dict(self.figures),
                "tables": [t.to_json() for t in self.tables],
                "plots": [p.to_json() for p in self.plots],
                "outputs": list(self.outputs), "warnings": list(self.warnings)}

    @classmethod
    def from_json(cls, data: dict) -> "ToolReport":
        return cls(tool=data["tool"], title=data["title"], figures=dict(data.get("figures", {})),
                   tables=[ReportTable.from_json(t) for t in data.get("tables", [])],
                   plots=[ReportPlot.from_json(p) for p in data.get("plots", [])],
                   outputs=list(data.get("outputs", [])), warnings=list(data.get("warnings", [])))

    def to_markdown(self) -> str:
        parts = [f"# {self.title}", ""]
        if self.figures:
            parts += [f"- **{name}**: {format_cell(value)}" for name, value in self.figures.items()]
            parts.append("")
        for table in self.tables:
            parts += [f"## {table.title}", "", table.to_markdown(), ""]
        if self.warnings:
            parts += ["## Warnings", ""] + [f"- {w}" for w in self.warnings] + [""]
        if self.outputs:
            parts += ["## Files written", ""] + [f"- `{p}`" for p in self.outputs] + [""]
        return "\n".join(parts)

    def to_text(self) -> str:
        """The report as a terminal shows it: figures as people read them ("Size (fp32)  164.5
        KB"), then each table aligned in columns. ``to_json`` keeps the raw names and values."""
        lines = [self.title]
        labels = {name: figure_label(name) for name in self.figures}
        width = max((len(label) for label in labels.values()), default=0)
        lines += [f"  {labels[name].ljust(width)}  {format_figure(name, value)}"
                  for name, value in self.figures.items()]
        for table in self.tables:
            lines += ["", table.title]
            cells = [table.columns] + [[format_cell(c) for c in row] for row in table.rows]
            widths = [max(len(str(row[i])) for row in cells) for i in range(len(table.columns))]
            for row in cells:
                lines.append("  " + "  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
        lines += [f"warning: {w}" for w in self.warnings]
        lines += [f"wrote {p}" for p in self.outputs]
        return "\n".join(lines)


def format_cell(value: Any) -> str:
    """A cell as people read it: floats with 4 significant digits (tiny ones in e-notation)."""
    if isinstance(value, bool) or value is None:
        return "–" if value is None else ("yes" if value else "no")
    if isinstance(value, float):
        if value != 0 and abs(value) < 1e-3:
            return f"{value:.2e}"
        return f"{value:.4g}"
    return str(value)


# Words of a figure's name spelled as people write them.
ACRONYMS = {"macs": "MACs", "onnx": "ONNX", "mnn": "MNN", "cpu": "CPU", "gpu": "GPU", "ir": "IR",
            "fp32": "fp32", "fp16": "fp16", "bf16": "bf16", "int8": "int8", "uint8": "uint8",
            "int4": "int4", "p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "kb": "KB",
            "mb": "MB", "gb": "GB", "ms": "ms", "csv": "CSV", "npz": "npz", "qdq": "QDQ"}
# Words naming a figure's unit: the value shows the unit, so the label leaves it out.
UNIT_WORDS = frozenset({"bytes", "ms", "kb", "mb", "gb", "pct", "percent", "seconds"})
PERCENT_WORDS = frozenset({"accuracy", "agreement", "sparsity", "pct", "percent"})
# A size named ``*_kb`` is in KiB (the tools divide bytes by 1024).
SIZE_SCALES = {"kb": 1024, "mb": 1024 ** 2, "gb": 1024 ** 3}


def figure_label(name: str) -> str:
    """A figure's name as a label: ``max_abs_diff`` → "Max abs diff", ``cpu_int8_instructions``
    → "CPU int8 instructions". The unit goes (the value carries it) and what follows it becomes
    a qualifier: ``size_bytes_fp32`` → "Size (fp32)", ``latency_p50_ms_before`` → "Latency p50
    (before)"."""
    words = [w for w in str(name).split("_") if w]
    if not words:
        return str(name)
    qualifier: list[str] = []
    for index, word in enumerate(words):
        if index and word.lower() in UNIT_WORDS:
            words, qualifier = words[:index], words[index + 1:]
            break
    spelled = [ACRONYMS.get(w.lower(), w) for w in words]
    first = spelled[0]
    if words[0].lower() not in ACRONYMS:
        spelled[0] = first[:1].upper() + first[1:]
    label = " ".join(spelled)
    if qualifier:
        label += " (" + " ".join(ACRONYMS.get(w.lower(), w) for w in qualifier) + ")"
    return label


def format_figure(name: str, value: Any) -> str:
    """A figure's value with the unit its name tells: sizes (``*_bytes``, ``size*``, ``*_kb``)
    as "164.5 KB", times (``*_ms``) as "0.0213 ms", accuracy, agreement, sparsity and
    ``*_percent`` as "98.9 %" (a drop of them in points), ratios as "0.316×", whole numbers with
    thousands separators ("40,506"), lists joined with commas."""
    if isinstance(value, (list, tuple)):
        return ", ".join(format_figure(name, v) for v in value) or "–"
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return format_cell(value)
    if isinstance(value, float) and not math.isfinite(value):
        return format_cell(value)
    words = [w for w in str(name).lower().split("_") if w]
    if "ratio" in words:
        return f"{value:.3g}×"
    scale = next((SIZE_SCALES[w] for w in words if w in SIZE_SCALES), None)
    if scale is not None or "bytes" in words or words[:1] == ["size"]:
        return format_size(value * (scale or 1))
    if "ms" in words:
        return f"{_significant(value)} ms"
    if "seconds" in words:
        return f"{_significant(value)} s"
    if PERCENT_WORDS & set(words):
        number = _percent_number(value)
        return f"{number} points" if "drop" in words else f"{number} %"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) >= 1e4):
        return f"{int(value):,}"
    return format_cell(value)


def _significant(value: float) -> str:
    """Three significant digits, whole numbers from 100 up ("0.0213", "4.74", "1,534")."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _percent_number(value: float) -> str:
    if float(value).is_integer():
        return f"{value:.0f}"
    if 0 < abs(value) < 0.1:
        return f"{value:.2g}"
    return f"{value:.1f}"

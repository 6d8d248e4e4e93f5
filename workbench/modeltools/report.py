"""What a tool run produces besides its files: headline figures, tables, a plot, warnings.

One ``ToolReport`` serves the CLI (``--json`` prints ``to_json()``, a terminal gets the tables),
the tool window (its result table and plot) and the Markdown / CSV exports.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Any


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
        """The report as a terminal shows it: figures, then each table aligned in columns."""
        lines = [self.title]
        width = max((len(n) for n in self.figures), default=0)
        lines += [f"  {name.ljust(width)}  {format_cell(value)}" for name, value in self.figures.items()]
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

"""The table of model versions: number, dataset version, metrics, size, aliases, pin, devices
and time, the newest first; a version whose files are not as recorded carries a warning icon
whose tooltip says what is wrong."""

from __future__ import annotations

from PySide6.QtWidgets import QStyle, QWidget

from workbench.qt.version_table import TableCell, VersionTable
from workbench.registry.models import ModelVersion
from workbench.registry.widgets.version_rows import (
    dataset_version_text,
    device_checks,
    format_created,
    format_metric,
    format_size,
    metric_value,
    verified_text,
    verified_tooltip,
)

LEADING_COLUMNS = ("Version", "Dataset")
TRAILING_COLUMNS = ("Size", "Aliases", "Pinned", "Verified on", "Created")


class VersionsTable(VersionTable):
    """One row a version, keyed by its number; ``show_versions`` fills it, keeping the selected
    version selected."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__("registry-versions-table", sortable=True, parent=parent)

    def show_versions(self, versions: list[ModelVersion], metrics: list[str], project_metric: str,
                      mode: str, problems: dict[int, list[str]]) -> None:
        """Fill the table: ``metrics`` get a column each (``project_metric`` first, its best
        value in bold by ``mode``), ``problems`` by version number become warning icons."""
        best = _best(versions, project_metric, mode)
        warning = self.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning)
        rows = [(version.number, _cells(version, metrics, problems.get(version.number, []), warning,
                                        bold=version.number in best))
                for version in sorted(versions, key=lambda v: v.number, reverse=True)]
        tooltips = {name: f"{name}: the project's metric ([registry] metric, {mode} is best)"
                    if name == project_metric else f"{name} at the end of the version's run" for name in metrics}
        self.show_rows([*LEADING_COLUMNS, *metrics, *TRAILING_COLUMNS], rows, stretch="Verified on",
                       right_aligned=[*metrics, "Size"], centred=["Pinned"], header_tooltips=tooltips)


def _cells(version: ModelVersion, metrics: list[str], problems: list[str], warning, bold: bool) -> list[TableCell]:
    checks = device_checks(version)
    created = str(version.info.get("created", ""))
    who = version.info.get("created_by")
    run = (version.info.get("run") or {}).get("id") if isinstance(version.info.get("run"), dict) else None
    cells = [
        TableCell(version.name, version.number, "\n".join(f"⚠ {problem}" for problem in problems)
                  or (f"From run {run}" if run else ""), icon=warning if problems else None),
        TableCell(dataset_version_text(version), dataset_version_text(version) or None),
    ]
    for index, name in enumerate(metrics):
        value = metric_value(version, name)
        # The project's metric comes first: its best value is the one in bold.
        cells.append(TableCell(format_metric(value), value, f"{name} = {value!r}" if value is not None else "",
                               bold=bold and index == 0))
    cells += [
        TableCell(format_size(version.size), version.size, "\n".join(
            f"{item.name}: {format_size(item.size)} ({item.role}"
            + (f", {item.stored}" if item.stored else "") + ")" for item in version.files)),
        TableCell(", ".join(version.aliases), ", ".join(version.aliases) or None),
        TableCell("✓" if version.pinned else "", 1 if version.pinned else None,
                  "Pinned: retention keeps it" if version.pinned else ""),
        TableCell(verified_text(checks), verified_text(checks) or None, verified_tooltip(checks)),
        TableCell(format_created(created), created or None, f"{created}" + (f" by {who}" if who else "")),
    ]
    return cells


def _best(versions: list[ModelVersion], metric: str, mode: str) -> set[int]:
    values = [(metric_value(version, metric), version.number) for version in versions] if metric else []
    values = [(value, number) for value, number in values if value is not None]
    if len(values) < 2:
        return set()
    best = max(value for value, _ in values) if mode == "max" else min(value for value, _ in values)
    return {number for value, number in values if value == best}

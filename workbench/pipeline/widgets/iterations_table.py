"""The table of iterations, the newest first: version, state (with the step it stopped at),
dataset, the headline metrics, gates (passed, or which failed and by how much), model version,
when it started and how long it took."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from workbench.pipeline.iterations import DONE, FAILED, RUNNING, STOPPED, Iteration
from workbench.pipeline.widgets.iteration_rows import (dataset_text, format_metric, format_moment, format_seconds,
                                                       gates_text, gates_tooltip, iteration_metrics,
                                                       iteration_seconds, state_text)
from workbench.qt.version_table import TableCell, VersionTable

LEADING_COLUMNS = ("Version", "State", "Dataset")
TRAILING_COLUMNS = ("Gates", "Model", "Started", "Took")
STATE_COLOURS = {DONE: "SUCCESS_TEXT", FAILED: "ERROR_TEXT", STOPPED: "WARNING_TEXT", RUNNING: "LINK"}


class IterationsTable(VersionTable):
    """One row an iteration, keyed by its version (NNNN); ``show_iterations`` fills it, keeping
    the selected one selected (the newest when it is gone)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__("pipeline-iterations-table", sortable=False, parent=parent)

    def show_iterations(self, iterations: list[Iteration], metrics: list[str]) -> None:
        """Fill the table, newest first, with a column for each of ``metrics``."""
        newest_first = sorted(iterations, key=lambda it: int(it.version), reverse=True)
        rows = [(iteration.version, _cells(iteration, metrics)) for iteration in newest_first]
        # The gates say which failed and by how much: whole, the last column taking what is left.
        if not self.show_rows([*LEADING_COLUMNS, *metrics, *TRAILING_COLUMNS], rows, stretch="Took",
                              right_aligned=[*metrics, "Took"]) and rows:
            self.selectRow(0)

    def selected_version(self) -> str | None:
        return self.selected_key()

    def select_version(self, version: str) -> bool:
        return self.select_key(version)

    def versions_shown(self) -> list[str]:
        """The iterations' versions, top row first."""
        return self.keys_shown()


def _cells(iteration: Iteration, metrics: list[str]) -> list[TableCell]:
    values = iteration_metrics(iteration)
    gates_colour = ""
    if iteration.gates:
        gates_colour = "SUCCESS_TEXT" if all(gate.get("passed") for gate in iteration.gates) else "ERROR_TEXT"
    return [
        TableCell(iteration.version, tooltip=iteration.error),
        TableCell(state_text(iteration), tooltip=iteration.error, colour=STATE_COLOURS.get(iteration.state, "")),
        TableCell(dataset_text(iteration)),
        *(TableCell(format_metric(values.get(name)), tooltip=f"{name} = {values[name]!r}" if name in values else "")
          for name in metrics),
        TableCell(gates_text(iteration), tooltip=gates_tooltip(iteration), colour=gates_colour),
        TableCell(str(iteration.output("model_version") or "")),
        TableCell(format_moment(iteration.started_at)),
        TableCell(format_seconds(iteration_seconds(iteration))),
    ]

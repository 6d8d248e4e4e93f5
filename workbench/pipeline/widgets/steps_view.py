"""The steps of the selected iteration: a row a step (state, when it started, how long it took,
what it made) and, below, the chosen step's details: its parameters, outputs and error, and for
a training step the end of its run's log (the run's id names its folder under ``runs/``)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (QAbstractItemView, QHeaderView, QPlainTextEdit, QSplitter, QTableWidget,
                               QTableWidgetItem, QVBoxLayout, QWidget)

from workbench.pipeline.iterations import DONE, FAILED, RUNNING, SKIPPED, Iteration, StepState
from workbench.pipeline.widgets.iteration_rows import (format_moment, format_seconds, log_tail, step_details_text,
                                                       step_outputs_text)
from workbench.qt import theme

COLUMNS = ("#", "Step", "State", "Started", "Took", "Made")
STATE_COLOURS = {DONE: "SUCCESS_TEXT", FAILED: "ERROR_TEXT", RUNNING: "LINK", SKIPPED: "MUTED_TEXT"}
RUN_LOGS = ("stdout.log", "stderr.log")
NOTHING_SELECTED = "Select an iteration to see its steps."


class StepsView(QWidget):
    """One iteration's steps and the chosen step's details."""

    def __init__(self, project_root: Path, parent: QWidget | None = None):
        super().__init__(parent)
        self.project_root = Path(project_root)
        self.iteration: Iteration | None = None
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("pipeline-steps-table")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setShowGrid(False)
        self.table.setWordWrap(False)
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 8)
        self.table.horizontalHeader().setHighlightSections(False)
        self.table.itemSelectionChanged.connect(self._show_details)
        self.details = QPlainTextEdit()
        self.details.setObjectName("pipeline-step-details")
        self.details.setReadOnly(True)
        self.details.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.details.setPlaceholderText(NOTHING_SELECTED)
        font = theme.editor_font()
        font.setPointSizeF(max(8.0, font.pointSizeF() - 1))
        self.details.setFont(font)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.table)
        splitter.addWidget(self.details)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(splitter)
        theme.theme_changes().sig_theme_changed.connect(self._theme_changed)

    def show_iteration(self, iteration: Iteration | None) -> None:
        """Show ``iteration``'s steps; the chosen step stays chosen (else the one that failed,
        is running, or the last)."""
        chosen = self.selected_step()
        same = self.iteration is not None and iteration is not None and self.iteration.version == iteration.version
        self.iteration = iteration
        steps = iteration.steps if iteration is not None else []
        self.table.setRowCount(len(steps))
        for row, step in enumerate(steps):
            cells = (str(step.index + 1), step.tool, step.state, format_moment(step.started_at),
                     format_seconds(step.seconds), step_outputs_text(step))
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if column == COLUMNS.index("Made") and step.error:
                    item.setText(step.error if not text else f"{text}; {step.error}")
                    item.setToolTip(step.error)
                self.table.setItem(row, column, item)
        self._colour_states()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(COLUMNS.index("Made"), QHeaderView.ResizeMode.Stretch)
        if not steps:
            self.details.setPlainText("")
            return
        if not (same and chosen is not None and chosen < len(steps)):
            chosen = _step_to_show(iteration)
        self.table.blockSignals(True)
        self.table.selectRow(chosen)
        self.table.blockSignals(False)
        self._show_details()

    def selected_step(self) -> int | None:
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        return rows[0].row() if rows else None

    def select_step(self, index: int) -> None:
        self.table.selectRow(index)

    def details_text(self, step: StepState) -> str:
        """What the details show of ``step``: the record's, then its run's log for a training step."""
        text = step_details_text(step)
        run_id = step.outputs.get("run_id")
        if step.tool == "train" and run_id:
            text += f"\n\nRun: {run_id}"
            for name in RUN_LOGS:
                log = self.project_root / "runs" / str(run_id) / name
                tail = log_tail(log)
                if tail:
                    text += f"\n\n— {log.relative_to(self.project_root)} (its end) —\n{tail}"
        return text

    def _show_details(self) -> None:
        index = self.selected_step()
        if self.iteration is None or index is None or index >= len(self.iteration.steps):
            self.details.setPlainText("")
            return
        scrolled = self.details.verticalScrollBar().value()
        self.details.setPlainText(self.details_text(self.iteration.steps[index]))
        self.details.verticalScrollBar().setValue(scrolled)

    def _theme_changed(self, _theme: str) -> None:
        self._colour_states()

    def _colour_states(self) -> None:
        steps = self.iteration.steps if self.iteration is not None else []
        for row, step in enumerate(steps):
            item = self.table.item(row, COLUMNS.index("State"))
            if item is not None and step.state in STATE_COLOURS:
                item.setForeground(QBrush(QColor(theme.colour(STATE_COLOURS[step.state]))))
            made = self.table.item(row, COLUMNS.index("Made"))
            if made is not None and step.error:
                made.setForeground(QBrush(QColor(theme.colour("ERROR_TEXT"))))


def _step_to_show(iteration: Iteration) -> int:
    for step in iteration.steps:
        if step.state in (RUNNING, FAILED):
            return step.index
    done = [step.index for step in iteration.steps if step.state == DONE]
    return done[-1] if done else 0

"""The status-bar button that says a run is going (with its latest step) and opens the Runs
panel; hidden when no run is active."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QToolButton

from workbench.training.run_text import state_text
from workbench.training.widgets.runs_table import state_icon
from workbench.training.widgets.session import TrainingSession


class ActiveRunsButton(QToolButton):
    """"Training: <run> running" (or "Training: 2 runs") while runs are active."""

    def __init__(self, session: TrainingSession, show_runs: Callable[[], None]):
        super().__init__()
        self.setAutoRaise(True)
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.setIcon(state_icon("running"))
        self.clicked.connect(lambda _checked=False: show_runs())
        session.sig_runs_changed.connect(self._on_runs_changed)
        self.hide()

    def _on_runs_changed(self, rows) -> None:
        active = [row for row in rows if row.info.is_active]
        if not active:
            self.hide()
            return
        if len(active) == 1:
            info = active[0].info
            self.setText(f"Training: {info.id} {state_text(info)}")
        else:
            self.setText(f"Training: {len(active)} runs")
        self.setToolTip("Show the Runs panel")
        self.show()

"""A capability's dock panel in widget tests, as the Registry's and the Pipeline's tests show
theirs: shown over a task runner of its own (waited for when the test ends), an operation run to
its end, and pictures saved where WORKBENCH_SCREENSHOTS says."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import pytest

SHOTS = Path(os.environ.get("WORKBENCH_SCREENSHOTS", "") or "/tmp/workbench-screenshots")
TASKS_WAIT_MS = 30_000


@pytest.fixture
def show_panel(qtbot):
    """``show_panel(build, size) -> panel``: ``build(tasks)`` makes the panel over a TaskRunner
    of its own; the panel is shown at ``size`` and refreshed. The tasks are waited for when the
    test ends, so none outlives its temporary project."""
    from workbench.qt.tasks import TaskRunner

    runners = []

    def show(build: Callable, size: tuple[int, int]):
        tasks = TaskRunner()
        runners.append(tasks)
        panel = build(tasks)
        qtbot.addWidget(panel)
        panel.resize(*size)
        panel.show()
        panel.refresh()
        return panel

    yield show
    for tasks in runners:
        tasks.wait(TASKS_WAIT_MS)


def finish(qtbot, panel, start):
    """Run ``start()`` (a panel action) and wait until it is over; its Operation."""
    with qtbot.waitSignal(panel.sig_operation_finished) as blocker:
        start()
    return blocker.args[0]


def screenshot(widget, name: str) -> Path:
    """Save a picture of ``widget`` as ``<SHOTS>/<name>.png``; its path."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    widget.grab().save(str(path))
    return path

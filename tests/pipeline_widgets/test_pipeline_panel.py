"""The Pipeline panel over iteration records on disk: the table, the trend plot, the steps,
Start launching the detached command (and a real one making its record), Stop's request, errors
shown and not raised, and changes made by other processes followed."""

from __future__ import annotations

import json
import os
import socket
import time

import pytest

from tests.pipeline_widgets.conftest import (TIMEOUT_MS, LaunchedCommands, finish, iteration_record, screenshot,
                                             write_iteration)


def test_iterations_are_rows_newest_first_with_dataset_metrics_gates_and_state(pipeline_project, make_panel):
    panel, errors = make_panel(pipeline_project)
    table = panel.table
    assert table.versions_shown() == ["0002", "0001", "0000"]
    assert table.cell_text("0001", "Dataset") == "0001 · 1,200 samples"
    assert table.cell_text("0001", "val_acc") == "0.8800"
    assert table.cell_text("0001", "Gates") == "✓ 1 passed"
    assert table.cell_text("0002", "Gates") == "✗ max_size_mb by 0.3 (1 of 1 failed)"
    assert table.cell_text("0002", "State") == "failed at 4 (gate)"
    assert table.cell_text("0001", "State") == "done"
    assert errors == []


def test_the_trend_plot_has_a_point_per_iteration(pipeline_project, make_panel, qtbot):
    panel, _errors = make_panel(pipeline_project)
    assert panel.plot.chosen_metric == "val_acc"
    qtbot.waitUntil(lambda: len(panel.plot.plotted()[0]) == 3, timeout=TIMEOUT_MS)
    assert panel.plot.plotted() == ([0.0, 1.0, 2.0], [0.81, 0.88, 0.86])


def test_the_selected_iterations_steps_and_a_training_steps_log(pipeline_project, make_panel):
    panel, _errors = make_panel(pipeline_project)
    assert panel.selected_iteration().version == "0002"
    steps = panel.steps
    assert [steps.table.item(row, 1).text() for row in range(steps.table.rowCount())] == \
        ["dataset", "train", "convert", "gate", "deploy"]
    assert steps.table.item(4, 2).text() == "skipped"
    # The failed step is the one shown, with its gate's amount.
    assert steps.selected_step() == 3
    assert "by 0.300 MB" in steps.details.toPlainText()
    panel.select_iteration("1")
    steps.select_step(1)
    details = steps.details.toPlainText()
    assert "Run: run-0001" in details and "training done" in details and "epochs = 1" in details
    assert "model version 0001" in steps.table.item(1, 5).text()


def test_start_launches_the_pipeline_command_detached(pipeline_project, make_panel, qtbot):
    launched = LaunchedCommands()
    panel, errors = make_panel(pipeline_project, launcher=launched)
    operation = finish(qtbot, panel, panel.start)
    assert operation.succeeded and errors == []
    module, args, log, cwd = launched.asked[-1]
    from workbench.registry.store import os_user

    window_start = ["--trigger-kind", "manual", "--trigger-reason", f"Start in the window by {os_user()}"]
    assert (module, args, cwd) == ("workbench", ["pipeline", "start", str(pipeline_project), *window_start],
                                   pipeline_project)
    assert log.parent == pipeline_project / ".workbench" / "pipeline"
    assert "in a process of its own" in panel.status_line.text()
    panel.select_iteration("2")
    finish(qtbot, panel, panel.resume)
    assert launched.asked[-1][1] == ["pipeline", "resume", str(pipeline_project), "--trigger-kind", "manual",
                                     "--trigger-reason", f"Resume in the window by {os_user()}", "--version", "0002"]


def test_a_real_start_runs_an_iteration_in_its_own_process_and_the_panel_follows_it(
        pipeline_project, make_panel, qtbot):
    panel, errors = make_panel(pipeline_project)
    finish(qtbot, panel, panel.start)
    # The gate finds no accuracy in an iteration that trained nothing: the record says so.
    qtbot.waitUntil(lambda: "0003" in panel.table.versions_shown()
                    and panel.table.cell_text("0003", "State") == "failed at 1 (gate)", timeout=TIMEOUT_MS)
    assert panel.launch.log.is_file()
    assert errors == []


def test_stop_writes_the_stop_request_of_the_running_iteration(pipeline_project, make_panel, qtbot):
    from workbench.pipeline.iterations import IterationStore, PipelineLock

    running = iteration_record("0003", 0.9, 1800, True, time.time())
    running.state, running.pid, running.host, running.ended_at = "running", os.getpid(), socket.gethostname(), None
    running.steps[1].state, running.steps[1].ended_at = "running", None
    for step in running.steps[2:]:
        step.state, step.started_at, step.ended_at, step.outputs = "pending", None, None, {}
    write_iteration(pipeline_project, running)
    PipelineLock(IterationStore(pipeline_project / "registry")).acquire("0003")
    panel, errors = make_panel(pipeline_project)
    assert panel.table.cell_text("0003", "State") == "running: 2/5 train"
    assert panel.buttons["stop"].isEnabled() and not panel.buttons["start"].isEnabled()
    operation = finish(qtbot, panel, panel.stop)
    assert operation.succeeded and errors == []
    assert (pipeline_project / "registry" / "pipeline" / "iteration_0003.stop").is_file()


def test_errors_are_shown_on_the_status_line_and_in_the_window_not_raised(pipeline_project, make_panel, qtbot):
    from workbench.pipeline.iterations import IterationStore, PipelineLock

    launched = LaunchedCommands()
    panel, errors = make_panel(pipeline_project, launcher=launched)
    # Stop with nothing running.
    operation = finish(qtbot, panel, panel.stop)
    assert operation.error is not None and "is not running" in panel.status_line.text()
    # A second iteration while another process holds the lock.
    lock = PipelineLock(IterationStore(pipeline_project / "registry"))
    lock.acquire("0003")
    try:
        finish(qtbot, panel, panel.start)
        assert "another pipeline iteration runs on this project" in errors[-1]
    finally:
        lock.release()
    # An iteration that is done.
    finish(qtbot, panel, lambda: panel.resume("0001"))
    assert "is done" in errors[-1]
    # A broken [pipeline].
    (pipeline_project / "workbench.toml").write_text('[project]\nname = "loop"\n\n[[pipeline.steps]]\ntool = "gat"\n',
                                                     encoding="utf-8")
    finish(qtbot, panel, panel.start)
    assert "did you mean gate" in errors[-1] and "line 5" in panel.status_line.text()
    assert launched.asked == []


def test_changes_written_by_another_process_appear(pipeline_project, make_panel, qtbot):
    panel, _errors = make_panel(pipeline_project)
    write_iteration(pipeline_project, iteration_record("0003", 0.91, 1800, True, time.time()))
    qtbot.waitUntil(lambda: panel.table.versions_shown()[:1] == ["0003"], timeout=TIMEOUT_MS)
    # An iteration rewritten in place (its state moved on) is followed too.
    path = pipeline_project / "registry" / "pipeline" / "iteration_0002.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    record["state"], record["error"], record["failed_step"] = "stopped", "stopped on request", 3
    path.write_text(json.dumps(record), encoding="utf-8")
    qtbot.waitUntil(lambda: panel.table.cell_text("0002", "State") == "stopped at 4 (gate)", timeout=TIMEOUT_MS)


@pytest.mark.parametrize("theme_name", ["light", "dark"])
def test_pictures_of_the_panel(pipeline_project, make_panel, qtbot, theme_name):
    from workbench.qt import theme

    theme.apply_theme(theme_name)
    try:
        panel, _errors = make_panel(pipeline_project)
        qtbot.waitUntil(lambda: len(panel.plot.plotted()[0]) == 3, timeout=TIMEOUT_MS)
        assert screenshot(panel, f"pipeline-panel-{theme_name}").stat().st_size > 0
    finally:
        theme.apply_theme("light")

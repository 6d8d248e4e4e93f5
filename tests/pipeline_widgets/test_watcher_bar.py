"""The Pipeline panel's trigger watcher line and its buttons, over a real watcher process, and
the selected iteration's "started by" line."""

from __future__ import annotations

import pytest

from tests.pipeline_widgets.conftest import TIMEOUT_MS, iteration_record, screenshot, write_iteration

TRIGGERS = '\n[data]\ntrain = "data/train"\n\n[pipeline.triggers]\nevery = "6h"\n'


@pytest.fixture
def stop_watcher_after():
    from workbench.pipeline.watcher import stop_watcher

    roots = []
    yield roots.append
    for root in roots:
        stop_watcher(root)


def test_the_watcher_line_follows_start_and_stop_watcher(pipeline_project, make_panel, qtbot, stop_watcher_after):
    from workbench.pipeline.watcher import watcher_status

    stop_watcher_after(pipeline_project)
    (pipeline_project / "data" / "train").mkdir(parents=True)
    # The iterations' dataset versions are not the registry's here: a step list of a gate only.
    with open(pipeline_project / "workbench.toml", "a", encoding="utf-8") as stream:
        stream.write(TRIGGERS)
    panel, errors = make_panel(pipeline_project)
    bar = panel.watcher_bar
    assert bar.line_text() == "Trigger watcher: not running"
    assert bar.buttons["start"].isVisible() and bar.buttons["start"].isEnabled()
    assert not bar.buttons["stop"].isVisible()

    with qtbot.waitSignal(bar.sig_watcher_changed, timeout=TIMEOUT_MS) as blocker:
        bar.buttons["start"].click()
    text, failed = blocker.args
    pid = watcher_status(pipeline_project)["pid"]
    assert not failed and text == f"Started the trigger watcher (pid {pid})."
    assert panel.status_line.text() == text and errors == []
    line = bar.line_text()
    assert line.startswith("Trigger watcher: running since ") and f"pid {pid}" in line
    assert "next every in 6h" in line and "started by Start Watcher in the Pipeline panel" in line
    assert bar.buttons["stop"].isVisible() and not bar.buttons["start"].isVisible()
    screenshot(panel, "pipeline-watcher-running")

    with qtbot.waitSignal(bar.sig_watcher_changed, timeout=TIMEOUT_MS) as blocker:
        bar.buttons["stop"].click()
    assert blocker.args == [f"Stopped the trigger watcher (pid {pid}).", False]
    assert bar.line_text().startswith(f"Trigger watcher: not running (the last one, pid {pid}, ended ")
    assert bar.buttons["start"].isVisible() and not watcher_status(pipeline_project)["running"]


def test_without_triggers_the_line_says_so_and_start_watcher_is_off(pipeline_project, make_panel):
    panel, errors = make_panel(pipeline_project)
    bar = panel.watcher_bar
    assert bar.line_text() == "Trigger watcher: none (the project declares no [pipeline.triggers])"
    assert not bar.buttons["start"].isEnabled() and errors == []


def test_a_broken_trigger_shows_its_error_on_the_line(pipeline_project, make_panel):
    with open(pipeline_project / "workbench.toml", "a", encoding="utf-8") as stream:
        stream.write('\n[pipeline.triggers]\nevery = "soon"\n')
    panel, _errors = make_panel(pipeline_project)
    assert panel.watcher_bar.line_text().startswith("Trigger watcher: workbench.toml line ")
    assert "'every'" in panel.watcher_bar.line_text() and not panel.watcher_bar.buttons["start"].isEnabled()


def test_a_watcher_that_failed_on_opening_the_project_shows_why_in_the_error_colour(pipeline_project, make_panel):
    from workbench.pipeline.triggers import ON_OPEN_LOG
    from workbench.qt import theme

    with open(pipeline_project / "workbench.toml", "a", encoding="utf-8") as stream:
        stream.write(TRIGGERS)
    log = pipeline_project / ON_OPEN_LOG
    log.parent.mkdir(parents=True)
    log.write_text("2026-12-02 10:00:00 watcher: Error: registry/pipeline is not writable: Permission denied\n")
    panel, _errors = make_panel(pipeline_project)
    line = panel.watcher_bar.line
    assert panel.watcher_bar.line_text() == ("Trigger watcher: not running; it could not start when the project "
                                            "opened: registry/pipeline is not writable: Permission denied")
    assert theme.colour("ERROR_TEXT") in line.styleSheet() and panel.watcher_bar.buttons["start"].isEnabled()
    screenshot(panel, "pipeline-watcher-failed-on-open")


def test_the_selected_iteration_says_what_started_it(pipeline_project, make_panel, qtbot):
    from workbench.pipeline.iterations import trigger_record

    later = iteration_record("0003", 0.9, 1800, True, 1_700_000_000.0)
    later.trigger = trigger_record("data growth", "126 new samples (10.0 %) since dataset version 0002")
    later.resumes = [trigger_record("resume", "the process running it (pid 4242) was gone")]
    write_iteration(pipeline_project, later)
    panel, _errors = make_panel(pipeline_project)
    panel.select_iteration("3")
    text = panel.started_by.text()
    assert text.startswith("Iteration 0003 started by data growth: 126 new samples (10.0 %) since dataset version "
                           "0002 (")
    assert "; resumed by resume: the process running it (pid 4242) was gone (" in text
    panel.select_iteration("1")  # written before iterations kept their trigger
    assert panel.started_by.text() == "Iteration 0001 started by unknown (recorded before iterations kept their trigger)"

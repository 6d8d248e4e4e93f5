"""A tool window running real jobs (``python -m workbench.modeltools.job``) of real tools:
stages and progress, the report, Cancel, failures shown as one line, the produced model."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, Qt

from tests.app.conftest import is_alive
from workbench.modeltools.params import ToolInvocation
from workbench.modeltools.registry import get_tool
from workbench.modeltools.widgets.result_view import SORT_ROLE
from workbench.modeltools.widgets.tool_window import ToolWindow
from workbench.qt.tasks import TaskRunner

from .conftest import TIMEOUT_MS, screenshot

pytestmark = pytest.mark.slow


@pytest.fixture
def make_window(qtbot, tools, tmp_path):
    settings_file = tmp_path / "tool-windows.ini"

    def make(tool: str, values: dict, project: Path | None = None, job_command=None) -> ToolWindow:
        tasks = TaskRunner()
        window = ToolWindow(get_tool(tool), ToolInvocation(tool, values, str(project) if project else None),
                            job_command=job_command, tasks=tasks,
                            settings=QSettings(str(settings_file), QSettings.Format.IniFormat))
        tasks.setParent(window)
        qtbot.addWidget(window)
        window.show()
        return window

    return make


def run_to_end(qtbot, window: ToolWindow, timeout: int = TIMEOUT_MS) -> str:
    assert window.run() is True
    qtbot.waitUntil(lambda: window.state != "running", timeout=timeout)
    return window.state


@pytest.fixture
def text_file(tmp_path) -> Path:
    path = tmp_path / "work" / "steps.txt"
    path.parent.mkdir()
    path.write_text("count me\n")
    return path


def test_inspect_runs_on_opening_and_ends_with_its_report_in_sortable_tables(qtbot, make_window, tiny_onnx):
    window = make_window("inspect", {"model": str(tiny_onnx)})
    assert window.windowTitle() == "Inspect — tiny.onnx"
    qtbot.waitUntil(lambda: window.state == "running", timeout=TIMEOUT_MS)  # nothing to choose: no Run needed
    qtbot.waitUntil(lambda: window.state != "running", timeout=TIMEOUT_MS)
    assert window.state == "succeeded", window.describe()["log"]
    assert window.form_folded and window.folded_text.full_text == "tiny.onnx  ·  default settings"
    assert window.progress.text() == "Done"
    assert not window.banner.isVisible()
    report = window.report
    assert report.figures["parameters"] == 32
    inputs = next(v for v in window.result_view.table_views if v.report_table.title == "Inputs")
    assert inputs.model().index(0, 0).data() == "x"
    view = next(v for v in window.result_view.table_views if v.model().rowCount() >= 2)
    numeric = next(c for c in range(view.model().columnCount())
                   if all(isinstance(row[c], (int, float)) for row in view.report_table.rows))
    column = [float(row[numeric]) for row in view.report_table.rows]
    view.sortByColumn(numeric, Qt.SortOrder.DescendingOrder)
    shown = [view.model().index(r, numeric).data(SORT_ROLE) for r in range(view.model().rowCount())]
    assert shown == sorted(column, reverse=True)  # as numbers, not as text
    qtbot.wait(50)
    screenshot(window, "tool-window-inspect-report")


def test_the_progress_bar_names_the_stage_and_counts_the_stages(qtbot, make_window, text_file):
    window = make_window("count", {"model": str(text_file), "steps": 40, "delay": 0.05})
    window.run()
    qtbot.waitUntil(lambda: "Counting (2/3)" in window.progress.text(), timeout=TIMEOUT_MS)
    assert window.cancel_button.isEnabled() and not window.run_button.isEnabled()
    assert not window.form.fields["steps"].editor.isEnabled()  # no edits under a running job
    qtbot.waitUntil(lambda: window.state == "succeeded", timeout=TIMEOUT_MS)
    assert "step 40 of 40" in window.log_view.toPlainText()
    assert window.report.figures["steps"] == 40
    assert window.run_button.text() == "Run Again" and window.run_button.isEnabled()
    assert text_file.with_name("steps.count.txt").is_file()


def test_cancel_ends_the_job_process_leaves_no_partial_file_and_run_again_works(qtbot, make_window, text_file):
    output = text_file.with_name("counted.txt")
    window = make_window("count", {"model": str(text_file), "output": str(output), "steps": 2000, "delay": 0.02})
    window.run()
    qtbot.waitUntil(lambda: window.stage_text == "Counting" and window.progress.value() > 340, timeout=TIMEOUT_MS)
    pid = window.runner.pid
    assert any(p.name.endswith(".partial") for p in output.parent.iterdir())
    window.cancel_button.click()
    qtbot.waitUntil(lambda: window.state == "cancelled", timeout=TIMEOUT_MS)
    assert not is_alive(pid)
    assert sorted(p.name for p in output.parent.iterdir()) == ["steps.txt"]
    assert window.progress.text() == "Cancelled" and not window.banner.isVisible()
    assert "Cancelled" in window.log_view.toPlainText()

    window.form.set_values({"steps": 2, "delay": 0.0})
    assert run_to_end(qtbot, window) == "succeeded"
    assert output.read_text().splitlines() == ["1", "2"]


def test_a_job_stuck_in_a_call_that_never_checks_is_killed_after_the_grace_time(qtbot, make_window, text_file):
    window = make_window("count", {"model": str(text_file), "behaviour": "stuck"})
    window.run()
    qtbot.waitUntil(lambda: "stuck in a call" in window.log_view.toPlainText(), timeout=TIMEOUT_MS)
    pid = window.runner.pid
    window.cancel()
    qtbot.waitUntil(lambda: window.state == "cancelled", timeout=TIMEOUT_MS)
    assert not is_alive(pid)
    assert sorted(p.name for p in text_file.parent.iterdir()) == ["steps.txt"]


def test_a_tool_error_is_one_line_in_a_banner_and_a_bug_keeps_its_traceback_in_the_log(qtbot, make_window, text_file):
    window = make_window("count", {"model": str(text_file), "behaviour": "fail"})
    assert run_to_end(qtbot, window) == "failed"
    assert window.banner.isVisible()
    assert window.banner.label.text() == f"{text_file} is not a text file to count; give a .txt file"
    assert window.progress.text() == "Failed"

    window.form.set_values({"behaviour": "bug"})
    assert run_to_end(qtbot, window) == "failed"
    message = window.banner.label.text()
    assert "failed unexpectedly" in message and "\n" not in message and "Traceback" not in message
    assert "Traceback (most recent call last)" in window.log_view.toPlainText()
    screenshot(window, "tool-window-failed")

    window.form.set_values({"behaviour": "none"})
    assert run_to_end(qtbot, window) == "succeeded"
    assert not window.banner.isVisible()


def test_a_produced_model_is_announced_with_its_project_and_other_files_are_not(qtbot, make_window, model_project):
    part = model_project / "notes.txt"
    part.write_text("a\n")
    target = model_project / "exported" / "merged.onnx"
    window = make_window("merge", {"paths": [str(part), str(part)], "output": str(target)}, project=model_project)
    with qtbot.waitSignal(window.sig_model_produced, timeout=TIMEOUT_MS) as produced:
        window.run()
    assert produced.args == [{"path": str(target), "project": str(model_project), "tool": "merge"}]

    announced = []
    window = make_window("count", {"model": str(part)}, project=model_project)
    window.sig_model_produced.connect(announced.append)
    assert run_to_end(qtbot, window) == "succeeded"
    assert announced == []


FAKE_JOB = textwrap.dedent('''\
    import json, sys
    invocation = json.loads(sys.stdin.read())
    def say(**event):
        print(json.dumps(event), flush=True)
    say(event="stage", name="Warm up", index=0, count=2)
    say(event="progress", fraction=0.5)
    print("a library printed this", flush=True)
    say(event="stage", name="Finish", index=1, count=2)
    print("to the log", file=sys.stderr, flush=True)
    say(event="result", report={"tool": invocation["tool"], "title": "Fake done",
                                "figures": {"given": invocation["values"]["model"]}})
''')


def test_the_job_command_can_be_replaced_and_stray_lines_go_to_the_log(qtbot, make_window, tmp_path, text_file):
    script = tmp_path / "fake_job.py"
    script.write_text(FAKE_JOB)
    window = make_window("count", {"model": str(text_file)}, job_command=[sys.executable, str(script)])
    stages = []
    window.runner.sig_stage.connect(lambda name, index, count: stages.append((name, index, count)))
    assert run_to_end(qtbot, window) == "succeeded"
    assert stages == [("Warm up", 0, 2), ("Finish", 1, 2)]
    log = window.log_view.toPlainText()
    assert "a library printed this" in log and "to the log" in log
    assert window.report.title == "Fake done" and window.report.figures["given"] == str(text_file)


def test_running_again_keeps_the_last_report_marked_as_the_previous_runs_until_a_new_one_comes(
        qtbot, make_window, text_file):
    window = make_window("count", {"model": str(text_file), "steps": 2})
    assert run_to_end(qtbot, window) == "succeeded"
    first = window.result_view.report
    assert first.title == "Counted 2 steps" and not window.result_view.shows_previous

    window.form.set_values({"steps": 2000, "delay": 0.02})
    window.run()
    qtbot.waitUntil(lambda: window.stage_text == "Counting", timeout=TIMEOUT_MS)
    assert window.result_view.report is first and window.result_view.shows_previous
    assert window.result_view.previous_note.isVisible()
    assert window.describe()["previous_report_shown"] is True and window.describe()["report"] is None
    window.cancel()
    qtbot.waitUntil(lambda: window.state == "cancelled", timeout=TIMEOUT_MS)
    assert window.result_view.report is first and window.result_view.figures.isVisible()
    assert "the last run cancelled" in window.result_view.previous_note.text()
    screenshot(window, "tool-window-previous-report")

    window.form.set_values({"steps": 3, "delay": 0.0})
    assert run_to_end(qtbot, window) == "succeeded"
    assert window.result_view.report.title == "Counted 3 steps" and not window.result_view.shows_previous


def test_after_a_run_the_form_folds_to_one_line_and_edit_brings_it_back(qtbot, make_window, text_file):
    window = make_window("count", {"model": str(text_file), "steps": 2, "verbose": False})
    form_height = window.splitter.sizes()[0]
    assert run_to_end(qtbot, window) == "succeeded"
    assert window.form_folded and not window.form_scroll.isVisible() and window.folded_bar.isVisible()
    assert window.folded_text.full_text == "steps.txt  ·  Steps: 2  ·  Verbose: off"
    top, report = window.splitter.sizes()
    assert report > 3 * top  # the report has the height now
    qtbot.wait(20)
    screenshot(window, "tool-window-folded-form")
    window.edit_button.click()
    assert not window.form_folded and window.form_scroll.isVisible()
    assert window.splitter.sizes()[0] >= min(form_height, 300)
    window.form.set_values({"steps": 3})
    assert run_to_end(qtbot, window) == "succeeded" and window.form_folded


def test_a_failed_run_unfolds_the_form_and_fixing_the_form_clears_the_banner(qtbot, make_window, text_file):
    window = make_window("count", {"model": str(text_file), "steps": 2})
    assert run_to_end(qtbot, window) == "succeeded" and window.form_folded
    window.form.set_values({"behaviour": "fail"})
    assert run_to_end(qtbot, window) == "failed"
    assert not window.form_folded and window.banner.isVisible()
    window.form.set_values({"behaviour": "none"})
    assert not window.banner.isVisible()  # the failure was about the values the form no longer has


def test_a_reports_advice_names_the_windows_fields_not_the_command_lines_flags(qtbot, make_window, text_file):
    window = make_window("count", {"model": str(text_file), "tags": ["advice"]})
    assert run_to_end(qtbot, window) == "succeeded"
    assert window.result_view.warnings.text() == ("⚠ count fewer with “Steps”, or faster with “Verbose” off and "
                                                 "“Output” on a fast disk")
    assert "--steps" in window.report.warnings[0]  # the report itself, as exported, is the tool's


def test_the_log_starts_with_the_cli_command_to_copy(qtbot, make_window, text_file):
    window = make_window("count", {"model": str(text_file), "steps": 2, "verbose": False})
    assert run_to_end(qtbot, window) == "succeeded"
    first = window.log_view.toPlainText().splitlines()[0]
    assert first == f"$ workbench model count {text_file} --steps 2 --no-verbose"


def test_a_produced_model_is_named_in_the_title_and_the_report_relative_to_the_project(qtbot, make_window,
                                                                                      model_project):
    part = model_project / "notes.txt"
    part.write_text("a\n")
    target = model_project / "exported" / "merged.onnx"
    window = make_window("merge", {"paths": [str(part), str(part)], "output": str(target)}, project=model_project)
    assert run_to_end(qtbot, window) == "succeeded"
    assert window.windowTitle() == "Merge — 2 files"
    assert window.result_view.outputs.text() == "Written: exported/merged.onnx"
    count = make_window("count", {"model": str(part), "output": str(model_project / "exported" / "n.onnx")},
                        project=model_project)
    assert run_to_end(qtbot, count) == "succeeded"
    assert count.windowTitle() == "Count — notes.txt → exported/n.onnx"

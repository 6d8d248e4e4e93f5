"""The tool window without a job: a failure's banner shown whole, the reason Run is disabled
beside it with the field brought into view, the splitter's place kept per tool, the CLI command
the form amounts to, titles that name files as the project does, and which tools run on opening."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, Qt

from tests.modeltools.job_helpers import COUNT
from workbench.modeltools.compare import SPEC as COMPARE
from workbench.modeltools.inspect import SPEC as INSPECT
from workbench.modeltools.params import Param, ToolInvocation, ToolSpec
from workbench.modeltools.widgets.tool_window import RUNS_ON_OPEN, ToolWindow, asks_nothing, runs_on_open

from .conftest import screenshot

LONG_FORM = ToolSpec(
    name="long",
    title="Long Form",
    summary="A form taller than its window, with the data file last.",
    params=(Param("model", "path", "The model.", required=True, positional=True),
            *(Param(f"knob_{i}", "int", f"Knob number {i}.", default=i, group="Knobs") for i in range(12)),
            Param("data", "path", "Samples as .npz.", suffixes=(".npz",), group="Data")),
    run="nowhere:run",
)

FAILURE = ("The data from /tmp/trial-modeltools/loose/wrong_shape.npz has samples of shape (3, 32, 32), but "
           "/tmp/trial-modeltools/digits/runs/20261130-115638-865/outputs/model.onnx takes (1, 8, 8); give data "
           "shaped for this model, or export the model again for the shape of the data you have; the samples "
           "were read with numpy and checked against the model's first input")


@pytest.fixture
def settings(tmp_path) -> QSettings:
    return QSettings(str(tmp_path / "tool-windows.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def model_file(tmp_path) -> Path:
    path = tmp_path / "steps.txt"
    path.write_text("count me\n")
    return path


def make(qtbot, spec, values, project=None, settings=None, size=(760, 820)) -> ToolWindow:
    window = ToolWindow(spec, ToolInvocation(spec.name, values, str(project) if project else None),
                        settings=settings, run_on_open=False)
    qtbot.addWidget(window)
    window.resize(*size)
    window.show()
    qtbot.waitExposed(window)
    return window


def in_view(window: ToolWindow, widget) -> bool:
    """Whether ``widget`` shows inside the form's scroll area."""
    if not widget.isVisible():
        return False
    viewport = window.form_scroll.viewport()
    top_left = widget.mapTo(viewport, widget.rect().topLeft())
    return 0 <= top_left.y() and top_left.y() + widget.height() <= viewport.height()


def test_a_long_failure_shows_every_line_in_a_banner_whose_text_can_be_selected(qtbot, model_file, settings):
    # A one-field form: the splitter gives the form pane just what the form needs.
    window = make(qtbot, INSPECT, {"model": str(model_file)}, settings=settings)
    window.banner.show_message(FAILURE)
    qtbot.wait(50)
    label = window.banner.label
    assert label.wordWrap()
    assert label.height() >= label.heightForWidth(label.width()) > 3 * label.fontMetrics().height()
    assert label.textInteractionFlags() & Qt.TextInteractionFlag.TextSelectableByMouse
    screenshot(window, "tool-window-long-failure")


def test_run_disabled_by_a_field_says_why_beside_run_and_brings_the_field_into_view(qtbot, tmp_path, model_file,
                                                                                    settings):
    window = make(qtbot, LONG_FORM, {"model": str(model_file)}, settings=settings, size=(760, 640))
    assert window.run_button.isEnabled() and not window.run_reason.isVisible()
    window.form.set_values({"data": str(tmp_path / "missing.npz")})
    assert not window.run_button.isEnabled()
    assert window.describe()["run_reason"] == "Data: file does not exist"
    assert window.run_reason.isVisible() and "Data: file does not exist" in window.run_reason.text()
    error = window.form.fields["data"].error
    qtbot.waitUntil(lambda: in_view(window, error))
    screenshot(window, "tool-window-run-reason")

    window.form_scroll.verticalScrollBar().setValue(0)
    assert not in_view(window, error)
    window.run_reason.linkActivated.emit("problem")  # a click on the reason
    qtbot.waitUntil(lambda: in_view(window, error))

    (tmp_path / "missing.npz").write_bytes(b"")
    window.form.set_values({"data": str(tmp_path / "missing.npz")})
    assert window.run_button.isEnabled() and not window.run_reason.isVisible() and window.progress.isVisible()


def test_the_form_height_the_user_sets_is_kept_for_the_next_window_of_the_tool(qtbot, model_file, settings):
    window = make(qtbot, COUNT, {"model": str(model_file)}, settings=settings)
    window.splitter.moveSplitter(300, 1)  # as a drag of the handle does
    assert window.splitter.sizes()[0] == 300
    window.close()
    again = make(qtbot, COUNT, {"model": str(model_file)}, settings=settings)
    assert again.splitter.sizes()[0] == 300
    other = make(qtbot, LONG_FORM, {"model": str(model_file)}, settings=settings)
    assert other.splitter.sizes()[0] != 300  # kept per tool


def test_the_command_line_is_the_cli_command_for_the_forms_values(qtbot, tmp_path, settings):
    spaced = tmp_path / "my data" / "steps.txt"
    spaced.parent.mkdir()
    spaced.write_text("x\n")
    window = make(qtbot, COUNT, {"model": str(spaced), "steps": 40, "verbose": False, "tags": "a, b",
                                 "delay": 0.0}, settings=settings)
    assert window.command_line() == f"workbench model count '{spaced}' --steps 40 --no-verbose --tags a,b"
    outside = make(qtbot, COUNT, {"model": str(spaced)}, project=tmp_path / "elsewhere", settings=settings)
    assert outside.command_line() == f"workbench model count '{spaced}' --project {tmp_path / 'elsewhere'}"
    inside = make(qtbot, COUNT, {"model": str(spaced)}, project=tmp_path, settings=settings)
    assert inside.command_line() == f"workbench model count '{spaced}'"


def test_a_title_names_the_model_relative_to_the_project(qtbot, tmp_path, settings):
    model = tmp_path / "runs" / "20260101-090000-first" / "outputs" / "steps.txt"
    model.parent.mkdir(parents=True)
    model.write_text("x\n")
    window = make(qtbot, COUNT, {"model": str(model)}, project=tmp_path, settings=settings)
    assert window.windowTitle() == "Count — runs/20260101-090000-first/outputs/steps.txt"
    loose = make(qtbot, COUNT, {"model": str(model)}, settings=settings)
    assert loose.windowTitle() == "Count — steps.txt"


def test_only_tools_with_nothing_to_choose_run_on_opening():
    assert runs_on_open(INSPECT)
    assert not runs_on_open(COMPARE) and not runs_on_open(COUNT)
    assert all(asks_nothing(spec) for spec in (INSPECT,) if spec.name in RUNS_ON_OPEN)
    assert not asks_nothing(COUNT)  # it writes a file
    looks_alike = ToolSpec("inspect", "Inspect", "", (Param("model", "path", "m", required=True, positional=True),
                                                      Param("top", "int", "t")), run="x:y")
    assert not runs_on_open(looks_alike)  # a parameter without a default is a choice to make


def test_after_a_run_the_window_grows_to_show_the_longest_table_but_not_past_the_screen(qtbot, model_file,
                                                                                       settings):
    from workbench.modeltools.report import ReportTable, ToolReport

    window = make(qtbot, INSPECT, {"model": str(model_file)}, settings=settings, size=(760, 520))
    rows = [[f"layer{i}", "Conv", 1000 - i, 0.99] for i in range(40)]
    window.result_view.set_report(ToolReport("inspect", "Per layer", figures={"layers": 40},
                                             tables=[ReportTable("Layers", ["name", "op", "macs", "cosine"], rows)]))
    window.fold_form(True)
    qtbot.wait(50)
    table = window.result_view.table_views[0]
    shown_before = table.viewport().height() // table.rowHeight(0)
    window.fit_to_result()
    qtbot.wait(50)
    room = window.screen().availableGeometry()
    assert window.height() > 520 and window.frameGeometry().bottom() <= room.bottom()
    assert table.viewport().height() // table.rowHeight(0) > shown_before
    height = window.height()
    window.fit_to_result()  # nothing more to gain: it stays
    assert window.height() == height
    screenshot(window, "tool-window-fitted")


def test_after_a_run_the_window_widens_to_show_a_wide_tables_columns_but_not_past_the_screen(
        qtbot, model_file, settings):
    """Compare's table of nine columns needed a sideways scroll in a 760-pixel window."""
    from workbench.modeltools.report import ReportTable, ToolReport

    window = make(qtbot, INSPECT, {"model": str(model_file)}, settings=settings, size=(760, 520))
    columns = ["model", "runtime", "size (bytes)", "size ratio", "accuracy %", "agreement %", "max abs diff",
               "latency p50 (ms)", "latency p90 (ms)"]
    rows = [["model.onnx", "onnxruntime", 164647, 1.0, 91.85, 100.0, 0.0, 0.0722, 0.09],
            ["model.int8.onnx", "onnxruntime", 52249, 0.3173, 90.37, 96.67, 0.5193, 0.0946, 0.113]]
    window.result_view.set_report(ToolReport("compare", "Compare", tables=[ReportTable("Variants", columns, rows)]))
    window.fold_form(True)
    qtbot.wait(50)
    table = window.result_view.table_views[0]
    assert table.horizontalScrollBar().maximum() > 0  # it does not fit yet
    window.fit_to_result()
    qtbot.wait(50)
    room = window.screen().availableGeometry()
    assert window.width() > 760 and window.frameGeometry().right() <= room.right()
    assert table.horizontalScrollBar().maximum() == 0 or window.frameGeometry().width() >= room.width()
    width = window.width()
    window.fit_to_result()  # nothing more to gain: it stays
    assert window.width() == width

"""The tool form generated from a tool's declaration: one editor per parameter type, help as
tooltip and hint, groups and a folded Advanced section, inline errors, prefill."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QLineEdit, QSpinBox

from workbench.modeltools.params import Param, ToolInvocation, ToolSpec
from workbench.modeltools.widgets.param_form import NOT_SET, ParamForm
from workbench.modeltools.widgets.tool_window import ToolWindow

from .conftest import screenshot

EVERY_TYPE = ToolSpec(
    name="every",
    title="Every Type",
    summary="A tool with one parameter of each type.",
    params=(
        Param("model", "path", "The model file.", required=True, positional=True, suffixes=(".onnx", ".pt")),
        Param("output", "path", "Where to write.", is_output=True, suffixes=(".onnx",)),
        Param("extra", "paths", "More models.", suffixes=(".onnx",)),
        Param("mode", "choice", "How to do it.", default="fast", choices=("fast", "exact"), group="Method"),
        Param("per_channel", "bool", "One scale per channel.", default=True, group="Method"),
        Param("samples", "int", "How many samples (default: all).", minimum=1, group="Data"),
        Param("batch", "int", "The batch size.", default=32, minimum=1, maximum=4096, group="Data"),
        Param("sparsity", "float", "The fraction of zeros.", default=0.5, minimum=0.0, maximum=0.99,
              group="Method"),
        Param("exclude_nodes", "strings", "Node names kept in float.", group="Method"),
        Param("factory", "str", "The model factory.", group="Model"),
        Param("seed", "int", "A random seed.", default=0, advanced=True),
        Param("tolerance", "float", "Largest difference allowed.", default=1e-4, minimum=0.0, advanced=True),
    ),
    run="nowhere:run",
)


@pytest.fixture
def model_file(tmp_path) -> Path:
    path = tmp_path / "net.onnx"
    path.write_bytes(b"onnx")
    return path


def make_form(qtbot, base=None, spec=EVERY_TYPE) -> ParamForm:
    form = ParamForm(spec, base)
    qtbot.addWidget(form)
    return form


def test_each_parameter_type_gets_its_editor_with_bounds_help_and_hint(qtbot):
    form = make_form(qtbot)
    editors = {name: field.editor for name, field in form.fields.items()}
    assert isinstance(editors["model"], QLineEdit) and form.fields["model"].browse is not None
    assert isinstance(editors["output"], QLineEdit) and form.fields["output"].browse is not None
    assert isinstance(editors["extra"], QLineEdit) and form.fields["extra"].browse is not None
    assert isinstance(editors["mode"], QComboBox)
    assert [editors["mode"].itemText(i) for i in range(editors["mode"].count())] == ["fast", "exact"]
    assert isinstance(editors["per_channel"], QCheckBox) and editors["per_channel"].isChecked()
    assert isinstance(editors["batch"], QSpinBox)
    assert (editors["batch"].minimum(), editors["batch"].maximum(), editors["batch"].value()) == (1, 4096, 32)
    assert isinstance(editors["sparsity"], QDoubleSpinBox)
    assert editors["sparsity"].maximum() == pytest.approx(0.99) and editors["sparsity"].value() == 0.5
    assert editors["sparsity"].text() == "0.5"
    assert isinstance(editors["exclude_nodes"], QLineEdit) and form.fields["exclude_nodes"].browse is None
    assert "comma-separated" in editors["exclude_nodes"].placeholderText()
    # help: the tooltip and a grey line under the editor
    assert editors["batch"].toolTip() == "The batch size."
    assert form.fields["batch"].hint.text() == "The batch size."
    assert form.fields["factory"].label.text() == "Factory"


def test_an_optional_number_without_default_shows_auto_and_is_left_to_the_tool(qtbot, model_file):
    form = make_form(qtbot)
    form.set_values({"model": str(model_file)})
    samples = form.fields["samples"].editor
    assert samples.text() == NOT_SET
    assert "samples" not in form.values()
    samples.setValue(200)
    assert form.values()["samples"] == 200


def test_groups_are_sections_and_advanced_parameters_start_folded(qtbot):
    form = make_form(qtbot)
    form.show()
    sections = [name for name in ("Method", "Data", "Model") if form.findChild(type(form.form_error), f"section-{name}")]
    assert sections == ["Method", "Data", "Model"]
    assert form.advanced_toggle is not None and not form.advanced_toggle.isChecked()
    assert not form.fields["seed"].editor.isVisible() and not form.fields["tolerance"].editor.isVisible()
    assert form.fields["batch"].editor.isVisible()
    form.advanced_toggle.click()
    assert form.fields["seed"].editor.isVisible() and form.fields["tolerance"].editor.isVisible()


def test_a_missing_required_model_is_shown_inline_and_makes_the_form_invalid(qtbot, model_file):
    form = make_form(qtbot)
    form.show()
    assert not form.is_valid
    assert form.fields["model"].error.isVisible()
    assert form.fields["model"].error.text() == "Model is required."
    with qtbot.waitSignal(form.sig_validity_changed) as changed:
        form.fields["model"].editor.setText(str(model_file))
    assert changed.args == [True]
    assert not form.fields["model"].error.isVisible()


def test_a_model_that_does_not_exist_is_named_and_an_output_need_not_exist(qtbot, tmp_path, model_file):
    form = make_form(qtbot)
    form.set_values({"model": str(tmp_path / "missing.onnx"), "output": str(tmp_path / "new.onnx")})
    assert form.errors() == {"model": f"There is no file {tmp_path / 'missing.onnx'}."}
    form.set_values({"model": str(model_file)})
    assert form.errors() == {}


def test_a_relative_path_is_taken_from_the_project_and_sent_absolute(qtbot, tmp_path, model_file):
    form = make_form(qtbot, base=tmp_path)
    form.set_values({"model": model_file.name, "extra": f"{model_file.name}, other.onnx"})
    assert form.errors() == {"extra": "There is no file other.onnx."}
    (tmp_path / "other.onnx").write_bytes(b"")
    assert form.errors() == {}
    values = form.values()
    assert values["model"] == str(model_file)
    assert values["extra"] == [str(model_file), str(tmp_path / "other.onnx")]


def test_prefill_fills_every_kind_of_editor_and_unfolds_a_changed_advanced_value(qtbot, model_file):
    form = make_form(qtbot)
    form.show()
    form.set_values({"model": str(model_file), "mode": "exact", "per_channel": False, "batch": 8,
                     "sparsity": 0.25, "exclude_nodes": ["conv1", "fc"], "seed": 7, "unknown": 1})
    values = form.values()
    assert values["mode"] == "exact" and values["per_channel"] is False
    assert values["batch"] == 8 and values["sparsity"] == 0.25 and values["seed"] == 7
    assert values["exclude_nodes"] == "conv1, fc"
    assert form.advanced_toggle.isChecked()
    resolved = EVERY_TYPE.resolve(values)
    assert resolved["exclude_nodes"] == ["conv1", "fc"] and resolved["model"] == model_file


def test_a_value_a_parameter_does_not_accept_is_the_tools_own_message(qtbot, model_file):
    spec = ToolSpec("shape", "Shape", "", (Param("model", "path", "m", required=True, positional=True),
                                            Param("count", "str", "a count"),), run="x:y")
    form = make_form(qtbot, spec=spec)
    form.set_values({"model": str(model_file)})
    assert form.is_valid
    strict = ToolSpec("strict", "Strict", "", spec.params[:1] + (Param("scale", "strings", "s", required=True),),
                      run="x:y")
    form = make_form(qtbot, spec=strict)
    form.set_values({"model": str(model_file)})
    assert form.errors() == {"scale": "Scale is required."}


def test_browse_opens_the_dialog_filtered_by_the_suffixes_and_a_save_dialog_for_an_output(qtbot, tmp_path, model_file):
    form = make_form(qtbot, base=tmp_path)
    asked = []
    form.ask_open_file = lambda title, start, filters: asked.append(("open", filters)) or str(model_file)
    form.ask_save_file = lambda title, start, filters: asked.append(("save", filters)) or str(tmp_path / "out.onnx")
    form.ask_open_files = lambda title, start, filters: asked.append(("many", filters)) or [str(model_file)] * 2
    form.fields["model"].browse.click()
    form.fields["output"].browse.click()
    form.fields["extra"].browse.click()
    assert asked == [("open", "Model (*.onnx *.pt);;All files (*)"), ("save", "Output (*.onnx);;All files (*)"),
                     ("many", "Extra (*.onnx);;All files (*)")]
    assert form.values()["output"] == str(tmp_path / "out.onnx")
    assert form.values()["extra"] == [str(model_file)] * 2


def test_the_tool_window_disables_run_while_the_form_is_invalid_and_looks_tidy(qtbot, model_file):
    window = ToolWindow(EVERY_TYPE, ToolInvocation("every", {}))
    qtbot.addWidget(window)
    window.show()
    assert not window.run_button.isEnabled()
    assert window.run_button.toolTip() == "Model is required."
    assert window.run() is False
    window.form.set_values({"model": str(model_file)})
    assert window.run_button.isEnabled()
    assert window.windowTitle() == "Every Type — net.onnx"
    window.form.show_advanced(True)
    qtbot.wait(50)
    screenshot(window, "tool-form-every-type")

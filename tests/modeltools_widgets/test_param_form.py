"""The tool form generated from a tool's declaration: one editor per parameter type, help as
tooltip and hint, groups and a folded Advanced section, inline errors, prefill."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QLineEdit, QSpinBox

from workbench.modeltools.params import Param, ToolInvocation, ToolSpec
from workbench.modeltools.widgets.param_form import NOT_SET, ParamForm
from workbench.modeltools.widgets.path_list import PathListEditor
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
    assert isinstance(editors["extra"], PathListEditor) and editors["extra"].add_button.text() == "Add…"
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
    assert form.errors() == {"model": "File does not exist."}
    field, reason = form.first_problem()
    assert field is form.fields["model"] and reason == "Model: file does not exist"
    form.set_values({"model": str(model_file)})
    assert form.errors() == {}


def test_a_relative_path_is_taken_from_the_project_and_sent_absolute(qtbot, tmp_path, model_file):
    form = make_form(qtbot, base=tmp_path)
    form.set_values({"model": model_file.name, "extra": f"{model_file.name}, other.onnx"})
    assert form.errors() == {"extra": "other.onnx does not exist."}
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
    other = tmp_path / "other.onnx"
    form.ask_open_files = lambda title, start, filters: asked.append(("many", filters)) or [str(model_file), str(other)]
    form.fields["model"].browse.click()
    form.fields["output"].browse.click()
    form.fields["extra"].editor.add_button.click()
    assert asked == [("open", "Model (*.onnx *.pt);;All files (*)"), ("save", "Output (*.onnx);;All files (*)"),
                     ("many", "Extra (*.onnx);;All files (*)")]
    assert form.values()["output"] == str(tmp_path / "out.onnx")
    assert form.values()["extra"] == [str(model_file), str(other)]


def test_the_tool_window_disables_run_while_the_form_is_invalid_and_looks_tidy(qtbot, model_file):
    window = ToolWindow(EVERY_TYPE, ToolInvocation("every", {}))
    qtbot.addWidget(window)
    window.show()
    assert not window.run_button.isEnabled()
    assert window.run_button.toolTip() == "Model is required"
    assert window.run_reason.isVisibleTo(window) and "Model is required" in window.run_reason.text()
    assert window.run() is False
    window.form.set_values({"model": str(model_file)})
    assert window.run_button.isEnabled()
    assert window.windowTitle() == "Every Type — net.onnx"
    window.form.show_advanced(True)
    qtbot.wait(50)
    screenshot(window, "tool-form-every-type")


# --- the wheel ------------------------------------------------------------------------------------

def send_wheel(widget, notches: int = -1) -> None:
    """A wheel turn over ``widget`` (negative: towards the user, scrolling down)."""
    from PySide6.QtCore import QPoint, QPointF, Qt
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication

    position = QPointF(widget.rect().center())
    event = QWheelEvent(position, QPointF(widget.mapToGlobal(position.toPoint())), QPoint(0, 0),
                        QPoint(0, 120 * notches), Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier,
                        Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(widget, event)


def test_the_wheel_over_a_combo_or_spin_box_scrolls_the_form_until_the_box_has_the_focus(qtbot, model_file):
    from PySide6.QtCore import Qt

    window = ToolWindow(EVERY_TYPE, ToolInvocation("every", {"model": str(model_file)}))
    qtbot.addWidget(window)
    window.resize(760, 520)
    window.show()
    window.form.show_advanced(True)
    qtbot.waitUntil(lambda: window.form_scroll.verticalScrollBar().maximum() > 0)
    scroll = window.form_scroll.verticalScrollBar()
    mode, batch, sparsity = (window.form.fields[name].editor for name in ("mode", "batch", "sparsity"))
    assert mode.focusPolicy() == Qt.FocusPolicy.StrongFocus == batch.focusPolicy()

    start = scroll.value()
    send_wheel(mode)
    assert mode.currentText() == "fast"
    assert scroll.value() > start  # the form scrolled instead
    send_wheel(batch)
    send_wheel(sparsity)
    assert batch.value() == 32 and sparsity.value() == 0.5
    assert scroll.value() > start

    window.activateWindow()
    batch.setFocus()
    qtbot.waitUntil(batch.hasFocus)
    send_wheel(batch, 1)
    assert batch.value() == 33  # a focused box takes the wheel, as it takes the arrow keys


# --- a list of files --------------------------------------------------------------------------

LIST_OF_MODELS = ToolSpec(
    name="versus",
    title="Versus",
    summary="Models measured against a reference.",
    params=(
        Param("models", "paths", "The models; the first is the reference.", required=True, positional=True,
              minimum=2, suffixes=(".onnx",)),
        Param("reference", "path", "The model the others are measured against.", suffixes=(".onnx",)),
    ),
    run="nowhere:run",
)


@pytest.fixture
def four_models(tmp_path) -> list[Path]:
    paths = [tmp_path / f"{name}.onnx" for name in ("fp32", "int8", "pruned", "fp16")]
    for path in paths:
        path.write_bytes(b"onnx")
    return paths


def shown_rows(form: ParamForm, name: str = "models") -> list[str]:
    editor = form.fields[name].editor
    return [editor.list.item(row).text() for row in range(editor.list.count())]


def test_a_list_of_files_is_one_row_each_and_add_appends_without_replacing(qtbot, tmp_path, four_models):
    fp32, int8, pruned, fp16 = four_models
    form = make_form(qtbot, base=tmp_path, spec=LIST_OF_MODELS)
    editor = form.fields["models"].editor
    answers = [[str(fp32), str(int8)], [str(pruned), str(fp32)], []]
    form.ask_open_files = lambda title, start, filters: answers.pop(0)
    editor.add_button.click()
    editor.add_button.click()  # appends; a file already listed is not listed twice
    editor.add_button.click()  # cancelled: nothing changes
    assert form.values()["models"] == [str(fp32), str(int8), str(pruned)]
    assert shown_rows(form) == ["fp32.onnx   (reference)", "int8.onnx", "pruned.onnx"]

    editor.select(2)
    editor.up_button.click()
    assert form.values()["models"] == [str(fp32), str(pruned), str(int8)]
    editor.select(0)
    editor.down_button.click()  # the first one is the reference: moving another up makes it so
    assert form.values()["models"] == [str(pruned), str(fp32), str(int8)]
    assert shown_rows(form)[0] == "pruned.onnx   (reference)"
    editor.select(2)
    editor.remove_button.click()
    assert form.values()["models"] == [str(pruned), str(fp32)]

    form.set_values({"reference": str(fp32)})
    assert shown_rows(form) == ["pruned.onnx", "fp32.onnx   (reference)"]


def test_files_dropped_on_the_list_are_added_at_the_end(qtbot, tmp_path, four_models):
    from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
    from PySide6.QtGui import QDragEnterEvent, QDropEvent

    form = make_form(qtbot, base=tmp_path, spec=LIST_OF_MODELS)
    form.set_values({"models": [str(four_models[0])]})
    target = form.fields["models"].editor.list
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in four_models[2:]])
    enter = QDragEnterEvent(target.rect().center(), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    target.dragEnterEvent(enter)
    assert enter.isAccepted()
    drop = QDropEvent(QPointF(target.rect().center()), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                      Qt.KeyboardModifier.NoModifier)
    target.dropEvent(drop)
    assert form.values()["models"] == [str(four_models[0]), str(four_models[2]), str(four_models[3])]
    text_only = QMimeData()
    text_only.setText("not a file")
    refused = QDragEnterEvent(target.rect().center(), Qt.DropAction.CopyAction, text_only, Qt.MouseButton.LeftButton,
                              Qt.KeyboardModifier.NoModifier)
    target.dragEnterEvent(refused)
    assert not refused.isAccepted()


def test_fewer_files_than_the_list_needs_keeps_run_disabled_and_says_why_beside_it(qtbot, tmp_path, four_models):
    window = ToolWindow(LIST_OF_MODELS, ToolInvocation("versus", {"models": [str(four_models[0])]}, str(tmp_path)))
    qtbot.addWidget(window)
    window.show()
    assert not window.run_button.isEnabled()
    assert window.describe()["run_reason"] == "Models: add at least 2 files (1 given)"
    assert window.run_reason.isVisible() and not window.progress.isVisible()
    assert window.form.fields["models"].error.isVisible()
    assert window.windowTitle() == "Versus — 1 model"
    window.form.set_values({"reference": str(four_models[3])})  # the tool adds it first: two models
    assert window.run_button.isEnabled()
    window.form.set_values({"reference": None})
    assert not window.run_button.isEnabled()
    window.form.fields["models"].editor.add_paths([str(four_models[1])])
    assert window.run_button.isEnabled() and not window.run_reason.isVisible()
    assert window.windowTitle() == "Versus — 2 models"

    one_is_enough = ToolSpec("one", "One", "", (Param("models", "paths", "m", required=True, positional=True),),
                             run="x:y")
    form = make_form(qtbot, spec=one_is_enough)
    assert form.first_problem()[1] == "Models is required"
    form.set_values({"models": [str(four_models[0])]})
    assert form.is_valid


def test_the_compare_window_is_titled_by_how_many_models_it_compares(qtbot, four_models):
    from workbench.modeltools.compare import SPEC as COMPARE

    window = ToolWindow(COMPARE, ToolInvocation("compare", {"models": [str(p) for p in four_models]}))
    qtbot.addWidget(window)
    assert window.windowTitle() == "Compare — 4 models"
    qtbot.wait(10)
    screenshot(window, "tool-form-compare-list")


def test_compares_reference_is_chosen_among_its_models_in_the_window(qtbot, tmp_path, four_models):
    from workbench.modeltools.compare import SPEC as COMPARE

    fp32, int8, pruned, _fp16 = four_models
    form = make_form(qtbot, base=tmp_path, spec=COMPARE)
    form.set_values({"models": [str(fp32), str(int8), str(pruned)]})
    reference = form.fields["reference"].editor
    offered = [reference.itemText(i) for i in range(reference.count())]
    assert offered == ["(the first of models)", "fp32.onnx", "int8.onnx", "pruned.onnx"]
    assert form.fields["reference"].browse is None
    assert form.values().get("reference") is None and shown_rows(form)[0] == "fp32.onnx   (reference)"

    reference.setCurrentIndex(offered.index("pruned.onnx"))
    assert form.values()["reference"] == str(pruned)
    assert shown_rows(form) == ["fp32.onnx", "int8.onnx", "pruned.onnx   (reference)"]
    form.set_values({"models": [str(pruned), str(fp32)]})  # the choice stays while it is listed
    assert reference.currentText() == "pruned.onnx"
    form.set_values({"models": [str(fp32), str(int8)]})  # gone from the list: still the choice, shown
    assert form.values()["reference"] == str(pruned) and reference.currentText() == "pruned.onnx"


def test_no_text_of_a_tool_window_names_a_command_line_flag(qtbot, tmp_path):
    import re

    from PySide6.QtWidgets import QLabel

    from workbench.modeltools.registry import all_tools
    from workbench.modeltools.widgets.tool_window import ToolWindow

    for spec in all_tools().values():
        window = ToolWindow(spec)
        qtbot.addWidget(window)
        texts = [label.text() for label in window.findChildren(QLabel)]
        texts += [w.toolTip() for w in window.form.findChildren(QLabel)]
        texts += [field.editor.toolTip() for field in window.form.fields.values()]
        flags = [t for t in texts if re.search(r"(?<![\w-])(--[a-z]|-[a-zA-Z](?![\w-]))", t)]
        assert flags == [], f"{spec.name}: {flags}"

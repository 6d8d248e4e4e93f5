"""The Model factory field of a tool window offers the classes of the project's code when the
model's weights need one (a project of the user's own training code), found off the GUI
thread; it offers nothing for a template project."""

from __future__ import annotations

from pathlib import Path

from workbench.modeltools.params import ToolInvocation
from workbench.modeltools.registry import get_tool
from workbench.modeltools.widgets.tool_window import ToolWindow
from workbench.qt.tasks import TaskRunner

MODEL_CODE = '''\
from torch import nn


class Net(nn.Module):
    pass


class Bigger(Net):
    pass
'''


def weights_file(path: Path) -> Path:
    """A minimal .safetensors file: what Workbench recognises as weights from its bytes."""
    header = b'{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
    path.write_bytes(len(header).to_bytes(8, "little") + header + bytes(8))
    return path


def make_project(root: Path, parameters: str) -> Path:
    root.mkdir()
    (root / "workbench.toml").write_text(f'[training]\nscript = "train.py"\n{parameters}\n')
    (root / "model.py").write_text(MODEL_CODE)
    return weights_file(root / "model.safetensors")


def open_convert(qtbot, model: Path, project: Path) -> ToolWindow:
    tasks = TaskRunner()
    window = ToolWindow(get_tool("convert"), ToolInvocation("convert", {"model": str(model)}, str(project)),
                        tasks=tasks, run_on_open=False)
    tasks.setParent(window)
    qtbot.addWidget(window)
    return window


def test_the_factory_field_offers_the_projects_classes_and_picking_one_fills_it(qtbot, tmp_path):
    model = make_project(tmp_path / "mine", 'parameters = "argparse"')
    window = open_convert(qtbot, model, tmp_path / "mine")
    field = window.form.fields["model_factory"]
    qtbot.waitUntil(lambda: field.suggestions.suggestions != [])
    assert field.suggestions.suggestions == ["model:Net", "model:Bigger"]
    assert not field.suggestions.isHidden()
    picked = field.suggestions.menu_of_suggestions.actions()[1]
    assert picked.text() == "model:Bigger"
    picked.trigger()
    assert window.form.values()["model_factory"] == "model:Bigger"
    assert field.editor.completer() is not None


def test_a_template_project_is_offered_no_classes(qtbot, tmp_path):
    model = make_project(tmp_path / "digits", 'hparams = "hparams/digits.hparams"')
    window = open_convert(qtbot, model, tmp_path / "digits")
    field = window.form.fields["model_factory"]
    qtbot.waitUntil(lambda: field.suggestions.toolTip() != "")  # the answer came: nothing
    assert field.suggestions.isHidden() and field.suggestions.suggestions == []

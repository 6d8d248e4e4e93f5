"""The Models panel of a project window, and the tools in the right-click menus of the panel and
of the Explorer. Opening a tool asks the hub (here a recorder standing in for the window's hub
link)."""

from __future__ import annotations

import shutil

from workbench.ipc.errors import RpcError
from workbench.ipc.messages import EVENT_MODEL_PRODUCED, HUB_OPEN_TOOL
from workbench.modeltools.widgets import panel_of
from workbench.modeltools.widgets.models_panel import PATH_ROLE

from .conftest import RUN_IDS, TIMEOUT_MS, make_onnx, screenshot


def test_the_panel_lists_run_outputs_grouped_by_run_newest_first(open_window, model_project):
    window = open_window(model_project)
    panel = panel_of(window)
    assert panel.groups() == [(f"Run {RUN_IDS[1]}  ·  1 model", ["model.onnx"]),
                              (f"Run {RUN_IDS[0]}  ·  1 model", ["model.onnx"]),
                              ("Other files  ·  1 model", ["exported/base.onnx"])]
    assert window.findChild(type(window.explorer), "dock-models").isVisible()
    screenshot(window, "project-window-models-panel")


def test_a_new_model_file_appears_without_being_asked(qtbot, open_window, model_project):
    window = open_window(model_project)
    panel = panel_of(window)
    outputs = model_project / "runs" / RUN_IDS[0] / "outputs"
    shutil.copy(outputs / "model.onnx", outputs / "model.int8.onnx")
    qtbot.waitUntil(lambda: f"Run {RUN_IDS[0]}  ·  2 models" in [g[0] for g in panel.groups()], timeout=TIMEOUT_MS)
    assert f"Run {RUN_IDS[0]}" in panel.groups()[0][0]  # now the newest run
    run = model_project / "runs" / "20260103-090000-third" / "outputs"
    make_onnx(run / "model.onnx")
    qtbot.waitUntil(lambda: panel.groups()[0][0].startswith("Run 20260103-090000-third"), timeout=TIMEOUT_MS)


def test_a_model_produced_event_shows_a_notice_and_selects_the_new_file(qtbot, open_window, model_project):
    window = open_window(model_project)
    panel = panel_of(window)
    target = model_project / "runs" / RUN_IDS[1] / "outputs" / "model.int8.onnx"
    shutil.copy(model_project / "runs" / RUN_IDS[1] / "outputs" / "model.onnx", target)
    window.handle_event(EVENT_MODEL_PRODUCED, {"path": str(target), "project": str(model_project), "tool": "quantize"})
    assert panel.notice.message == f"Quantize produced model.int8.onnx in run {RUN_IDS[1]}"
    qtbot.waitUntil(lambda: panel.selected_paths() == [target], timeout=TIMEOUT_MS)
    window.handle_event(EVENT_MODEL_PRODUCED, {"path": "/elsewhere/other.onnx", "tool": "quantize"})
    assert "model.int8.onnx" in panel.notice.message  # another project's model is not ours
    screenshot(window, "project-window-model-produced")


def test_the_right_click_menus_offer_the_tools_of_the_file_kind(open_window, model_project):
    window = open_window(model_project)
    panel = panel_of(window)
    onnx = model_project / "exported" / "base.onnx"
    names = [a.objectName() for a in panel.context_menu_for([onnx]).actions() if a.objectName()]
    assert {"tool-inspect", "tool-quantize", "tool-compare"} <= set(names)
    assert "tool-convert" not in names  # convert takes PyTorch files
    assert {"reveal", "copy_path"} <= set(names)
    two = [a.objectName() for a in panel.context_menu_for(panel.selected_paths() or [onnx, onnx]).actions()]
    assert "compare" in two and "tool-inspect" not in two
    explorer = window.tree.context_menu_for(onnx)
    titles = {a.objectName(): a.text() for a in explorer.actions()}
    assert titles["modeltools.inspect"] == "Inspect…" and titles["modeltools.quantize"] == "Quantize…"
    assert "modeltools.convert" not in titles
    checkpoint = model_project / "weights.pt"
    checkpoint.write_bytes(b"pt")
    pt_titles = {a.objectName() for a in window.tree.context_menu_for(checkpoint).actions()}
    assert "modeltools.convert" in pt_titles and "modeltools.quantize" not in pt_titles
    assert not [a for a in window.tree.context_menu_for(model_project / "README.md").actions()
                if a.objectName().startswith("modeltools.")]


def test_choosing_a_tool_asks_the_hub_for_a_tool_window_with_the_model_filled_in(open_window, model_project):
    window = open_window(model_project)
    onnx = model_project / "exported" / "base.onnx"
    window.tree.run_command("modeltools.quantize", onnx)
    assert window.hub_requests.calls == [(HUB_OPEN_TOOL, {"tool": "quantize", "values": {"model": str(onnx)},
                                                          "project": str(model_project)})]


def test_compare_selected_sends_every_selected_model_and_double_click_inspects(open_window, model_project):
    window = open_window(model_project)
    panel = panel_of(window)
    first, second = (model_project / "runs" / run / "outputs" / "model.onnx" for run in RUN_IDS)
    assert not window.commands.get("modeltools.compareSelected").is_enabled()
    panel.select_path(first)
    panel.select_path(second, add=True)
    assert window.commands.get("modeltools.compareSelected").is_enabled()
    next(a for a in panel.context_menu_for(panel.selected_paths()).actions() if a.objectName() == "compare").trigger()
    method, params = window.hub_requests.calls[-1]
    assert params["tool"] == "compare" and sorted(params["values"]["models"]) == sorted([str(first), str(second)])

    item = next(i for i in panel.items() if i.data(0, PATH_ROLE) == str(first))
    panel.tree.itemDoubleClicked.emit(item, 0)
    assert window.hub_requests.calls[-1][1]["tool"] == "inspect"
    assert window.hub_requests.calls[-1][1]["values"] == {"model": str(first)}


def test_without_a_hub_the_window_says_so_instead_of_failing_silently(open_window, model_project):
    window = open_window(model_project)
    window.hub_requests.answer = RpcError(RpcError.APPLICATION_ERROR, "the hub is busy")
    errors = []
    window.show_error = lambda message, details="": errors.append(message)
    window.commands.execute("modeltools.openTool", tool="inspect", paths=[str(model_project / "exported" / "base.onnx")])
    assert errors == ["Cannot open the Inspect window: the hub is busy"]


def test_a_window_without_a_process_link_reports_that_it_has_no_hub(qtbot, open_window, model_project):
    window = open_window(model_project)
    window.hub_requester = None
    errors = []
    window.show_error = lambda message, details="": errors.append(message)
    window.commands.execute("modeltools.inspect", path=model_project / "exported" / "base.onnx")
    assert errors == ["Cannot open the Inspect window: This window is not linked to a Workbench hub."]


def test_a_project_without_models_says_how_to_get_some(open_window, tmp_path, tools):
    from workbench.project import create_from_template

    root = create_from_template("empty", tmp_path / "bare").root
    window = open_window(root)
    panel = panel_of(window)
    assert panel.models == [] and panel.empty.isVisibleTo(panel)
    assert "Train a run" in panel.empty.text()


def test_the_panel_and_the_explorer_offer_convert_on_pt2_and_torchscript_files_but_not_on_typescript(
        qtbot, open_window, model_project):
    from .test_model_index import torchscript_file

    window = open_window(model_project)
    panel = panel_of(window)
    outputs = model_project / "runs" / RUN_IDS[1] / "outputs"
    program = outputs / "model.pt2"
    program.write_bytes(b"PK\x03\x04exported program")
    scripted = torchscript_file(outputs / "model.ts")
    typescript = model_project / "app.ts"
    typescript.write_text("export const answer: number = 42;\n")
    panel.refresh()
    qtbot.waitUntil(lambda: {"model.pt2", "model.ts"} <= set(panel.groups()[0][1]), timeout=TIMEOUT_MS)
    assert "app.ts" not in [name for _, names in panel.groups() for name in names]
    for path in (program, scripted):
        in_panel = {a.objectName() for a in panel.context_menu_for([path]).actions()}
        in_explorer = {a.objectName() for a in window.tree.context_menu_for(path).actions()}
        assert "tool-convert" in in_panel and "modeltools.convert" in in_explorer, path.name
    assert not [a for a in window.tree.context_menu_for(typescript).actions()
                if a.objectName().startswith("modeltools.")]


def test_the_produced_notice_names_the_file_relative_to_its_run_or_the_project(open_window, model_project):
    window = open_window(model_project)
    panel = panel_of(window)
    nested = model_project / "runs" / RUN_IDS[1] / "outputs" / "int8" / "model.onnx"
    make_onnx(nested)
    window.handle_event(EVENT_MODEL_PRODUCED, {"path": str(nested), "project": str(model_project), "tool": "quantize"})
    assert panel.notice.message == f"Quantize produced int8/model.onnx in run {RUN_IDS[1]}"
    loose = model_project / "exported" / "small" / "base.int8.onnx"
    make_onnx(loose)
    window.handle_event(EVENT_MODEL_PRODUCED, {"path": str(loose), "project": str(model_project), "tool": "quantize"})
    assert panel.notice.message == "Quantize produced exported/small/base.int8.onnx"
    assert panel.notice.label.toolTip() == str(loose)


def test_the_panel_menu_offers_the_windows_models_commands_that_apply_to_the_file(open_window,
                                                                                  model_project):
    from pathlib import Path

    window = open_window(model_project)
    panel = panel_of(window)
    onnx = model_project / "exported" / "base.onnx"
    ran = []

    def verify(path=None):
        ran.append(path)
        if path.name == "model.onnx":
            raise RuntimeError("no device is paired: pair one first")

    # Another capability's command, found through the window's registry as the Explorer does.
    window.commands.add("other.verify", "Verify Elsewhere…", verify, context=("models",),
                        applies_to=lambda path: Path(path).suffix == ".onnx")
    window.commands.add("other.explorerOnly", "Explorer Only", lambda path=None: None,
                        context=("explorer",))
    actions = {a.objectName(): a for a in panel.context_menu_for([onnx]).actions()}
    assert actions["other.verify"].text() == "Verify Elsewhere…"
    assert "other.explorerOnly" not in actions
    actions["other.verify"].trigger()
    assert ran == [onnx]

    checkpoint = model_project / "weights.pt"
    checkpoint.write_bytes(b"pt")
    assert "other.verify" not in {a.objectName() for a in panel.context_menu_for([checkpoint]).actions()}
    assert "other.verify" not in {a.objectName() for a in panel.context_menu_for([onnx, onnx]).actions()}

    failing = model_project / "runs" / RUN_IDS[0] / "outputs" / "model.onnx"
    panel.run_command("other.verify", failing)
    assert window.statusBar().currentMessage() == "no device is paired: pair one first"

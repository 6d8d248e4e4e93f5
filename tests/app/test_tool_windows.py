"""Model tool windows as real processes: started through the hub (``hub.open_tool``) or, with no
hub, by the project window itself; running real jobs of real tools; announcing the model they
produce to the project window; dying without taking anything with them; and leaving the project
window smooth while several run."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
from pathlib import Path

import pytest

from tests.modeltools.job_helpers import TOOLS, child_tools_path, existing_built_ins
from tests.modeltools_widgets.conftest import make_onnx

from .conftest import is_alive, wait_until

pytestmark = pytest.mark.slow

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "tool_windows.py"


def load_benchmark():
    spec = importlib.util.spec_from_file_location("tool_windows_benchmark", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def child_tools(monkeypatch, tmp_path):
    """The built-in tools and the job tests' ``count`` tool in every process the test starts
    (hub, windows, jobs), and no spare window eating a core."""
    from workbench.modeltools import registry

    built_in = existing_built_ins() + TOOLS
    monkeypatch.setattr(registry, "BUILT_IN", built_in)
    monkeypatch.setenv("PYTHONPATH", child_tools_path(tmp_path / "site", built_in))
    monkeypatch.setenv("WORKBENCH_NO_SPARE", "1")


@pytest.fixture(scope="module")
def digits_once(tmp_path_factory) -> tuple[Path, Path]:
    return load_benchmark().digits_project(tmp_path_factory.mktemp("digits"))


@pytest.fixture
def digits(digits_once, tmp_path) -> tuple[Path, Path]:
    """A digits project with an untrained model.pt in a run's outputs (made once, with torch only
    in a child process; each test gets its own copy)."""
    root, model = digits_once
    copy = Path(shutil.copytree(root, tmp_path / root.name))
    return copy, copy / model.relative_to(root)


def tool_windows(workbench) -> list[dict]:
    return [w for w in workbench.windows() if w["kind"] == "tool"]


def ready_tool_window(workbench) -> dict:
    return wait_until(lambda: next((w for w in tool_windows(workbench) if w["state"] == "ready"), None), 30, 0.1,
                      "a tool window to register")


def describe(workbench, window_id: str) -> dict:
    return workbench.call("hub.describe_window", {"window_id": window_id})


def wait_for_state(workbench, window_id: str, states=("succeeded", "failed", "cancelled"), timeout=90.0) -> dict:
    def ended():
        description = describe(workbench, window_id)
        return description if description["state"] in states else None

    return wait_until(ended, timeout, 0.2, f"the tool window to be {'/'.join(states)}")


def test_hub_open_tool_starts_a_tool_window_process_that_registers_and_runs_a_real_tool(workbench, child_tools,
                                                                                        tmp_path):
    model = make_onnx(tmp_path / "models" / "tiny.onnx")
    workbench.run()
    opened = workbench.call("hub.open_tool", {"tool": "inspect", "values": {"model": str(model)}})
    assert set(opened) == {"window_id", "pid"}
    entry = wait_until(lambda: next((w for w in tool_windows(workbench)
                                     if w["window_id"] == opened["window_id"] and w["state"] == "ready"), None),
                       30, 0.1, "the tool window to register")
    assert entry["pid"] == opened["pid"] and entry["title"] == "Inspect — tiny.onnx"

    workbench.command(opened["window_id"], "tool.run")
    described = wait_for_state(workbench, opened["window_id"])
    assert described["state"] == "succeeded", described["log"]
    assert described["kind"] == "tool" and described["progress_text"] == "Done"
    assert described["report"]["figures"]["parameters"] == 32
    assert "onnx" not in described["heavy_modules_loaded"]  # the job read the model, not the window

    workbench.command(opened["window_id"], "tool.close")
    wait_until(lambda: not tool_windows(workbench), 15, 0.1, "the closed tool window to be forgotten")
    wait_until(lambda: not is_alive(opened["pid"]), 10, 0.05, "the tool window process to end")


def test_a_tool_window_whose_job_ended_holds_no_heavy_module_and_its_job_process_is_gone(workbench, child_tools,
                                                                                         tmp_path):
    """What keeps an idle tool window near a bare Qt window's memory (benchmarks/memory.py): the
    job loaded onnx, onnxruntime and NumPy in its own process, which ended with it; the report's
    chart (pyqtgraph, with NumPy) is drawn only when its tab is shown."""
    model = make_onnx(tmp_path / "models" / "tiny.onnx")
    workbench.run()
    opened = workbench.call("hub.open_tool", {"tool": "quantize", "run": True, "values": {
        "model": str(model), "mode": "dynamic", "output": str(model.with_name("tiny.int8.onnx"))}})
    wait_until(lambda: any(w["window_id"] == opened["window_id"] and w["state"] == "ready"
                           for w in tool_windows(workbench)), 30, 0.1, "the tool window to register")
    described = wait_for_state(workbench, opened["window_id"])
    assert described["state"] == "succeeded", described["log"]
    assert described["report"]["plots"]  # a chart the window has not drawn
    assert model.with_name("tiny.int8.onnx").is_file()  # the job did load onnx and onnxruntime

    assert described["heavy_modules_loaded"] == []
    assert described["job_pid"] is None
    wait_until(lambda: not window_children(opened["pid"]), 10, 0.05, "the ended job's process to be gone")


def window_children(pid: int) -> list[int]:
    """The live processes ``pid`` started (its job and whatever the job started)."""
    import psutil

    return [child.pid for child in psutil.Process(pid).children(recursive=True)
            if child.status() != psutil.STATUS_ZOMBIE]


def test_hub_open_tool_without_a_tool_name_is_refused(workbench, child_tools):
    workbench.run()
    with pytest.raises(Exception, match="needs a 'tool' name"):
        workbench.call("hub.open_tool", {"values": {}})


def test_a_model_converted_in_a_tool_window_reaches_its_project_window(workbench, child_tools, digits):
    root, model = digits
    workbench.run("open", str(root))
    project = workbench.wait_for_project(root)
    wait_until(lambda: workbench.command(project["window_id"], "modeltools.describeModels")["listed"], 30, 0.2,
               "the Models panel to list the models")

    workbench.command(project["window_id"], "modeltools.openTool", tool="convert", paths=[str(model)],
                      values={"simplify": False, "verify_samples": 0, "exporter": "torchscript"}, run=True)
    tool = ready_tool_window(workbench)
    assert tool["project"] == str(root.resolve()) and tool["pid"] != project["pid"]
    described = wait_for_state(workbench, tool["window_id"], timeout=120)
    assert described["state"] == "succeeded", described["log"]
    produced = model.with_suffix(".onnx")
    assert described["report"]["outputs"][0] == str(produced)

    panel = wait_until(lambda: (lambda d: d if d["selected"] == [str(produced)] else None)(
        workbench.command(project["window_id"], "modeltools.describeModels")), 30, 0.2,
        "the project window to select the new model")
    assert panel["notice"] == f"Convert to ONNX produced model.onnx in run {model.parent.parent.name}"
    assert panel["groups"][0][1] == ["model.onnx", "model.pt"]


def test_killing_a_tool_window_ends_its_job_and_leaves_the_project_window_and_hub_working(workbench, child_tools,
                                                                                          digits):
    root, _ = digits
    source = root / "notes.txt"
    source.write_text("count\n")
    workbench.run("open", str(root))
    project = workbench.wait_for_project(root)
    workbench.command(project["window_id"], "modeltools.openTool", tool="count", paths=[str(source)],
                      values={"steps": 100000, "delay": 0.01}, run=True)
    tool = ready_tool_window(workbench)
    job = wait_until(lambda: describe(workbench, tool["window_id"])["job_pid"], 30, 0.1, "the job to start")

    os.kill(tool["pid"], signal.SIGKILL)
    wait_until(lambda: not tool_windows(workbench), 15, 0.1, "the hub to forget the dead tool window")
    # Nobody reads its events any more: the job stops by itself, and removes its partial file.
    wait_until(lambda: not is_alive(job), 30, 0.1, "the orphaned job to end")
    assert not [p for p in root.iterdir() if p.name.endswith(".partial")]
    assert is_alive(workbench.hub_pid())
    assert workbench.command(project["window_id"], "modeltools.describeModels")["listed"] is True
    assert [w["kind"] for w in workbench.windows()] == ["project"]


def test_without_a_hub_the_project_window_starts_tool_windows_itself_and_stays_smooth(qtbot, child_tools, digits):
    """Three tool windows each run a real job (inspect of a PyTorch file: torch loads in each)
    while the project window's event loop is timed: the longest and the 99th-percentile gap between its 10 ms ticks must stay within a
    few times what they are with nothing running (measured just before, on the same machine).

    The gaps are taken less the time the GUI thread waited for a processor: the three jobs and
    whatever else runs on the machine can keep every core busy for a tenth of a second, and that
    says nothing of the window. Work or a blocking wait on the GUI thread still counts in full."""
    root, model = digits
    figures = load_benchmark().measure(root, model, "inspect", windows=3, timeout=240)
    print("tool windows stutter:", figures)
    assert figures["without_hub"] and len(figures["tool_window_pids"]) == 3
    for pid in figures["tool_window_pids"]:
        wait_until(lambda pid=pid: not is_alive(pid), 10, 0.05, "the tool windows to close")
    idle, busy = figures["idle"], figures["busy"]
    assert busy["p99_own_gap_ms"] <= 3 * idle["p99_own_gap_ms"], figures
    assert busy["max_own_gap_ms"] <= 10 * idle["max_own_gap_ms"], figures


def test_quit_workbench_in_a_tool_window_closes_it_and_the_project_window_and_ends_the_hub(workbench, child_tools,
                                                                                          tmp_path):
    from workbench.ipc.endpoint import socket_path
    from workbench.project import create_from_template

    root = create_from_template("empty", tmp_path / "notes").root
    model = make_onnx(root / "tiny.onnx")
    workbench.run("open", str(root))
    project = workbench.wait_for_project(root)
    workbench.call("hub.open_tool", {"tool": "inspect", "values": {"model": str(model)}, "project": str(root)})
    tool = ready_tool_window(workbench)
    hub = workbench.hub_pid()

    workbench.command(tool["window_id"], "workbench.quit")  # File ▸ Quit Workbench in the tool window

    for pid, what in ((tool["pid"], "the tool window"), (project["pid"], "the project window"), (hub, "the hub")):
        wait_until(lambda pid=pid: not is_alive(pid), 20, 0.1, f"{what} to end")
    assert not socket_path().exists()


def test_a_tool_window_has_quit_workbench_and_without_a_hub_it_closes_only_itself(qtbot, tmp_path, monkeypatch):
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from workbench.app.tool_window_process import ToolWindowHost
    from workbench.modeltools.params import ToolInvocation
    from workbench.modeltools.registry import get_tool
    from workbench.modeltools.widgets.tool_window import ToolWindow

    monkeypatch.setattr(QApplication, "quit", lambda *args: None)  # the process would end here
    model = make_onnx(tmp_path / "tiny.onnx")
    window = ToolWindow(get_tool("inspect"), ToolInvocation("inspect", {"model": str(model)}), run_on_open=False,
                        settings=QSettings(str(tmp_path / "tools.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    host = ToolWindowHost("tool-1", window)
    window.show()
    host.install_commands()
    assert [a.text() for a in window.menuBar().actions() if a.isVisible()] == ["File"]
    assert host.menus.actions["workbench.quit"].shortcut().toString() == "Ctrl+Q"
    assert host.menus.actions["file.closeWindow"].shortcut().toString() == "Ctrl+Shift+W"
    with qtbot.waitSignal(window.sig_closed):
        host.commands.execute("workbench.quit")  # no hub to ask
    assert not window.isVisible()


def test_workbench_given_paths_opens_a_project_file_in_its_window_and_a_loose_model_in_inspect(
        workbench, child_tools, digits, tmp_path):
    """`workbench PATH...` is what a file manager runs through the desktop entry (Exec=workbench %F)."""
    project = digits[0]
    model = make_onnx(tmp_path / "downloads" / "tiny.onnx")
    hparams = project / "hparams" / "digits.hparams"
    opened = workbench.run(str(hparams), str(model))
    assert f"Opened {project.resolve()}" in opened.stdout and f"Opened {model} in Inspect" in opened.stdout
    entry = workbench.wait_for_project(project)
    assert workbench.command(entry["window_id"], "editor.describe")["path"] == str(hparams.resolve())
    tool = wait_until(lambda: next((w for w in tool_windows(workbench) if w["state"] == "ready"), None),
                      30, 0.1, "the Inspect window to register")
    assert tool["title"] == "Inspect — tiny.onnx"
    assert wait_for_state(workbench, tool["window_id"])["state"] == "succeeded"
    # A command's name wins over a file of that name in the current folder.
    assert workbench.run("windows", "--json").returncode == 0

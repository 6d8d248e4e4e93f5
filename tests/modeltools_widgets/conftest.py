"""What the model tool window tests share: the built-in tools plus the job tests' ``count`` and
``merge`` tools (tests/modeltools/job_helpers.py), seen by this process and by every child
process (jobs, tool windows); tiny ONNX models made with onnx.helper; a project with run
outputs; and project windows with the model tools installed."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.modeltools.job_helpers import TOOLS, child_tools_path, existing_built_ins

TIMEOUT_MS = 30_000
RUN_IDS = ("20260101-090000-first", "20260102-090000-second")


@pytest.fixture
def tools(monkeypatch, tmp_path):
    """The built-in tools and the test tools, here and in child processes."""
    from workbench.modeltools import registry

    built_in = existing_built_ins() + TOOLS
    monkeypatch.setattr(registry, "BUILT_IN", built_in)
    monkeypatch.setenv("PYTHONPATH", child_tools_path(tmp_path / "site", built_in))
    return built_in


def make_onnx(path: Path, layers: int = 2, width: int = 4) -> Path:
    """A small valid ONNX model (MatMul + Relu layers, dynamic batch), written without torch."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, weights, previous = [], [], "x"
    for i in range(layers):
        weights.append(numpy_helper.from_array(rng.standard_normal((width, width)).astype(np.float32), f"w{i}"))
        nodes.append(helper.make_node("MatMul", [previous, f"w{i}"], [f"m{i}"], name=f"matmul{i}"))
        nodes.append(helper.make_node("Relu", [f"m{i}"], [f"r{i}"], name=f"relu{i}"))
        previous = f"r{i}"
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])],
                              [helper.make_tensor_value_info(previous, TensorProto.FLOAT, ["batch", width])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


@pytest.fixture
def tiny_onnx(tmp_path) -> Path:
    return make_onnx(tmp_path / "models" / "tiny.onnx")


@pytest.fixture
def model_project(tmp_path) -> Path:
    """A project with two runs whose outputs hold models (the second run newer), a model in a
    folder of its own, a checkpoint (not listed) and files that are not models."""
    from workbench.project import create_from_template

    root = create_from_template("empty", tmp_path / "proj").root
    stamp = time.time() - 3600
    for number, run_id in enumerate(RUN_IDS):
        outputs = root / "runs" / run_id / "outputs"
        make_onnx(outputs / "model.onnx")
        (outputs / "log.txt").write_text("not a model")
        (root / "runs" / run_id / "checkpoints").mkdir()
        (root / "runs" / run_id / "checkpoints" / "step-00000010.pt").write_bytes(b"checkpoint")
        for path in outputs.iterdir():
            os.utime(path, (stamp + number * 600, stamp + number * 600))
    make_onnx(root / "exported" / "base.onnx")
    os.utime(root / "exported" / "base.onnx", (stamp - 600, stamp - 600))
    (root / ".venv").mkdir()
    (root / ".venv" / "hidden.onnx").write_bytes(b"not listed")
    return root


class HubRequests:
    """Stands in for the window process's hub link: records each request and answers it."""

    def __init__(self):
        self.calls: list[tuple[str, dict]] = []
        self.answer: dict | Exception = {"window_id": "tool-1", "pid": 4242}

    def __call__(self, method, params, on_result, on_error):
        self.calls.append((method, params))
        if isinstance(self.answer, Exception):
            on_error(self.answer)
        else:
            on_result(self.answer)


@pytest.fixture
def open_window(qtbot, tools):
    """``open_window(root) -> window``: a project window with only the model tools installed
    (its hub link replaced by a recorder, ``window.hub_requests``), its models listed."""
    from workbench.modeltools.widgets import panel_of
    from workbench.project import load_project
    from workbench.ui.project_window import ProjectWindow

    windows = []

    def open_(root: Path):
        window = ProjectWindow(load_project(root))
        window.resize(1200, 800)
        qtbot.addWidget(window)
        window.hub_requests = HubRequests()
        window.hub_requester = window.hub_requests
        window.install_capabilities(("workbench.modeltools.widgets:install",))
        window.show()
        qtbot.waitUntil(lambda: panel_of(window).listed, timeout=TIMEOUT_MS)
        windows.append(window)
        return window

    yield open_
    for window in windows:
        window.tasks.wait(TIMEOUT_MS)


SHOTS = Path(os.environ.get("WORKBENCH_SCREENSHOTS", "") or "/tmp/workbench-screenshots")


def screenshot(widget, name: str) -> Path:
    """Save a picture of ``widget`` (under WORKBENCH_SCREENSHOTS, default
    /tmp/workbench-screenshots) and return its path."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    widget.grab().save(str(path))
    return path


def show_last_tab(qtbot, report, size: tuple[int, int] = (760, 520)):
    """A ResultView of ``size`` on screen with ``report``, its last tab (a chart's) in front."""
    from workbench.modeltools.widgets.result_view import ResultView

    view = ResultView()
    qtbot.addWidget(view)
    view.resize(*size)
    view.show()
    view.set_report(report)
    view.tabs.setCurrentIndex(view.tabs.count() - 1)
    return view

"""What the Devices panel tests share: the device tests' real agents, private folders and
keyring, and the digits project and model (tests/device/conftest.py); project windows with the
model tools and the device capability installed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.device.conftest import (  # noqa: F401  (fixtures, two of them autouse)
    RUN_ID,
    digits_onnx,
    digits_project,
    private_device_folders,
    private_keyring_and_agent,
    start_agent,
    trained_digits_project,
)
from tests.modeltools_widgets.conftest import HubRequests, screenshot  # noqa: F401

TIMEOUT_MS = 60_000


@pytest.fixture
def project_model(digits_project, digits_onnx) -> Path:
    """The fp32 digits ONNX model in the digits project's run folder."""
    target = digits_project / "runs" / RUN_ID / "outputs" / "model.onnx"
    shutil.copy(digits_onnx, target)
    return target


@pytest.fixture
def device_window(qtbot):
    """``device_window(root, more=()) -> window``: a project window with the model tools, the
    device capability and the capabilities ``more`` names installed (its hub link a recorder),
    its device list filled once."""
    from workbench.device.widgets import session_of
    from workbench.project import load_project
    from workbench.ui.project_window import ProjectWindow

    windows = []

    def open_(root: Path, more: tuple[str, ...] = ()):
        window = ProjectWindow(load_project(root))
        window.resize(1400, 900)
        qtbot.addWidget(window)
        window.hub_requests = HubRequests()
        window.hub_requester = window.hub_requests
        window.install_capabilities(("workbench.modeltools.widgets:install",
                                     "workbench.device.widgets:install", *more))
        window.show()
        qtbot.waitUntil(lambda: session_of(window).listed, timeout=TIMEOUT_MS)
        windows.append(window)
        return window

    yield open_
    for window in windows:
        from workbench.device.widgets import session_of

        session_of(window).close_down()
        window.tasks.wait(TIMEOUT_MS)


@pytest.fixture
def paired_window(start_agent, device_window):
    """``paired_window(root, more=()) -> (agent, window, panel, session)``: an agent named
    "Bench Phone", paired, and a device window on ``root`` that lists it."""
    from workbench.device.link import pair_device
    from workbench.device.widgets import panel_of, session_of

    def open_(root: Path, more: tuple[str, ...] = ()):
        phone = start_agent(name="Bench Phone")
        pair_device(phone.address, phone.code)
        window = device_window(root, more)
        return phone, window, panel_of(window), session_of(window)

    return open_

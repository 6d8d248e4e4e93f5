"""The Registry in a project window: Models ▸ Registry shows it, its commands are in the palette,
and a version opens in a model tool the way the Explorer opens a model file (a tool window asked
of the hub). Pictures of the panel in the light and the dark theme are saved for a look."""

from __future__ import annotations

import pytest

from tests.registry_widgets.conftest import TIMEOUT_MS, finish, open_models, screenshot


class HubRequests:
    """Stands where the window's process links it to the hub: keeps what was asked."""

    def __init__(self):
        self.asked: list[tuple[str, dict]] = []

    def __call__(self, method, params, on_result, on_error) -> None:
        self.asked.append((method, params))
        if on_result is not None:
            on_result({"window_id": "tool-1"})


@pytest.fixture
def window(qtbot, registry_project):
    from workbench.project import load_project
    from workbench.ui.project_window import ProjectWindow

    window = ProjectWindow(load_project(registry_project))
    window.resize(1300, 800)
    qtbot.addWidget(window)
    window.hub_requests = HubRequests()
    window.hub_requester = window.hub_requests
    window.show()
    window.install_capabilities(("workbench.modeltools.widgets:install", "workbench.registry.widgets:install"))
    yield window
    window.tasks.wait(TIMEOUT_MS)


def test_models_registry_shows_the_panel_and_its_commands_are_in_the_palette(window, qtbot):
    from workbench.registry.widgets import panel_of

    panel = panel_of(window)
    assert panel is not None and panel.table.rowCount() == 4
    registry_menu = next(action for action in window.menuBar().actions() if action.text() == "Models").menu()
    assert "Registry" in [action.text() for action in registry_menu.actions()]
    window.commands.execute("registry.show")
    qtbot.waitUntil(panel.isVisible, timeout=TIMEOUT_MS)
    labels = {command.label for command in window.commands.all() if command.in_palette}
    assert {"Registry: Set Alias…", "Registry: Roll Back Alias…", "Registry: Run Retention…",
            "Registry: Open Version in Model Tool", "Registry: Remove Version…"} <= labels
    finish(qtbot, panel, lambda: window.commands.execute("registry.setAlias", version=0, alias="canary",
                                                         reason="a first look"))
    assert open_models(window.project.root).aliases.all()["canary"] == 0


def test_a_version_opens_its_onnx_export_in_a_model_tool(window, qtbot):
    from workbench.registry.widgets import panel_of

    panel = panel_of(window)
    window.commands.execute("registry.openInTool", version=2)
    method, params = window.hub_requests.asked[-1]
    onnx = window.project.root / "registry" / "models" / "bestmodel_0002.onnx"
    assert method == "hub.open_tool" and params["tool"] == "inspect" and str(onnx) in str(params["values"])
    panel.select_version(2)
    menu = panel.context_menu()
    tools = menu.findChild(type(menu), "registry-open-menu")
    assert "modeltools.inspect" in [action.objectName() for action in tools.actions()]
    window.commands.execute("registry.openInTool", version=1, tool="inspect")
    assert "bestmodel_0001.pt" in str(window.hub_requests.asked[-1][1]["values"])


@pytest.mark.parametrize("theme_name", ["light", "dark"])
def test_pictures_of_the_panel(registry_project, make_panel, qtbot, theme_name):
    from workbench.qt import theme

    theme.apply_theme(theme_name)
    try:
        panel, _errors = make_panel(registry_project)
        panel.select_version(2)
        qtbot.waitUntil(lambda: len(panel.plot.plotted()[0]) == 4, timeout=TIMEOUT_MS)
        path = screenshot(panel, f"registry-panel-{theme_name}")
        assert path.stat().st_size > 0
    finally:
        theme.apply_theme("light")

"""The registry's widgets: the Registry panel of a project window (model versions as a table and
a metric across them, with pin, alias, rollback, open in a model tool, remove and retention; and
dataset versions with their details and Cut Version…), its Models ▸ Registry and Models ▸ Cut
Dataset Version… menu items and its palette commands.

``install(window)`` joins them to a project window after its first paint. A model opens in a
tool through the window's command registry (the commands the Explorer offers on a model file),
so the registry never names the model tools' widgets. pyqtgraph loads only once the plot is
first shown with points.
"""

from __future__ import annotations

REGISTRY_DOCK_ID = "registry"


def install(window) -> None:
    """Add the Registry dock and its commands to ``window``."""
    from workbench.qt.docks import add_dock_beside_runs
    from workbench.registry.widgets.commands import register_commands
    from workbench.registry.widgets.registry_panel import RegistryPanel

    panel = RegistryPanel(window.project.root, lambda: _project_settings(window), window.tasks,
                          window.commands, window.show_error)
    panel.setObjectName("registry-panel")
    # Listed before the dock is placed: a new dock with something to show joins the Runs tabs.
    panel.refresh()
    show = add_dock_beside_runs(window, REGISTRY_DOCK_ID, "Registry", panel,
                                lambda: bool(panel.versions or panel.dataset_view.versions))

    register_commands(window, panel, show)
    _decorate_buttons(panel)
    closed = getattr(window, "sig_closed", None)
    if closed is not None:
        closed.connect(panel.close_down)


def panel_of(window):
    """The window's Registry panel (None before the registry was installed)."""
    from workbench.registry.widgets.registry_panel import RegistryPanel

    return window.findChild(RegistryPanel, "registry-panel")


def _project_settings(window) -> dict:
    """The project's workbench.toml as it is now (edited since the window opened, perhaps); the
    window's copy when it cannot be read."""
    from workbench.project.errors import ProjectError
    from workbench.project.project_file import load_project

    try:
        return load_project(window.project.root).settings
    except (ProjectError, OSError):  # a half-saved workbench.toml: the window's copy until it is whole
        return window.project.settings


def _decorate_buttons(panel) -> None:
    from workbench.qt.icons import ThemedIcons, decorate_button

    icons = ThemedIcons(panel)
    for key, name in (("refresh", "refresh"), ("pin", "msc.pinned"), ("alias", "msc.tag"),
                      ("rollback", "undo"), ("open", "inspect"), ("remove", "remove"), ("gc", "clear"),
                      ("history", "msc.history"), ("cut", "cut")):
        decorate_button(icons, panel.buttons[key], name)
    for view, name in (("models", "models"), ("datasets", "msc.database")):
        decorate_button(icons, panel.view_buttons[view], name)

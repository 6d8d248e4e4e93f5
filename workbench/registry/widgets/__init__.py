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
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QDockWidget

    from workbench.registry.widgets.commands import register_commands
    from workbench.registry.widgets.registry_panel import RegistryPanel

    panel = RegistryPanel(window.project.root, lambda: _project_settings(window), window.tasks,
                          window.commands, window.show_error)
    panel.setObjectName("registry-panel")
    # A dock the saved layout knows goes back where the user left it; a new one waits at the
    # bottom, hidden while the project has no registry, until Models ▸ Registry shows it.
    known = f"dock-{REGISTRY_DOCK_ID}".encode("utf-16-be") in bytes(window.saveState().data())
    dock = window.add_dock(REGISTRY_DOCK_ID, "Registry", panel, Qt.DockWidgetArea.BottomDockWidgetArea)
    panel.refresh()
    placed = [known]

    def place() -> None:
        # First shown: as a tab beside the Runs dock, where a run's versions are looked for
        # (side by side, the two panels' tables would need more width than most screens have).
        runs = window.findChild(QDockWidget, "dock-runs")
        if runs is not None and not runs.isHidden() and window.dockWidgetArea(runs) == window.dockWidgetArea(dock):
            window.tabifyDockWidget(runs, dock)
            runs.raise_()
        placed[0] = True

    if not known:
        if panel.versions or panel.dataset_view.versions:
            place()
        else:
            dock.hide()
    else:
        # Hidden until the saved layout shows it (or not): shown meanwhile, its table's height
        # would make the window taller than it was saved.
        dock.hide()

    def show() -> None:
        if not placed[0]:
            place()
        dock.show()
        dock.raise_()

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

"""The pipeline's widgets: the Pipeline panel of a project window (iterations as a table and a
metric across them, the selected iteration's steps, Start / Stop / Resume), its Models ▸
Pipeline menu item and its palette commands.

``install(window)`` joins them to a project window after its first paint. pyqtgraph loads only
once the plot is first shown with points.
"""

from __future__ import annotations

PIPELINE_DOCK_ID = "pipeline"


def install(window) -> None:
    """Add the Pipeline dock and its commands to ``window``."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QDockWidget

    from workbench.pipeline.widgets.commands import register_commands
    from workbench.pipeline.widgets.pipeline_panel import PipelinePanel

    panel = PipelinePanel(window.project.root, window.tasks, window.show_error)
    panel.setObjectName("pipeline-panel")
    # A dock the saved layout knows goes back where the user left it; a new one waits at the
    # bottom, hidden while the project declares no pipeline and has run none, until Models ▸
    # Pipeline shows it.
    known = f"dock-{PIPELINE_DOCK_ID}".encode("utf-16-be") in bytes(window.saveState().data())
    dock = window.add_dock(PIPELINE_DOCK_ID, "Pipeline", panel, Qt.DockWidgetArea.BottomDockWidgetArea)
    panel.refresh()
    placed = [known]

    def place() -> None:
        # First shown: as a tab beside the Runs dock, as the Registry's is (an iteration's runs
        # and versions are looked for there).
        runs = window.findChild(QDockWidget, "dock-runs")
        if runs is not None and not runs.isHidden() and window.dockWidgetArea(runs) == window.dockWidgetArea(dock):
            window.tabifyDockWidget(runs, dock)
            runs.raise_()
        placed[0] = True

    if not known:
        if panel.iterations or panel.declares_pipeline():
            place()
        else:
            dock.hide()
    else:
        # Hidden until the saved layout shows it (or not): shown meanwhile, its tables' height
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
    """The window's Pipeline panel (None before the pipeline was installed)."""
    from workbench.pipeline.widgets.pipeline_panel import PipelinePanel

    return window.findChild(PipelinePanel, "pipeline-panel")


def _decorate_buttons(panel) -> None:
    from workbench.qt.icons import ThemedIcons, decorate_button

    icons = ThemedIcons(panel)
    for key, name in (("start", "run"), ("stop", "stop"), ("resume", "continue"), ("refresh", "refresh")):
        decorate_button(icons, panel.buttons[key], name)

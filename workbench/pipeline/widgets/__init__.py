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
    from workbench.pipeline.widgets.commands import register_commands
    from workbench.pipeline.widgets.pipeline_panel import PipelinePanel
    from workbench.qt.docks import add_dock_beside_runs

    panel = PipelinePanel(window.project.root, window.tasks, window.show_error)
    panel.setObjectName("pipeline-panel")
    # Listed before the dock is placed: a new dock with something to show joins the Runs tabs.
    panel.refresh()
    show = add_dock_beside_runs(window, PIPELINE_DOCK_ID, "Pipeline", panel,
                                lambda: bool(panel.iterations or panel.declares_pipeline()))

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

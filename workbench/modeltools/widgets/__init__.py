"""The model tools' widgets: the Models panel of a project window (the project's model files by
run, with the tools on right-click), the tools' entries in the Explorer's right-click menu, and
the tool window (generated form, Run, Cancel, stage progress, log, report) that each tool runs
in, in a process of its own (workbench.app.tool_window_process).

``install(window)`` joins the panel and the commands to a project window after its first paint.
The tools' declarations are light (no torch, no onnx); pyqtgraph, onnx and the tools' code load
only in a tool window's process or its job, never in the project window.
"""

from __future__ import annotations

MODELS_DOCK_ID = "models"


def install(window) -> None:
    """Add the Models dock and the tool commands to ``window``, and follow the
    ``model.produced`` event."""
    from pathlib import Path

    from PySide6.QtCore import Qt

    from workbench.ipc.messages import EVENT_MODEL_PRODUCED
    from workbench.modeltools.widgets.commands import ModelToolCommands, ToolOpener, available_tools
    from workbench.modeltools.widgets.models_panel import ModelsPanel

    tools = available_tools()
    panel = ModelsPanel(window.project.root, window.tasks, tools)
    panel.setObjectName("modeltools-models-panel")
    known = f"dock-{MODELS_DOCK_ID}".encode("utf-16-be") in bytes(window.saveState().data())
    dock = window.add_dock(MODELS_DOCK_ID, "Models", panel, Qt.DockWidgetArea.LeftDockWidgetArea)
    explorer = getattr(window, "explorer", None)
    if not known and explorer is not None:
        # Under the Explorer, where a file's tools are one right-click away in either. Qt
        # tabs a dock split from a tabbed one instead, so the Explorer's tab mates (Source
        # Control) step out while the Models dock is added below it, and then come back.
        tabbed = [(other, not other.isHidden()) for other in window.tabifiedDockWidgets(explorer)]
        for other in [dock, *(other for other, _visible in tabbed)]:
            window.removeDockWidget(other)
        window.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, dock, Qt.Orientation.Vertical)
        dock.show()
        for other, visible in tabbed:
            window.tabifyDockWidget(explorer, other)
            other.setVisible(visible)
        if tabbed:
            from PySide6.QtCore import QTimer

            QTimer.singleShot(0, explorer.raise_)  # the Explorer stays in front, once laid out
    opener = ToolOpener(window, tools)
    commands = ModelToolCommands(window, opener, panel)
    commands.register()
    panel.sig_open_tool.connect(lambda tool, paths: opener.open(tool, paths))
    panel.opener = opener  # type: ignore[attr-defined]
    panel.model_commands = commands  # type: ignore[attr-defined]
    from workbench.modeltools.widgets.models_panel import GROUP_ROLE
    from workbench.qt.icons import ThemedIcons, decorate_button, show_file_icons

    icons = ThemedIcons(panel)
    show_file_icons(panel.tree, icons, lambda item: item.data(0, GROUP_ROLE) is None)
    decorate_button(icons, panel.notice.inspect_button, "inspect")
    decorate_button(icons, panel.notice.reveal_button, "open")

    root = window.project.root.resolve()

    def produced(data) -> None:
        path = (data or {}).get("path") if isinstance(data, dict) else None
        if not path:
            return
        try:
            Path(path).resolve().relative_to(root)
        except ValueError:
            return  # another project's model
        panel.show_produced(path, data.get("tool"))

    window.on_event(EVENT_MODEL_PRODUCED, produced)
    closed = getattr(window, "sig_closed", None)
    if closed is not None:
        closed.connect(panel.close_down)
    panel.refresh()


def panel_of(window):
    """The window's Models panel (None before the model tools were installed)."""
    from workbench.modeltools.widgets.models_panel import ModelsPanel

    return window.findChild(ModelsPanel, "modeltools-models-panel")


def opener_of(window):
    """The window's ``ToolOpener`` (None before the model tools were installed)."""
    panel = panel_of(window)
    return getattr(panel, "opener", None) if panel is not None else None

"""The debug capability's widgets: the Debug dock (controls, call stack, variables, watches and
the debug console), breakpoints in the gutter of Python editors with the current line marked,
and the Run menu's debug commands.

``install(window)`` joins them to a project window after its first paint. It starts nothing and
imports no debugpy: debugpy's adapter is started, as a child process, by the first Debug command.
"""

from __future__ import annotations

from pathlib import Path

DEBUG_DOCK_ID = "debug"


def install(window) -> None:
    """Add the Debug dock, the gutter breakpoints and the debug commands to ``window``."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QDockWidget

    from workbench.debug.widgets.commands import DEBUGGABLE_SUFFIXES, DebugCommands
    from workbench.debug.widgets.controller import DebugController
    from workbench.debug.widgets.debug_panel import DebugPanel
    from workbench.debug.widgets.gutter import BreakpointGutter

    controller = DebugController(window.project.root, window.tasks, window.project.writable, window)
    controller.setObjectName("debug-controller")
    panel = DebugPanel(controller)
    panel.setObjectName("debug-panel")
    known = f"dock-{DEBUG_DOCK_ID}".encode("utf-16-be") in bytes(window.saveState().data())
    dock = window.add_dock(DEBUG_DOCK_ID, "Debug", panel, Qt.DockWidgetArea.BottomDockWidgetArea,
                           shortcut="Ctrl+Shift+D")
    if not known:
        # A first open: behind the other bottom docks; a debug session brings it to the front.
        bottom = [d for d in window.findChildren(QDockWidget)
                  if d is not dock and window.dockWidgetArea(d) == Qt.DockWidgetArea.BottomDockWidgetArea
                  and not d.isFloating()]
        if bottom:
            window.tabifyDockWidget(bottom[0], dock)
            bottom[0].raise_()
        else:
            window.resizeDocks([dock], [max(260, window.height() // 3)], Qt.Orientation.Vertical)
    commands = DebugCommands(window, controller, dock)
    commands.register()
    controller.debug_commands = commands
    from workbench.qt.icons import ThemedIcons, decorate_button

    icons = ThemedIcons(panel)
    for key, name in (("continue", "continue"), ("pause", "pause"), ("stepOver", "step-over"),
                      ("stepInto", "step-into"), ("stepOut", "step-out"), ("restart", "restart"), ("stop", "stop")):
        decorate_button(icons, panel.buttons[key], name)

    def attach_gutter(tab) -> None:
        if getattr(tab, "editor", None) is not None and Path(tab.path).suffix.lower() in DEBUGGABLE_SUFFIXES \
                and getattr(tab, "breakpoint_gutter", None) is None:
            tab.breakpoint_gutter = BreakpointGutter(tab, controller)

    for tab in window.editors():
        attach_gutter(tab)
    opened = getattr(window, "sig_editor_opened", None)
    if opened is not None:
        opened.connect(attach_gutter)

    def follow(frame) -> None:
        # The editor follows the selected frame (a file that is here; not `<string>` code).
        if frame is not None and frame.path and Path(frame.path).is_file():
            window.open_file(frame.path, frame.line)

    controller.sig_frame_selected.connect(follow)
    controller.sig_state_changed.connect(lambda state: commands.show_dock() if state == "starting" else None)
    closed = getattr(window, "sig_closed", None)
    if closed is not None:
        closed.connect(controller.close_down)


def controller_of(window):
    """The window's ``DebugController`` (None before the debugger was installed)."""
    from workbench.debug.widgets.controller import DebugController

    return window.findChild(DebugController, "debug-controller")


def panel_of(window):
    """The window's Debug panel (None before the debugger was installed)."""
    from workbench.debug.widgets.debug_panel import DebugPanel

    return window.findChild(DebugPanel, "debug-panel")

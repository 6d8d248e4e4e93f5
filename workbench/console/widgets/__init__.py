"""The console capability's widgets: the Console dock (IPython consoles as tabs, each bound to a
kernel in the project's Python, and the Variables view of the current one), and the Run menu's
console commands (Run File / Selection or Line / Cell in Console, New Console, Interrupt,
Restart, Clear).

``install(window)`` joins them to a project window after its first paint. It loads no qtconsole
and starts no kernel: the first kernel starts when the dock is first shown or a Run command needs
it, on a worker thread, while qtconsole loads on another.
"""

from __future__ import annotations

CONSOLE_DOCK_ID = "console"
SHOWN_SETTLE_MS = 250


def install(window) -> None:
    """Add the Console dock (tabbed with the bottom docks) and its commands to ``window``."""
    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtWidgets import QDockWidget

    from workbench.console.widgets.commands import ConsoleCommands
    from workbench.console.widgets.console_panel import ConsolePanel

    panel = ConsolePanel(window.project, window.tasks)
    panel.setObjectName("console-panel")
    known = f"dock-{CONSOLE_DOCK_ID}".encode("utf-16-be") in bytes(window.saveState().data())
    dock = window.add_dock(CONSOLE_DOCK_ID, "Console", panel, Qt.DockWidgetArea.BottomDockWidgetArea)
    if not known:
        # Its place on a first open: behind the other bottom docks, so no kernel starts until
        # the user (or a Run command) brings it to the front.
        bottom = [d for d in window.findChildren(QDockWidget)
                  if d is not dock and window.dockWidgetArea(d) == Qt.DockWidgetArea.BottomDockWidgetArea
                  and not d.isFloating()]
        if bottom:
            front = next((d for d in bottom if d.isVisible() and not d.visibleRegion().isEmpty()), bottom[0])
            window.tabifyDockWidget(front, dock)
            # Raised again once the layout has made the group's tab bar, which would otherwise
            # show the tab added last.
            front.raise_()
            QTimer.singleShot(0, front, front.raise_)
        else:
            window.resizeDocks([dock], [max(260, window.height() // 3)], Qt.Orientation.Vertical)

    def start_if_in_front() -> None:
        if dock.isVisible() and not dock.visibleRegion().isEmpty():
            panel.ensure_console()

    def shown(visible: bool) -> None:
        # Checked a moment later: while docks are tabbed and layouts restored, a dock is briefly
        # "visible" in front of its tab group without the user ever seeing it.
        if visible:
            QTimer.singleShot(SHOWN_SETTLE_MS, panel, start_if_in_front)

    dock.visibilityChanged.connect(shown)
    shown(True)  # a dock in front from the start (a saved layout, or no other bottom dock)
    commands = ConsoleCommands(window, panel, dock)
    commands.register()
    panel.console_commands = commands
    closed = getattr(window, "sig_closed", None)
    if closed is not None:
        closed.connect(panel.close_down)


def panel_of(window):
    """The window's Console panel (None before the console capability was installed)."""
    from workbench.console.widgets.console_panel import ConsolePanel

    return window.findChild(ConsolePanel, "console-panel")


def commands_of(window):
    """The window's ``ConsoleCommands`` (None before the console capability was installed)."""
    panel = panel_of(window)
    return getattr(panel, "console_commands", None) if panel is not None else None

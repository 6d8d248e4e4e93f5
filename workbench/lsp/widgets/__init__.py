"""Code intelligence in a project window: completion as you type and on Ctrl+Space, signature
help on ``(`` and ``,``, hover help, go to definition (F12), find references (Shift+F12),
rename (F2), the Outline and Problems docks, and Format Document / Selection, all from one
python-lsp-server per window.

``install(window)`` joins them to a project window after its first paint; the server starts
only when the first Python file is open, on threads of its own, and the protocol library is
imported there, never on the window's way to its first paint.
"""

from __future__ import annotations

PROBLEMS_DOCK_ID = "problems"
OUTLINE_DOCK_ID = "outline"
REFERENCES_DOCK_ID = "references"
BOTTOM_NEIGHBOURS = ("dock-runs", "dock-devices", "dock-console")


def install(window) -> None:
    """Add the Problems and Outline docks, the code commands and the Python completion and
    hover providers to ``window``, and link the Python editors open now and later."""
    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtWidgets import QDockWidget

    from workbench.lsp.widgets.commands import LanguageCommands
    from workbench.lsp.widgets.controller import LanguageController
    from workbench.lsp.widgets.outline_panel import OutlinePanel
    from workbench.lsp.widgets.problems_panel import ProblemsPanel
    from workbench.lsp.widgets.status import ServerStatusLabel

    controller = LanguageController(window)
    problems = ProblemsPanel(window, controller.restart)
    outline = OutlinePanel(window, controller)
    # Each dock joins a tab group, its place on a first open (a saved layout, restored once
    # every dock is in, has the last word). Qt widens the window for the moment a dock stands
    # beside the others, or a group gets its tab bar: the window gets its size back after.
    size = window.size()
    try:
        problems_dock = window.add_dock(PROBLEMS_DOCK_ID, "Problems", problems, Qt.DockWidgetArea.BottomDockWidgetArea)
        for name in BOTTOM_NEIGHBOURS:
            neighbour = window.findChild(QDockWidget, name)
            if neighbour is not None:
                window.tabifyDockWidget(neighbour, problems_dock)
                if neighbour.isVisible():
                    neighbour.raise_()
                break
        outline_dock = window.add_dock(OUTLINE_DOCK_ID, "Outline", outline, Qt.DockWidgetArea.LeftDockWidgetArea)
        explorer = window.findChild(QDockWidget, "dock-explorer")
        if explorer is not None:
            # A tab beside the Explorer, as the side bars of other editors have it: the column
            # keeps its height for the files.
            window.tabifyDockWidget(explorer, outline_dock)
            explorer.raise_()
    finally:
        if window.isVisible():
            window.layout().activate()
            window.resize(size)

    def show_outline() -> None:
        outline_dock.show()
        outline_dock.raise_()
        outline.refresh()
        outline.focus_filter()

    def show_references(name, locations) -> None:
        from workbench.lsp.widgets.references_panel import ReferencesPanel

        panel = window.findChild(ReferencesPanel, "lsp-references-panel")
        if panel is None:
            panel = ReferencesPanel(window)
            dock = window.add_dock(REFERENCES_DOCK_ID, "References", panel, Qt.DockWidgetArea.BottomDockWidgetArea)
            window.tabifyDockWidget(problems_dock, dock)
        dock = panel.parentWidget()
        dock.show()
        dock.raise_()
        panel.show_locations(name, locations)

    commands = LanguageCommands(window, controller, show_outline, show_references)
    commands.register()
    controller.commands = commands
    for suffix in (".py", ".pyi"):
        window.completions.register(suffix, controller.complete)
        window.hovers.register(suffix, controller.hover)
    status = ServerStatusLabel(controller)
    window.add_status_widget(status, left=True)
    controller.sig_status_changed.connect(problems.show_status)
    problems.show_settings_problems(controller.config.problems)

    def adopt(tab) -> None:
        problems.watch(tab)
        controller.adopt(tab)
        if window.current_editor() is tab:
            outline.refresh()

    def adopt_open_editors() -> None:
        for tab in window.editors():
            adopt(tab)

    # The editors open at start are linked (and the server started) once the start-up is over,
    # on the next turn of the event loop: the server's client library loads off that path.
    QTimer.singleShot(0, window, adopt_open_editors)
    opened = getattr(window, "sig_editor_opened", None)
    if opened is not None:
        opened.connect(adopt)
    closed = getattr(window, "sig_closed", None)
    if closed is not None:
        closed.connect(controller.shut_down)


def controller_of(window):
    """The window's ``LanguageController`` (None before the capability was installed)."""
    from workbench.lsp.widgets.controller import LanguageController

    return window.findChild(LanguageController, "lsp-controller")

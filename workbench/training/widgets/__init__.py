"""The training capability's widgets: the Runs dock (runs, live curves, log, comparison), the
Run menu's commands, the status-bar indicator of active runs, and in ``.hparams`` files the
checker that underlines mistakes as the user types, the completion of keys and values, and
the help shown when hovering a key.

``install(window)`` joins them to a project window after its first paint. The run service,
the hyper-parameter module and pyqtgraph are imported inside the functions that use them, never
at module top: pyqtgraph only once a curve is first shown.
"""

from __future__ import annotations

RUNS_DOCK_ID = "runs"


def install(window) -> None:
    """Add training to ``window``: session, Runs dock, commands, status indicator, .hparams
    checks, completions and hover help."""
    from PySide6.QtCore import Qt

    from workbench.training.widgets.activation import refresh_on_activation
    from workbench.training.widgets.commands import install_commands
    from workbench.training.widgets.hparams_assist import HParamsAssist
    from workbench.training.widgets.hparams_check import HPARAMS_SUFFIX, HParamsChecker
    from workbench.training.widgets.runs_panel import RunsPanel
    from workbench.training.widgets.session import TrainingSession
    from workbench.training.widgets.status import ActiveRunsButton

    session = TrainingSession(window)
    session.setObjectName("training-session")
    panel = RunsPanel(session, window.commands, window.show_error,
                      lambda path, line: window.open_file(path, line))
    panel.setObjectName("training-runs-panel")
    # A dock the window's saved layout already knows goes back where the user left it; a new one
    # opens at the bottom, shown for a project that trains and hidden for one that does not.
    known = f"dock-{RUNS_DOCK_ID}".encode("utf-16-be") in bytes(window.saveState().data())
    dock = window.add_dock(RUNS_DOCK_ID, "Runs", panel, Qt.DockWidgetArea.BottomDockWidgetArea)
    if not known:
        window.resizeDocks([dock], [max(240, window.height() // 3)], Qt.Orientation.Vertical)
        if not window.project.settings.get("training"):
            dock.hide()
    commands = install_commands(window, session, panel, dock)
    panel.training_commands = commands
    _show_button_icons(panel)
    button = ActiveRunsButton(session, commands.show_runs)
    button.setObjectName("training-active-runs")
    window.add_status_widget(button)
    checker = HParamsChecker(window.project.root)
    assist = HParamsAssist(checker)
    window.diagnostics.register(HPARAMS_SUFFIX, checker)
    window.completions.register(HPARAMS_SUFFIX, assist.complete)
    window.hovers.register(HPARAMS_SUFFIX, assist.hover)
    refresh_on_activation(window, session)
    closed = getattr(window, "sig_closed", None)
    if closed is not None:
        closed.connect(panel.close_down)
    session.refresh()


def panel_of(window):
    """The window's Runs panel (None before training was installed)."""
    from workbench.training.widgets.runs_panel import RunsPanel

    return window.findChild(RunsPanel, "training-runs-panel")


def session_of(window):
    """The window's ``TrainingSession`` (None before training was installed)."""
    from workbench.training.widgets.session import TrainingSession

    return window.findChild(TrainingSession, "training-session")


def commands_of(window):
    """The window's ``TrainingCommands`` (None before training was installed)."""
    panel = panel_of(window)
    return getattr(panel, "training_commands", None) if panel is not None else None


def _show_button_icons(panel) -> None:
    from workbench.qt.icons import ThemedIcons, decorate_button

    icons = ThemedIcons(panel)
    for command_id, name in (("training.trainLocally", "run"), ("training.stopRun", "stop"),
                             ("training.resumeRun", "continue"), ("training.resumeAsNewRun", "restart"),
                             ("training.terminateRun", "terminate"), ("training.compareRuns", "compare"),
                             ("training.openRunFolder", "open")):
        if command_id in panel.buttons:
            decorate_button(icons, panel.buttons[command_id], name)

"""The cluster capability's widgets: the Cluster Profiles dialog (add, edit, test, remove), the
Run on Cluster dialog (profile, resources, what will be synced, the start's stages), and cluster
runs in the Runs panel (Cluster, Job and Scheduler columns, a Cluster section in the details,
Pull Products, the "Model produced" notice).

``install(window)`` joins them to a project window after its first paint, after training: the
Runs panel is found by its object name ("training-runs-panel") and extended through the hooks it
offers, so nothing here imports the training widgets' classes. paramiko, the services and the
dialogs are imported inside the functions that use them, never at module top.
"""

from __future__ import annotations

RUNS_PANEL_NAME = "training-runs-panel"


def install(window) -> None:
    """Add the cluster commands and dialogs to ``window``, and cluster runs to its Runs panel
    when training is installed."""
    from PySide6.QtWidgets import QWidget

    from workbench.cluster.widgets.commands import install_commands
    from workbench.cluster.widgets.runs_extension import RunsExtension
    from workbench.cluster.widgets.session import ClusterSession

    panel = window.findChild(QWidget, RUNS_PANEL_NAME)
    training_service = getattr(getattr(panel, "session", None), "service", None)
    session = ClusterSession(window, run_service=training_service)
    session.setObjectName("cluster-session")
    runs = None
    if panel is not None:
        runs = RunsExtension(window, panel, announce=lambda path: _announce_model(window, path))
    commands = install_commands(window, session, panel, runs)
    if runs is not None:
        runs.add_pull_button()
    session.commands = commands


def session_of(window):
    """The window's ``ClusterSession`` (None before the cluster capability was installed)."""
    from workbench.cluster.widgets.session import ClusterSession

    return window.findChild(ClusterSession, "cluster-session")


def commands_of(window):
    """The window's ``ClusterCommands`` (None before the cluster capability was installed)."""
    session = session_of(window)
    return getattr(session, "commands", None) if session is not None else None


def _announce_model(window, path: str) -> None:
    """Tell this window's and the other windows' parts that a model file appeared."""
    from workbench.ipc.messages import EVENT_MODEL_PRODUCED

    data = {"path": path}
    handle = getattr(window, "handle_event", None)
    if handle is not None:
        handle(EVENT_MODEL_PRODUCED, data)
    broadcast = getattr(window, "sig_broadcast", None)
    if broadcast is not None:
        broadcast.emit(EVENT_MODEL_PRODUCED, data)

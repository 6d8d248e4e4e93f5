"""The adopt capability's widgets: in a window on a folder without ``workbench.toml``, a
**Set Up Training…** banner (shown once the folder's training entry points are found, off the
GUI thread) and the Run menu's command of the same name, both opening the dialog that chooses
the entry point, shows the parameters found and writes ``workbench.toml``.

``install(window)`` joins them to a project window after its first paint.
"""

from __future__ import annotations

SET_UP_COMMAND = "adopt.setUpTraining"
BANNER_NAME = "adopt-setup-banner"
RUNS_DOCK_NAME = "dock-runs"


def install(window) -> None:
    """Offer to set up training when the window's folder has no workbench.toml."""
    if window.project.has_project_file or not window.project.writable:
        return
    from workbench.adopt.widgets.setup import SetUpTraining

    setup = SetUpTraining(window)
    setup.setObjectName("adopt-setup")
    window.commands.add(SET_UP_COMMAND, "Set Up Training…", setup.open_dialog, category="Training", menu="Run",
                        enabled=lambda: not window.project.has_project_file)
    setup.look_for_entry_points()


def setup_of(window):
    """The window's ``SetUpTraining`` (None when its folder had a workbench.toml)."""
    from workbench.adopt.widgets.setup import SetUpTraining

    return window.findChild(SetUpTraining, "adopt-setup")

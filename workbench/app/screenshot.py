"""Renders a window offscreen into a PNG: for docs, tests and machines without a display."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from workbench.project import ProjectError, RecentProjects, load_project, user_config_dir

# The picture is taken once the window has painted, installed its capabilities and its
# listings (runs, models, Git) have come in: its calls idle for QUIET_SECONDS, but never before
# SETTLE_SECONDS nor later than SETTLE_MAX_SECONDS (a listing of a huge project).
SETTLE_SECONDS = 1.0
QUIET_SECONDS = 0.3
SETTLE_MAX_SECONDS = 20.0


def render_window(output: Path, project_root: Path | None, file: Path | None, size: tuple[int, int]) -> None:
    """Show the welcome window (no project) or the project's window offscreen and save it."""
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtCore import qInstallMessageHandler
    from PySide6.QtWidgets import QApplication

    previous = qInstallMessageHandler(None)

    def quiet(mode, context, message) -> None:
        # The offscreen platform says this about every window; it means nothing here.
        if "does not support propagateSizeHints" not in message and previous is not None:
            previous(mode, context, message)
        elif "does not support propagateSizeHints" not in message:
            print(message, file=sys.stderr)

    qInstallMessageHandler(quiet)

    app = QApplication.instance() or QApplication(["workbench"])
    if project_root is None:
        from workbench.ui.welcome_window import WelcomeWindow

        window = WelcomeWindow(RecentProjects(user_config_dir()))
    else:
        from workbench.ui.project_window import ProjectWindow

        window = ProjectWindow(load_project(project_root))
        if file is not None:
            window.open_file(file)
    window.resize(*size)
    window.show()
    settle(app, window)
    output.parent.mkdir(parents=True, exist_ok=True)
    if not window.grab().save(str(output)):
        raise ProjectError(f"Could not write {output}: check that its folder is writable and it ends in .png.")
    window.hide()


def settle(app, window, clock=time.monotonic) -> None:
    """Let what the window loads in the background arrive, as the module says."""
    start = clock()
    quiet_since = start
    while True:
        app.processEvents()
        now = clock()
        tasks = getattr(window, "tasks", None)
        if not getattr(window, "capabilities_installed", True) or (tasks is not None and tasks.busy):
            quiet_since = now
        if now - start >= SETTLE_MAX_SECONDS or (now - start >= SETTLE_SECONDS and now - quiet_since >= QUIET_SECONDS):
            return
        time.sleep(0.02)

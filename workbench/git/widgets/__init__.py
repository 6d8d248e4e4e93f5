"""The Git capability's widgets: the Source Control dock, the branch button, the stash list, the
Git and Git Flow commands, and (from history_view) history, blame and conflicts.

``install(window)`` joins them to a project window after its first paint. GitPython and the Git
services are imported inside the functions that use them, never at module top.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

SCM_DOCK_ID = "scm"


def install(window) -> None:
    """Add Git to ``window``: session, Source Control dock, branch button, stashes, commands."""
    from PySide6.QtCore import Qt, QTimer

    from workbench.git.widgets.branch_button import BranchButton
    from workbench.git.widgets.commands import install_commands
    from workbench.git.widgets.scm_panel import SourceControlPanel
    from workbench.git.widgets.session import GitSession
    from workbench.git.widgets.stash_panel import StashPanel

    session = GitSession(window)
    session.setObjectName("git-session")
    panel = SourceControlPanel(session)
    panel.setObjectName("git-scm-panel")
    stashes = StashPanel(session)
    stashes.setObjectName("git-stashes")
    panel.add_section(stashes)
    # A dock the window's saved layout already knows goes back where the user left it; a new one
    # shares the Explorer's place as a tab, as in VS Code.
    known = f"dock-{SCM_DOCK_ID}".encode("utf-16-be") in bytes(window.saveState().data())
    dock = window.add_dock(SCM_DOCK_ID, "Source Control", panel, Qt.DockWidgetArea.LeftDockWidgetArea,
                           shortcut="Ctrl+Shift+G")
    explorer = getattr(window, "explorer", None)
    if not known and explorer is not None:
        window.tabifyDockWidget(explorer, dock)
        QTimer.singleShot(0, explorer.raise_)  # the Explorer stays in front, once laid out
    _bring_forward_when_behind(dock)
    button = BranchButton(session)
    button.setObjectName("git-branch-button")
    window.add_status_widget(button, left=True)
    install_commands(window, session, panel, stashes, button)
    _install_history(window, session)
    session.open()


def _install_history(window, session) -> None:
    """History, blame and conflict views (written beside these widgets); Git works without them."""
    try:
        from workbench.git.widgets.history_install import install_history
    except ImportError as exc:
        log.warning("Git history, blame and conflict views are not available: %s", exc)
        return
    install_history(window, lambda: session.repo)


def _bring_forward_when_behind(dock) -> None:
    """Make "Toggle Source Control" (Ctrl+Shift+G) bring the dock forward when it sits behind
    another dock's tab, instead of hiding a panel the user cannot see."""
    from PySide6.QtCore import QEvent, QObject, QTimer

    class BringForward(QObject):
        def __init__(self):
            super().__init__(dock)
            self.behind = False
            self.closed = False
            # Emitted when the dock's tab is selected or unselected, as well as on show and hide.
            dock.visibilityChanged.connect(self._on_visibility)
            dock.installEventFilter(self)

        def _on_visibility(self, visible: bool) -> None:
            if dock.isHidden():
                return  # hidden for real: not "behind"
            self.behind = not visible

        def eventFilter(self, watched, event) -> bool:
            if event.type() == QEvent.Type.Hide and not dock.isFloating():
                if self.behind:
                    self.behind = False
                    QTimer.singleShot(0, self._show)
                else:
                    self.closed = dock.isHidden()  # hidden by the user, not with the window
            elif event.type() == QEvent.Type.Show and self.closed:
                self.closed = False
                QTimer.singleShot(0, dock.raise_)  # shown again: in front of its tab group
            return False

        def _show(self) -> None:
            if dock.isHidden():
                dock.show()
                dock.raise_()

    BringForward()


def session_of(window):
    """The window's ``GitSession`` (None before Git was installed)."""
    from workbench.git.widgets.session import GitSession

    return window.findChild(GitSession, "git-session")


def panel_of(window):
    """The window's Source Control panel (None before Git was installed)."""
    from workbench.git.widgets.scm_panel import SourceControlPanel

    return window.findChild(SourceControlPanel, "git-scm-panel")

"""The branch switcher in the status bar: the branch (or detached commit) with ahead/behind
arrows; a click lists the branches to switch to, and offers "Create Branch…"."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QMenu, QToolButton, QWidget

from workbench.git.widgets import dialogs
from workbench.git.widgets.session import GitSession


MAX_BRANCH_TEXT_PX = 220
"""A longer branch name is elided in the middle (full in the tooltip): the status bar never widens."""


class BranchButton(QToolButton):
    """Status-bar button; ``menu`` is the last branch menu shown (for tests and scripts)."""

    def __init__(self, session: GitSession, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.menu: QMenu | None = None
        self.setAutoRaise(True)
        self.setToolTip("Switch branch")
        self.clicked.connect(self.show_branches)
        session.sig_status_changed.connect(self._update)
        session.sig_repository_changed.connect(lambda: self._update(None))
        self._update(None)

    def _update(self, status) -> None:
        if self.session.repo is None:
            self.hide()
            return
        self.show()
        if status is None:
            self.setText("⎇ …")
            return
        if status.branch is None:
            text = f"⎇ {status.head[:8]} (detached)" if status.head else "⎇ HEAD"
        else:
            text = f"⎇ {self._elided(status.branch)}"
        if status.upstream and not status.upstream_gone:
            text += f"  {status.behind}↓ {status.ahead}↑"
        elif status.upstream_gone:
            text += "  (upstream gone)"
        self.setText(text)
        self.setToolTip(f"On {status.branch or 'a detached HEAD'}"
                        + (f", tracking {status.upstream}" if status.upstream else ", not published")
                        + ". Click to switch branch.")

    def _elided(self, name: str) -> str:
        return self.fontMetrics().elidedText(name, Qt.TextElideMode.ElideMiddle, MAX_BRANCH_TEXT_PX)

    def show_branches(self) -> None:
        """Read the branches (off the GUI thread), then show the menu under the button."""
        from workbench.git.branches import list_branches

        self.session.query("branches", list_branches, on_done=self._show_menu)

    def _show_menu(self, branches) -> None:
        self.menu = self.build_menu(branches)
        # Above the button: the status bar is at the bottom of the window.
        self.menu.popup(self.mapToGlobal(QPoint(0, -self.menu.sizeHint().height())))

    def build_menu(self, branches) -> QMenu:
        menu = QMenu(self)
        menu.addAction("Create Branch…", self.create_branch)
        menu.addSeparator()
        local = [b for b in branches if not b.is_remote]
        remote = [b for b in branches if b.is_remote]
        section = menu.addSection("Branches")
        section.setEnabled(False)
        for branch in local:
            label = self._elided(branch.name) + (f"   {branch.behind}↓ {branch.ahead}↑" if branch.upstream else "")
            action = menu.addAction(("● " if branch.is_current else "   ") + label,
                                    lambda name=branch.name: self.switch(name))
            action.setEnabled(not branch.is_current)
            action.setData(branch.name)
        if remote:
            menu.addSection("Remote branches")
            for branch in remote:
                # ``git switch x`` makes a local x tracking origin/x.
                local_name = branch.name.split("/", 1)[1] if "/" in branch.name else branch.name
                action = menu.addAction("   " + self._elided(branch.name), lambda name=local_name: self.switch(name))
                action.setData(branch.name)
        return menu

    def switch(self, name: str):
        """Switch to ``name`` (a remote branch ``origin/x`` gets a local branch ``x``)."""
        from workbench.git.branches import switch_branch

        return self.session.run("switch", switch_branch, name, title=f"Switching to {name}")

    def create_branch(self, name: str | None = None):
        from workbench.git.branches import create_branch

        name = name or dialogs.ask_text(self.window(), "Create Branch", "New branch name:")
        if not name:
            return None
        return self.session.run("createBranch", create_branch, name, switch=True, title=f"Creating {name}")


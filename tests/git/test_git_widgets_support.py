"""Shared fixtures of the Git widget tests: a project window on a real repository, shown
offscreen with its capabilities installed, and waits for the Git operations it starts."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt

from workbench.git.widgets import panel_of, session_of
from workbench.git.widgets.scm_panel import COLUMN_ACTION
from workbench.project import load_project
from workbench.ui.project_window import ProjectWindow

TIMEOUT_MS = 20_000


@pytest.fixture
def open_window(qtbot):
    """``open_window(root) -> window``: a window on ``root`` whose Git session has read the status."""
    windows = []

    def open_(root):
        window = ProjectWindow(load_project(root))
        qtbot.addWidget(window)
        windows.append(window)
        with qtbot.waitSignal(window.sig_capabilities_installed, timeout=TIMEOUT_MS):
            window.show()
        session = session_of(window)
        qtbot.waitUntil(lambda: session.opened and (session.repo is None or session.status is not None),
                        timeout=TIMEOUT_MS)
        session.questions = []

        def confirm(question: str) -> bool:
            session.questions.append(question)
            return True

        session.confirm = confirm  # answer "yes" to every question, and keep them to check
        return window

    yield open_
    for window in windows:
        window.tasks.wait(TIMEOUT_MS)


def finish(qtbot, operation):
    """Wait for an ``Operation`` a command returned; its error fails the test."""
    assert operation is not None
    qtbot.waitUntil(lambda: operation.finished, timeout=TIMEOUT_MS)
    assert operation.error is None, str(operation.error)
    return operation.result


def fail(qtbot, operation) -> str:
    """Wait for an ``Operation`` that must fail; returns the message the user was shown."""
    assert operation is not None
    qtbot.waitUntil(lambda: operation.finished, timeout=TIMEOUT_MS)
    assert operation.error is not None, f"{operation.name} succeeded"
    return str(operation.error)


def wait_for(qtbot, predicate, timeout: int = TIMEOUT_MS) -> None:
    qtbot.waitUntil(lambda: bool(predicate()), timeout=timeout)


def click_action_column(qtbot, panel, item) -> None:
    """Click the +/− button of a row of the Source Control file list."""
    tree = panel.files
    rect = tree.visualItemRect(item)
    x = tree.header().sectionViewportPosition(COLUMN_ACTION) + tree.header().sectionSize(COLUMN_ACTION) // 2
    qtbot.mouseClick(tree.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, rect.center().y()))


__all__ = ["open_window", "finish", "fail", "wait_for", "click_action_column", "panel_of", "session_of"]

"""Project windows for widget tests: opened with their capabilities installed and their runs
listed, and closed with their still-active runs ended (runs outlive windows)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, List, Optional


def open_with_capabilities(root: Path, entries: tuple[str, ...], size: tuple[int, int] = (1400, 900)):
    """A shown project window on ``root`` with only the capabilities ``entries`` installed
    (``"module:function"``, as workbench/ui/capabilities.py lists them)."""
    from workbench.project import load_project
    from workbench.ui.project_window import ProjectWindow

    window = ProjectWindow(load_project(root))
    window.resize(*size)
    window.show()
    window.install_capabilities(tuple(entries))
    return window


class ProjectWindows:
    def __init__(self, qtbot, timeout_ms: int):
        self.qtbot = qtbot
        self.timeout_ms = timeout_ms
        self.windows: list = []
        self.roots: List[Path] = []

    def open(self, root: Path):
        """A window on ``root`` whose Runs panel has listed the runs."""
        from workbench.project import load_project
        from workbench.training.widgets import panel_of, session_of
        from workbench.ui.project_window import ProjectWindow

        window = ProjectWindow(load_project(root))
        window.resize(1400, 900)
        self.qtbot.addWidget(window)
        self.windows.append(window)
        self.roots.append(root)
        with self.qtbot.waitSignal(window.sig_capabilities_installed, timeout=self.timeout_ms):
            window.show()
        self.qtbot.waitUntil(lambda: session_of(window).listed, timeout=self.timeout_ms)
        assert panel_of(window) is not None
        return window

    def close(self, end_run: Callable, after_root: Optional[Callable[[Path], None]] = None
              ) -> None:
        """Wait for the windows' tasks, then ``end_run(service, info)`` for each active run and
        ``after_root(root)`` for each project."""
        import shiboken6

        from workbench.training import RunService

        for window in self.windows:
            if shiboken6.isValid(window):
                window.tasks.wait(self.timeout_ms)
        for root in set(self.roots):
            service = RunService(root)
            for info in service.list_runs():
                if info.is_active:
                    end_run(service, info)
            if after_root is not None:
                after_root(root)

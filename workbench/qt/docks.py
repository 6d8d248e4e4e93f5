"""A capability's dock that joins the Runs dock's tabs: the Registry's and the Pipeline's, whose
versions and iterations are looked for next to the runs that made them."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QWidget

RUNS_DOCK = "dock-runs"


def add_dock_beside_runs(window, dock_id: str, title: str, panel: QWidget,
                         has_content: Callable[[], bool]) -> Callable[[], None]:
    """Add ``panel`` as a bottom dock of ``window`` and return the function that shows it.

    A dock the saved layout knows goes back where the user left it, and stays hidden until that
    layout is restored (shown meanwhile, its tables' height would make the window taller than
    it was saved). A new dock becomes a tab beside Runs when ``has_content()`` (read after the
    dock is added: the panel lists its content then), else it waits hidden until shown: side by
    side, the two panels' tables would need more width than most screens have."""
    known = f"dock-{dock_id}".encode("utf-16-be") in bytes(window.saveState().data())
    dock = window.add_dock(dock_id, title, panel, Qt.DockWidgetArea.BottomDockWidgetArea)
    placed = [known]

    def place() -> None:
        runs = window.findChild(QDockWidget, RUNS_DOCK)
        if runs is not None and not runs.isHidden() and window.dockWidgetArea(runs) == window.dockWidgetArea(dock):
            window.tabifyDockWidget(runs, dock)
            runs.raise_()
        placed[0] = True

    if not known and has_content():
        place()
    else:
        dock.hide()

    def show() -> None:
        if not placed[0]:
            place()
        dock.show()
        dock.raise_()

    return show

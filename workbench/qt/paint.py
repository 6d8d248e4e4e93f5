"""First-paint hooks: run work right after a window first appears, and report that moment.

With WORKBENCH_PAINT_MARKER=FILE set, the first paint of a marked window appends
``<label> <pid> <CLOCK_MONOTONIC seconds>`` to FILE. The monotonic clock is shared by all
processes on Linux, so the measuring process can subtract its own start time.
"""

from __future__ import annotations

import os
import time
from typing import Callable

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QWidget


class _FirstPaintWatcher(QObject):
    def __init__(self, widget: QWidget, callback: Callable[[], None]):
        super().__init__(widget)
        self._callback = callback
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            watched.removeEventFilter(self)
            # Called after the paint event has been handled, so the frame is really drawn.
            QTimer.singleShot(0, self._callback)
        return False


def after_first_paint(widget: QWidget, callback: Callable[[], None]) -> None:
    """Call ``callback`` once, just after ``widget`` has painted for the first time."""
    _FirstPaintWatcher(widget, callback)


def mark_first_paint(widget: QWidget, label: str) -> None:
    marker_file = os.environ.get("WORKBENCH_PAINT_MARKER")
    if not marker_file:
        return

    def write() -> None:
        with open(marker_file, "a", encoding="utf-8") as marker:
            marker.write(f"{label} {os.getpid()} {time.monotonic():.6f}\n")

    after_first_paint(widget, write)

"""Reports the moment a window first paints, for the start-up benchmark and the process tests.

With WORKBENCH_PAINT_MARKER=FILE set, the first paint of a marked window appends
``<label> <pid> <CLOCK_MONOTONIC seconds>`` to FILE. The monotonic clock is shared by all
processes on Linux, so the measuring process can subtract its own start time.
"""

from __future__ import annotations

import os
import time

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QWidget


class _FirstPaintWatcher(QObject):
    def __init__(self, widget: QWidget, label: str, marker_file: str):
        super().__init__(widget)
        self._label = label
        self._marker_file = marker_file
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            watched.removeEventFilter(self)
            # Written after the paint event has been handled, so the frame is really drawn.
            QTimer.singleShot(0, self._write)
        return False

    def _write(self) -> None:
        line = f"{self._label} {os.getpid()} {time.monotonic():.6f}\n"
        with open(self._marker_file, "a", encoding="utf-8") as marker:
            marker.write(line)


def mark_first_paint(widget: QWidget, label: str) -> None:
    marker_file = os.environ.get("WORKBENCH_PAINT_MARKER")
    if marker_file:
        _FirstPaintWatcher(widget, label, marker_file)

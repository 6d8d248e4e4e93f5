"""A read-only view for files too big to load: paints only the visible lines from a memory map.

The line index (where each line starts) is built by a worker thread and picked up by the GUI
thread a few times a second, so the first screen shows at once and the scroll range grows while
the rest of a multi-gigabyte log is scanned.
"""

from __future__ import annotations

import mmap
import threading
from pathlib import Path

import numpy as np
from PySide6.QtCore import QRect, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QGuiApplication, QKeySequence, QKeyEvent, QMouseEvent, QPainter, QPaintEvent
from PySide6.QtWidgets import QAbstractScrollArea, QWidget

from workbench.editor.errors import EditorError
from workbench.editor.line_index import LARGE_FILE_BYTES, find_line_starts, line_bytes
from workbench.editor.widgets import theme

# Only this much of one line is drawn: a minified file can have one line of hundreds of megabytes.
MAX_SHOWN_LINE_BYTES = 16 * 1024

# Copying more than this many lines at once would put hundreds of megabytes on the clipboard.
MAX_COPIED_LINES = 100_000


class _MappedFile:
    """The open file, its memory map and the indexing thread; closed when the view goes away."""

    def __init__(self, path: Path) -> None:
        try:
            self.handle = open(path, "rb")
        except OSError as exc:
            raise EditorError(f"Cannot open {path}: {exc.strerror or exc}.") from None
        self.size = Path(path).stat().st_size
        self.data: mmap.mmap | bytes = (
            mmap.mmap(self.handle.fileno(), 0, access=mmap.ACCESS_READ) if self.size else b""
        )
        self.cancel = threading.Event()
        self.lock = threading.Lock()
        self.new_parts: list[np.ndarray] = []
        self.done = False
        self.thread = threading.Thread(target=self._index, name="large-file-index", daemon=True)

    def _index(self) -> None:
        def collect(starts: np.ndarray, _scanned: int) -> None:
            with self.lock:
                self.new_parts.append(starts)

        find_line_starts(self.data, on_chunk=collect, cancelled=self.cancel.is_set)
        with self.lock:
            self.done = True

    def take_new_parts(self) -> tuple[list[np.ndarray], bool]:
        with self.lock:
            parts, self.new_parts = self.new_parts, []
            return parts, self.done

    def close(self) -> None:
        self.cancel.set()
        if self.thread.is_alive():
            self.thread.join(timeout=5)
        if isinstance(self.data, mmap.mmap):
            try:
                self.data.close()
            except BufferError:
                pass  # a view is still alive somewhere; the map goes when it does
        self.handle.close()


class LargeFileView(QAbstractScrollArea):
    """Shows a huge file read-only, line by line, while its line index is still being built."""

    sig_indexing_finished = Signal(int)
    """The whole file has been scanned; carries the number of lines."""

    def __init__(self, path: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.path = Path(path)
        self._file = _MappedFile(self.path)
        # Closing from ``destroyed`` must not touch ``self``, which is half gone by then.
        self.destroyed.connect(self._file.close)
        self._starts = np.zeros(0, dtype=np.int64)
        self.indexing_done = False
        self.index_updates = 0
        self._widest = 0
        self._selection: tuple[int, int] | None = None
        self.setFont(theme.editor_font())
        self.viewport().setCursor(Qt.CursorShape.IBeamCursor)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self._poll = QTimer(self, interval=50)
        self._poll.timeout.connect(self._take_index)
        self._poll.start()
        self._file.thread.start()

    # Index --------------------------------------------------------------------------------

    @property
    def line_count(self) -> int:
        """Lines that can be shown so far (all of them once indexing is done)."""
        if self.indexing_done:
            return len(self._starts)  # empty once the file is closed
        # The last start found may belong to a line whose end is not scanned yet.
        return max(0, len(self._starts) - 1)

    def _take_index(self) -> None:
        parts, done = self._file.take_new_parts()
        if parts:
            self._starts = np.concatenate([self._starts, *parts])
            self.index_updates += 1
        if done:
            self.indexing_done = True
            self._poll.stop()
        if parts or done:
            self._update_scroll_range()
            self.viewport().update()
        if done:
            self.sig_indexing_finished.emit(len(self._starts))

    def close_file(self) -> None:
        """Stop indexing and release the file (the view shows nothing afterwards)."""
        self._poll.stop()
        self._file.close()
        self._starts = np.zeros(0, dtype=np.int64)
        self.indexing_done = True
        self.viewport().update()

    # Geometry ---------------------------------------------------------------------------

    def _line_height(self) -> int:
        return self.fontMetrics().height()

    def _gutter_width(self) -> int:
        digits = max(4, len(str(max(1, self.line_count))))
        return 16 + self.fontMetrics().horizontalAdvance("9") * digits

    def visible_line_count(self) -> int:
        """How many lines fit in the viewport."""
        return max(1, self.viewport().height() // self._line_height())

    def _update_scroll_range(self) -> None:
        self.verticalScrollBar().setRange(0, max(0, self.line_count - self.visible_line_count()))
        self.verticalScrollBar().setPageStep(self.visible_line_count())
        self.horizontalScrollBar().setRange(0, max(0, self._widest - self.viewport().width() // 2))
        self.horizontalScrollBar().setPageStep(self.viewport().width())

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().resizeEvent(event)
        self._update_scroll_range()

    def first_visible_line(self) -> int:
        """0-based number of the top line shown."""
        return self.verticalScrollBar().value()

    def scroll_to_line(self, line: int) -> None:
        """Bring 1-based ``line`` to the top (clamped to the lines indexed so far)."""
        self.verticalScrollBar().setValue(max(0, min(line - 1, self.line_count - 1)))

    def line_text(self, line: int) -> str:
        """0-based ``line`` as text (UTF-8, undecodable bytes replaced)."""
        raw = line_bytes(self._file.data, self._starts, line, self._file.size)
        return raw[:MAX_SHOWN_LINE_BYTES].decode("utf-8", errors="replace").expandtabs(4)

    # Painting ---------------------------------------------------------------------------

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt override)
        painter = QPainter(self.viewport())
        painter.fillRect(event.rect(), QColor(theme.BACKGROUND))
        gutter = self._gutter_width()
        height = self._line_height()
        painter.fillRect(QRect(0, 0, gutter - 6, self.viewport().height()),
                         QColor(theme.GUTTER_BACKGROUND))
        first = self.first_visible_line()
        last = min(self.line_count, first + self.visible_line_count() + 1)
        x_offset = self.horizontalScrollBar().value()
        ascent = self.fontMetrics().ascent()
        for row, line in enumerate(range(first, last)):
            top = row * height
            if self._selection and self._selection[0] <= line <= self._selection[1]:
                painter.fillRect(QRect(gutter - 6, top, self.viewport().width(), height),
                                 self.palette().highlight())
            painter.setPen(QColor(theme.GUTTER_NUMBER))
            painter.drawText(QRect(0, top, gutter - 12, height), Qt.AlignmentFlag.AlignRight,
                             str(line + 1))
            text = self.line_text(line)
            self._widest = max(self._widest, self.fontMetrics().horizontalAdvance(text[:2000]))
            painter.setClipRect(QRect(gutter, 0, self.viewport().width(), self.viewport().height()))
            painter.setPen(QColor(theme.FOREGROUND))
            painter.drawText(gutter - x_offset, top + ascent, text)
            painter.setClipping(False)
        if not self.indexing_done:
            painter.setPen(QColor(theme.GUTTER_NUMBER))
            painter.drawText(self.viewport().rect().adjusted(0, 0, -8, -4),
                             Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignBottom,
                             f"indexing… {self.line_count:,} lines so far")

    # Selection and copy -----------------------------------------------------------------

    def _line_at(self, y: int) -> int:
        return min(self.line_count - 1, self.first_visible_line() + y // self._line_height())

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 (Qt override)
        line = self._line_at(int(event.position().y()))
        if event.modifiers() & Qt.KeyboardModifier.ShiftModifier and self._selection:
            anchor = self._selection[0]
            self._selection = (min(anchor, line), max(anchor, line))
        else:
            self._selection = (line, line)
        self.viewport().update()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 (Qt override)
        if self._selection:
            line = self._line_at(int(event.position().y()))
            anchor = self._selection[0]
            self._selection = (min(anchor, line), max(anchor, line))
            self.viewport().update()

    def selected_text(self) -> str:
        """The selected whole lines, joined by "\\n" (at most MAX_COPIED_LINES of them)."""
        if not self._selection:
            return ""
        first, last = self._selection
        last = min(last, first + MAX_COPIED_LINES - 1)
        return "\n".join(self.line_text(line) for line in range(first, last + 1))

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt override)
        if event.matches(QKeySequence.StandardKey.Copy):
            QGuiApplication.clipboard().setText(self.selected_text())
            return
        super().keyPressEvent(event)

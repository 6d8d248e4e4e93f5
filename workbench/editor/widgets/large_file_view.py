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
from workbench.editor.options import EditorOptions
from workbench.qt import theme

# Only this much of one line is drawn: a minified file can have one line of hundreds of megabytes.
MAX_SHOWN_LINE_BYTES = 16 * 1024

# Copying more than this many lines at once would put hundreds of megabytes on the clipboard.
MAX_COPIED_LINES = 100_000

# Ctrl+End asks for this line; it is clamped to the last one.
MAX_LINE = 2**62


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
    """Shows a huge file read-only, line by line, while its line index is still being built.

    It has a cursor line (set by clicks, the arrow and page keys, Ctrl+Home and Ctrl+End, "Go to
    line" and find) that is highlighted, and one highlighted find match.
    """

    sig_indexing_finished = Signal(int)
    """The whole file has been scanned; carries the number of lines."""

    sig_cursor_moved = Signal(int)
    """The cursor moved to this 1-based line."""

    sig_find_next_requested = Signal()
    """F3 was pressed: go to the next match of the find bar."""

    sig_find_previous_requested = Signal()
    """Shift+F3 was pressed: go to the previous match of the find bar."""

    sig_escape_pressed = Signal()
    """Esc was pressed (closes the find bar)."""

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
        self._cursor = 0
        self._anchor = 0
        self._selection: tuple[int, int] | None = None
        # A line asked for (by Ctrl+End or "Go to line") that is not indexed yet: the cursor
        # follows the index until it gets there.
        self._pending_line: int | None = None
        self._match: tuple[int, int, int] | None = None
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

    @property
    def data(self) -> mmap.mmap | bytes:
        """The file's bytes (a read-only memory map); searches read it from worker threads."""
        return self._file.data

    @property
    def line_starts(self) -> np.ndarray:
        """Byte offsets of the lines indexed so far (a new array each time the index grows)."""
        return self._starts[:self.line_count]

    @property
    def indexed_bytes(self) -> int:
        """Where the last line that can be shown ends."""
        if self.indexing_done:
            return self._file.size if len(self._starts) else 0
        return int(self._starts[-1]) if len(self._starts) else 0

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
            if self._pending_line is not None:
                target = self._pending_line
                if done or target < self.line_count:
                    self._pending_line = None
                self.set_cursor_line(target, center=True)
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

    def set_options(self, options: EditorOptions) -> None:
        """Show the lines in the editor's font and size (with the window's zoom)."""
        self.setFont(theme.editor_font(options.font_family, options.shown_font_size))
        # Line heights, the gutter and the widest line measured so far were in the old font.
        self._widest = 0
        self._update_scroll_range()
        self._ensure_visible(self._cursor, center=False)  # fewer lines fit in a larger font
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
        self.horizontalScrollBar().setSingleStep(self.fontMetrics().horizontalAdvance("9") * 4)

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
        return self._decoded_line(line).expandtabs(4)

    def _decoded_line(self, line: int) -> str:
        raw = line_bytes(self._file.data, self._starts, line, self._file.size)
        return raw[:MAX_SHOWN_LINE_BYTES].decode("utf-8", errors="replace")

    # Cursor -----------------------------------------------------------------------------

    def cursor_line(self) -> int:
        """0-based line of the cursor."""
        return self._cursor

    def set_cursor_line(self, line: int, extend_selection: bool = False, center: bool = False
                        ) -> None:
        """Put the cursor on 0-based ``line`` (clamped to the lines indexed so far) and show it.

        With ``extend_selection`` the selected lines run from the anchor to the cursor;
        otherwise the selection goes. ``center`` centres a line that is off screen.
        """
        line = max(0, min(line, self.line_count - 1))
        if extend_selection:
            self._selection = (min(self._anchor, line), max(self._anchor, line))
        else:
            self._anchor = line
            self._selection = None
        moved = line != self._cursor
        self._cursor = line
        self._ensure_visible(line, center)
        self.viewport().update()
        if moved:
            self.sig_cursor_moved.emit(line + 1)

    def go_to_line(self, line: int) -> None:
        """Put the cursor on 1-based ``line`` and centre it; past the end, on the last line.

        While the file is still being indexed, a line not indexed yet is reached when it is.
        """
        target = max(0, line - 1)
        self._pending_line = (
            target if target >= self.line_count and not self.indexing_done else None
        )
        self.set_cursor_line(target, center=True)

    def _ensure_visible(self, line: int, center: bool) -> None:
        first = self.first_visible_line()
        visible = self.visible_line_count()
        if first <= line < first + visible:
            return
        if center:
            self.verticalScrollBar().setValue(line - visible // 2)
        elif line < first:
            self.verticalScrollBar().setValue(line)
        else:
            self.verticalScrollBar().setValue(line - visible + 1)

    def _move_cursor(self, line: int, extend_selection: bool) -> None:
        self._pending_line = None
        self.set_cursor_line(line, extend_selection)

    # Find matches -----------------------------------------------------------------------

    def show_match(self, line: int, column: int, length: int) -> None:
        """Highlight ``length`` characters at 0-based (``line``, ``column``) and scroll to them."""
        self._pending_line = None
        self._match = (line, column, length)
        self.set_cursor_line(line, center=True)
        text = self._decoded_line(line)
        left = self.fontMetrics().horizontalAdvance(text[:column].expandtabs(4))
        right = self.fontMetrics().horizontalAdvance(text[:column + length].expandtabs(4))
        self._widest = max(self._widest, right)
        self._update_scroll_range()
        scroll = self.horizontalScrollBar()
        room = self.viewport().width() - self._gutter_width() - 8
        if left < scroll.value() or right > scroll.value() + room:
            scroll.setValue(max(0, left - room // 3))
        self.viewport().update()

    def match_shown(self) -> tuple[int, int, int] | None:
        """The highlighted match as 0-based (line, column, length), or None."""
        return self._match

    def clear_match(self) -> None:
        """Remove the find match highlight."""
        self._match = None
        self.viewport().update()

    # Painting ---------------------------------------------------------------------------

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt override)
        painter = QPainter(self.viewport())
        painter.fillRect(event.rect(), QColor(theme.BACKGROUND))
        gutter = self._gutter_width()
        height = self._line_height()
        width = self.viewport().width()
        metrics = self.fontMetrics()
        painter.fillRect(QRect(0, 0, gutter - 6, self.viewport().height()),
                         QColor(theme.GUTTER_BACKGROUND))
        first = self.first_visible_line()
        last = min(self.line_count, first + self.visible_line_count() + 1)
        x_offset = self.horizontalScrollBar().value()
        ascent = metrics.ascent()
        widest = self._widest
        for row, line in enumerate(range(first, last)):
            top = row * height
            if self._selection and self._selection[0] <= line <= self._selection[1]:
                painter.fillRect(QRect(gutter - 6, top, width, height), self.palette().highlight())
            elif line == self._cursor:
                painter.fillRect(QRect(gutter - 6, top, width, height), QColor(theme.CURRENT_LINE))
            painter.setPen(QColor(
                theme.GUTTER_CURRENT_NUMBER if line == self._cursor else theme.GUTTER_NUMBER
            ))
            painter.drawText(QRect(0, top, gutter - 12, height), Qt.AlignmentFlag.AlignRight,
                             str(line + 1))
            decoded = self._decoded_line(line)
            text = decoded.expandtabs(4)
            widest = max(widest, metrics.horizontalAdvance(text[:2000]))
            painter.setClipRect(QRect(gutter, 0, width, self.viewport().height()))
            if self._match is not None and self._match[0] == line:
                _, column, length = self._match
                left = metrics.horizontalAdvance(decoded[:column].expandtabs(4))
                right = metrics.horizontalAdvance(decoded[:column + length].expandtabs(4))
                painter.fillRect(QRect(gutter - x_offset + left, top, max(2, right - left), height),
                                 QColor(theme.FIND_MATCH))
            painter.setPen(QColor(theme.FOREGROUND))
            painter.drawText(gutter - x_offset, top + ascent, text)
            painter.setClipping(False)
        if not self.indexing_done:
            painter.setPen(QColor(theme.GUTTER_NUMBER))
            painter.drawText(self.viewport().rect().adjusted(0, 0, -8, -4),
                             Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignBottom,
                             f"indexing… {self.line_count:,} lines so far")
        painter.end()
        if widest > self._widest:
            self._widest = widest
            # Not while painting: a new scroll range can resize the viewport.
            QTimer.singleShot(0, self, self._update_scroll_range)

    # Mouse, keys, copy ------------------------------------------------------------------

    def _line_at(self, y: int) -> int:
        return min(self.line_count - 1, self.first_visible_line() + max(0, y) // self._line_height())

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 (Qt override)
        if event.button() != Qt.MouseButton.LeftButton or self.line_count == 0:
            return
        line = self._line_at(int(event.position().y()))
        if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self._move_cursor(line, extend_selection=True)
        else:
            self._move_cursor(line, extend_selection=False)
            self._selection = (line, line)
            self.viewport().update()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 (Qt override)
        if event.buttons() & Qt.MouseButton.LeftButton and self.line_count:
            self._move_cursor(self._line_at(int(event.position().y())), extend_selection=True)

    def selected_text(self) -> str:
        """The selected whole lines (else the cursor line), joined by "\\n" (at most
        MAX_COPIED_LINES of them)."""
        if self.line_count == 0:
            return ""
        first, last = self._selection or (self._cursor, self._cursor)
        last = min(last, first + MAX_COPIED_LINES - 1)
        return "\n".join(self.line_text(line) for line in range(first, last + 1))

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt override)
        key = event.key()
        modifiers = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
        shift = modifiers == Qt.KeyboardModifier.ShiftModifier
        plain = modifiers == Qt.KeyboardModifier.NoModifier
        page = self.visible_line_count()
        moves = {
            QKeySequence.StandardKey.MoveToPreviousLine: (self._cursor - 1, False),
            QKeySequence.StandardKey.MoveToNextLine: (self._cursor + 1, False),
            QKeySequence.StandardKey.MoveToPreviousPage: (self._cursor - page, False),
            QKeySequence.StandardKey.MoveToNextPage: (self._cursor + page, False),
            QKeySequence.StandardKey.MoveToStartOfDocument: (0, False),
            QKeySequence.StandardKey.SelectPreviousLine: (self._cursor - 1, True),
            QKeySequence.StandardKey.SelectNextLine: (self._cursor + 1, True),
            QKeySequence.StandardKey.SelectPreviousPage: (self._cursor - page, True),
            QKeySequence.StandardKey.SelectNextPage: (self._cursor + page, True),
            QKeySequence.StandardKey.SelectStartOfDocument: (0, True),
        }
        for standard_key, (line, extend) in moves.items():
            if event.matches(standard_key):
                self._move_cursor(line, extend)
                return
        if event.matches(QKeySequence.StandardKey.Copy):
            QGuiApplication.clipboard().setText(self.selected_text())
        elif event.matches(QKeySequence.StandardKey.MoveToEndOfDocument):
            self.go_to_line(MAX_LINE)
        elif event.matches(QKeySequence.StandardKey.SelectEndOfDocument):
            self._move_cursor(MAX_LINE, extend_selection=True)
        elif event.matches(QKeySequence.StandardKey.MoveToStartOfLine):
            self.horizontalScrollBar().setValue(0)
        elif event.matches(QKeySequence.StandardKey.MoveToEndOfLine):
            self._scroll_to_line_end()
        elif key == Qt.Key.Key_F3 and (plain or shift):
            (self.sig_find_previous_requested if shift else self.sig_find_next_requested).emit()
        elif key == Qt.Key.Key_Escape and plain:
            self.sig_escape_pressed.emit()
        else:
            # Left and Right scroll sideways, as the scroll area does by default.
            super().keyPressEvent(event)

    def _scroll_to_line_end(self) -> None:
        if self.line_count == 0:
            return
        end = self.fontMetrics().horizontalAdvance(self.line_text(self._cursor))
        self._widest = max(self._widest, end)
        self._update_scroll_range()
        room = self.viewport().width() - self._gutter_width() - 8
        self.horizontalScrollBar().setValue(max(0, end - room))


"""The read-only text panes of the diff view: one QPlainTextEdit per side (or one inline).

A pane gets its whole text in one ``setPlainText``; nothing is made per row or per hunk. Row
backgrounds, intra-line marks, filler hatching and the hunk headers' action links are painted
for the visible rows only, and the gutter paints the visible rows' line numbers. The code is
coloured by ``DiffHighlighter``, which reuses the editor's incremental ``LineLexer``: a screenful
at once, the rest a slice per event-loop turn, each row lexed once.
"""

from __future__ import annotations

from time import perf_counter

from PySide6.QtCore import QObject, QPoint, QRect, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (QBrush, QColor, QFont, QFontMetrics, QMouseEvent, QPainter, QPaintEvent, QResizeEvent,
                           QTextCharFormat, QTextDocument, QTextLayout)
from PySide6.QtWidgets import QPlainTextEdit, QWidget

from workbench.editor.highlighting import LineLexer, format_ranges
from workbench.qt import theme
from workbench.git.diff_rows import ADDED, CONTEXT, FILLER, HEADER, REMOVED, PaneRows

# Close to the diff colours of GitHub's light theme, beside the editor's Light+ code colours.
ROW_BACKGROUNDS = {
    ADDED: QColor("#e6ffec"),
    REMOVED: QColor("#ffebe9"),
    HEADER: QColor("#ddf4ff"),
    FILLER: QColor("#f6f8fa"),
}
INTRALINE_BACKGROUNDS = {ADDED: QColor("#abf2bc"), REMOVED: QColor("#ffcecb")}
FILLER_HATCH = QColor("#e1e4e8")
HEADER_TEXT = QColor("#57606a")
LINK_TEXT = QColor("#0969da")
# The header row of the current hunk (after F7, a click or a scroll) stands out from the others.
CURRENT_HEADER = QColor("#b6e3ff")
CURRENT_MARK = QColor("#0969da")
CURRENT_MARK_WIDTH = 3
# Room kept between a header's text and the first of its links.
LINK_GAP = 12
GUTTER_SIGNS = {ADDED: ("+", QColor("#1a7f37")), REMOVED: ("-", QColor("#cf222e"))}

# The colours above are the light theme's; each takes the current theme's role in place (the
# panes compare CURRENT_HEADER by identity), now and whenever the theme changes.
_THEME_ROLES = ((ROW_BACKGROUNDS[ADDED], "DIFF_ADDED"), (ROW_BACKGROUNDS[REMOVED], "DIFF_REMOVED"),
                (ROW_BACKGROUNDS[HEADER], "DIFF_HEADER"), (ROW_BACKGROUNDS[FILLER], "DIFF_FILLER"),
                (INTRALINE_BACKGROUNDS[ADDED], "DIFF_ADDED_STRONG"),
                (INTRALINE_BACKGROUNDS[REMOVED], "DIFF_REMOVED_STRONG"), (FILLER_HATCH, "DIFF_FILLER_HATCH"),
                (HEADER_TEXT, "DIFF_HEADER_TEXT"), (LINK_TEXT, "LINK"), (CURRENT_HEADER, "DIFF_CURRENT_HEADER"),
                (CURRENT_MARK, "LINK"), (GUTTER_SIGNS[ADDED][1], "DIFF_ADDED_SIGN"),
                (GUTTER_SIGNS[REMOVED][1], "DIFF_REMOVED_SIGN"))


def _take_theme_colours(_theme: str = "") -> None:
    for colour, role in _THEME_ROLES:
        colour.setRgba(QColor(theme.colour(role)).rgba())


_take_theme_colours()
theme.theme_changes().sig_theme_changed.connect(_take_theme_colours)

# Rows coloured per step: the first step colours a screenful and a margin before the first paint;
# later steps run one per event-loop turn, each within a time budget, so the window stays live.
ROWS_PER_STEP = 200
FIRST_STEP_SECONDS = 0.016
STEP_SECONDS = 0.008

# Which columns of numbers a pane's gutter shows.
OLD_SIDE, NEW_SIDE, BOTH_SIDES = "old", "new", "both"


class DiffHighlighter(QObject):
    """Colours the code of a pane's rows with ``line_lexer``, each row once, top to bottom.

    Not a QSyntaxHighlighter: that one calls back into Python for every block of the document
    on each full pass, even for blocks it then defers. The pane is read-only, so the formats are
    set on each row's QTextLayout directly, a slice of rows per event-loop turn.

    The old and new sides of a file are lexed as two streams: removed rows continue the old
    stream, added rows the new one, context rows both. A hunk header starts both afresh, since a
    hunk may start anywhere in the file. ``rows_done`` counts the rows visited and
    ``rows_lexed`` the rows lexed (for tests).
    """

    def __init__(self, document: QTextDocument, rows: PaneRows, line_lexer: LineLexer,
                 rows_per_step: int = ROWS_PER_STEP) -> None:
        super().__init__(document)
        self._document = document
        self.rows = rows
        self.line_lexer = line_lexer
        self.formats = theme.text_formats()
        self.header_format = QTextCharFormat()
        self.header_format.setForeground(HEADER_TEXT)
        self.rows_per_step = max(1, rows_per_step)
        self.rows_done = 0
        self.rows_lexed = 0
        start = line_lexer.initial_state
        self._start = (start, start)
        self._states = self._start
        self._timer = QTimer(self, interval=0)
        self._timer.timeout.connect(self._step)
        self._step(FIRST_STEP_SECONDS)

    @property
    def is_complete(self) -> bool:
        """True when every row is coloured."""
        return self.rows_done >= len(self.rows)

    def stop(self) -> None:
        """Stop colouring (the pane's text is being replaced)."""
        self._timer.stop()

    def _step(self, seconds: float = STEP_SECONDS) -> None:
        document, kinds = self._document, self.rows.kinds
        row, total = self.rows_done, len(kinds)
        if row >= total:
            self._timer.stop()
            return
        deadline = perf_counter() + seconds
        block = document.findBlockByNumber(row)
        # Rows laid out already (shown before they were coloured) must be laid out again;
        # the others take their formats when they are first laid out.
        dirty_from, dirty_to = -1, -1
        lexer, formats = self.line_lexer, self.formats
        old_state, new_state = self._states
        limit = min(total, row + self.rows_per_step)
        while row < limit and block.isValid():
            kind = kinds[row]
            ranges: list[tuple[int, int, QTextCharFormat]] = []
            if kind == HEADER:
                ranges.append((0, block.length() - 1, self.header_format))
                old_state, new_state = self._start
            elif kind != FILLER:
                self.rows_lexed += 1
                if kind == REMOVED:
                    tokens, old_state = lexer.lex_line(block.text(), old_state)
                else:
                    tokens, new_state = lexer.lex_line(block.text(), new_state)
                    if kind == CONTEXT:
                        old_state = new_state
                for start, length, name in format_ranges(tokens):
                    char_format = formats.get(name)
                    if char_format is not None:
                        ranges.append((start, length, char_format))
            if ranges:
                layout = block.layout()
                layout.setFormats([_format_range(*r) for r in ranges])
                if layout.lineCount():
                    if dirty_from < 0:
                        dirty_from = block.position()
                    dirty_to = block.position() + block.length() - 1
            row += 1
            block = block.next()
            if perf_counter() > deadline:
                break
        self._states = (old_state, new_state)
        self.rows_done = row if block.isValid() else total
        if dirty_from >= 0:
            document.markContentsDirty(dirty_from, dirty_to - dirty_from)
        if self.is_complete:
            self._timer.stop()
        else:
            self._timer.start()


def _format_range(start: int, length: int, char_format: QTextCharFormat) -> QTextLayout.FormatRange:
    format_range = QTextLayout.FormatRange()
    format_range.start, format_range.length, format_range.format = start, length, char_format
    return format_range


class DiffGutter(QWidget):
    """Line numbers (old, new or both) and the +/- sign of the visible rows."""

    PADDING = 6

    def __init__(self, pane: DiffPane) -> None:
        super().__init__(pane)
        self.pane = pane

    def width_needed(self) -> int:
        rows = self.pane.rows
        largest = 0
        if rows is not None and rows.rows.header_rows:
            # Numbers grow along the file, so the last rows hold the widest.
            for numbers in (rows.old_numbers, rows.new_numbers):
                for number in reversed(numbers[-50:]):
                    if number is not None:
                        largest = max(largest, number)
                        break
        digit = self.pane.fontMetrics().horizontalAdvance("9")
        columns = 2 if self.pane.columns == BOTH_SIDES else 1
        number_width = digit * max(3, len(str(largest)))
        return columns * (number_width + self.PADDING) + digit + self.PADDING * 2

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt override)
        return QSize(self.width_needed(), 0)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt override)
        painter = QPainter(self)
        painter.fillRect(event.rect(), QColor(theme.GUTTER_BACKGROUND))
        pane, rows = self.pane, self.pane.rows
        if rows is None:
            return
        painter.setFont(pane.font())
        digit = pane.fontMetrics().horizontalAdvance("9")
        height = pane.fontMetrics().height()
        sign_width = digit + self.PADDING
        columns = {OLD_SIDE: (rows.old_numbers,), NEW_SIDE: (rows.new_numbers,),
                   BOTH_SIDES: (rows.old_numbers, rows.new_numbers)}[pane.columns]
        column_width = (self.width() - sign_width - self.PADDING) // len(columns)
        for row, top, bottom in pane.visible_rows(event.rect().top(), event.rect().bottom()):
            kind = rows.kinds[row]
            background = ROW_BACKGROUNDS.get(kind)
            if background is not None and kind != FILLER:
                painter.fillRect(0, top, self.width(), bottom - top, background.darker(104))
            painter.setPen(QColor(theme.GUTTER_NUMBER))
            for index, numbers in enumerate(columns):
                number = numbers[row]
                if number is not None:
                    painter.drawText(index * column_width, top, column_width - self.PADDING, height,
                                     Qt.AlignmentFlag.AlignRight, str(number))
            sign = GUTTER_SIGNS.get(kind)
            if sign is not None:
                painter.setPen(sign[1])
                painter.drawText(self.width() - sign_width, top, sign_width, height,
                                 Qt.AlignmentFlag.AlignHCenter, sign[0])


class DiffPane(QPlainTextEdit):
    """One read-only side of a diff (or the inline diff).

    ``sig_hunk_action(hunk_index, action)`` is emitted when a link painted on a hunk header row
    is clicked; ``actions`` lists the links ("stage", "unstage", "discard").
    """

    sig_hunk_action = Signal(int, str)
    """A hunk header's link was clicked: (hunk index, action)."""

    ACTION_TITLES = {"stage": "Stage Hunk", "unstage": "Unstage Hunk", "discard": "Discard Hunk"}

    def __init__(self, columns: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.columns = columns
        self.rows: PaneRows | None = None
        self.highlighter: DiffHighlighter | None = None
        self.actions: tuple[str, ...] = ()
        self.current_hunk = -1
        self.rows_painted = 0
        self.setReadOnly(True)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                     | Qt.TextInteractionFlag.TextSelectableByKeyboard)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setFont(theme.editor_font())
        self.setUndoRedoEnabled(False)
        self.gutter = DiffGutter(self)
        self.updateRequest.connect(self._on_update_request)
        theme.theme_changes().sig_theme_changed.connect(self._on_theme_changed)

    def _on_theme_changed(self, _theme: str) -> None:
        # The code colours are the new theme's Pygments style: colour the rows again.
        if self.highlighter is not None and self.rows is not None:
            line_lexer = self.highlighter.line_lexer
            self.highlighter.stop()
            self.highlighter.deleteLater()
            self.highlighter = DiffHighlighter(self.document(), self.rows, line_lexer)
        self.viewport().update()
        self.gutter.update()

    def set_rows(self, rows: PaneRows, line_lexer: LineLexer | None) -> None:
        """Show ``rows``: one setPlainText of the whole text, then colouring from the top."""
        if self.highlighter is not None:
            self.highlighter.stop()
            self.highlighter.deleteLater()
            self.highlighter = None
        self.rows = rows
        self.setPlainText(rows.text)
        if line_lexer is not None:
            self.highlighter = DiffHighlighter(self.document(), rows, line_lexer)
        self.setViewportMargins(self.gutter.width_needed(), 0, 0, 0)
        self._place_gutter()
        self.viewport().update()
        self.gutter.update()

    def current_row(self) -> int:
        return self.textCursor().blockNumber()

    def set_current_hunk(self, hunk: int) -> None:
        """Mark the header row of hunk ``hunk`` as the current one (-1: none)."""
        if hunk != self.current_hunk:
            self.current_hunk = hunk
            self.viewport().update()

    def selected_rows(self) -> tuple[int, int] | None:
        """The first and last row the selection touches; None without a selection."""
        cursor = self.textCursor()
        if not cursor.hasSelection():
            return None
        document = self.document()
        start, end = cursor.selectionStart(), cursor.selectionEnd()
        first = document.findBlock(start).blockNumber()
        last_block = document.findBlock(end)
        last = last_block.blockNumber()
        if last > first and end == last_block.position():
            last -= 1  # a selection ending at the start of a row does not take that row
        return first, last

    def go_to_row(self, row: int, *, select_to: int | None = None, center: bool = True) -> None:
        """Put the cursor at the start of ``row`` (selecting to the end of ``select_to``)."""
        document = self.document()
        block = document.findBlockByNumber(max(0, min(row, document.blockCount() - 1)))
        cursor = self.textCursor()
        cursor.setPosition(block.position())
        if select_to is not None:
            last = document.findBlockByNumber(max(0, min(select_to, document.blockCount() - 1)))
            cursor.setPosition(last.position() + last.length() - 1, cursor.MoveMode.KeepAnchor)
        self.setTextCursor(cursor)
        if center:
            self.centerCursor()

    def first_visible_row(self) -> int:
        return self.firstVisibleBlock().blockNumber()

    def visible_rows(self, top_limit: int, bottom_limit: int):
        """``(row, top, bottom)`` in viewport pixels for the rows between the two limits."""
        block = self.firstVisibleBlock()
        if not block.isValid():
            return
        row = block.blockNumber()
        offset = self.contentOffset()
        top = round(self.blockBoundingGeometry(block).translated(offset).top())
        while block.isValid() and top <= bottom_limit:
            bottom = top + round(self.blockBoundingRect(block).height())
            if bottom >= top_limit:
                yield row, top, bottom
            block = block.next()
            row += 1
            top = bottom

    # --- painting ---------------------------------------------------------------------------

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt override)
        rows = self.rows
        if rows is not None:
            self._paint_backgrounds(event.rect(), rows)
        super().paintEvent(event)
        if rows is not None and self.actions:
            self._paint_links(event.rect(), rows)

    def _paint_backgrounds(self, area: QRect, rows: PaneRows) -> None:
        painter = QPainter(self.viewport())
        width = self.viewport().width()
        painted = 0
        try:
            for row, top, bottom in self.visible_rows(area.top(), area.bottom()):
                painted += 1
                kind = rows.kinds[row]
                background = ROW_BACKGROUNDS.get(kind)
                if background is None:
                    continue
                if kind == HEADER and rows.rows.hunks[row] == self.current_hunk:
                    background = CURRENT_HEADER
                painter.fillRect(0, top, width, bottom - top, background)
                if kind == HEADER and background is CURRENT_HEADER:
                    painter.fillRect(0, top, CURRENT_MARK_WIDTH, bottom - top, CURRENT_MARK)
                if kind == FILLER:
                    painter.fillRect(0, top, width, bottom - top, QBrush(FILLER_HATCH, Qt.BrushStyle.BDiagPattern))
                    continue
                strong = INTRALINE_BACKGROUNDS.get(kind)
                if strong is not None and rows.lines[row] is not None and rows.lines[row].intraline:
                    for rect in self.intraline_rects(row, top, bottom):
                        painter.fillRect(rect, strong)
        finally:
            painter.end()
        self.rows_painted = painted

    def intraline_rects(self, row: int, top: float | None = None, bottom: float | None = None) -> list[QRectF]:
        """Where the changed characters of ``row`` are, in viewport pixels (empty when the row has
        no intra-line marks)."""
        rows = self.rows
        line = rows.lines[row] if rows is not None and 0 <= row < len(rows) else None
        if line is None or not line.intraline or rows.kinds[row] not in INTRALINE_BACKGROUNDS:
            return []
        block = self.document().findBlockByNumber(row)
        layout = block.layout()
        if layout is None or layout.lineCount() == 0:
            return []
        if top is None or bottom is None:
            geometry = self.blockBoundingGeometry(block).translated(self.contentOffset())
            top, bottom = geometry.top(), geometry.bottom()
        x_offset = self.contentOffset().x() + self.document().documentMargin()
        text_line = layout.lineAt(0)
        rects = []
        for start, end in line.intraline:
            left, right = _x_of(text_line, start), _x_of(text_line, end)
            rects.append(QRectF(x_offset + left, top, max(1.0, right - left), bottom - top))
        return rects

    def _paint_links(self, area: QRect, rows: PaneRows) -> None:
        painter = QPainter(self.viewport())
        try:
            link_font = self._link_font()
            for row, top, bottom in self.visible_rows(area.top(), area.bottom()):
                if rows.kinds[row] != HEADER:
                    continue
                links = list(self._links_of_row(row, top, bottom))
                background = CURRENT_HEADER if rows.rows.hunks[row] == self.current_hunk else ROW_BACKGROUNDS[HEADER]
                text_rect, elided = self._header_text_layout(row, top, bottom)
                if elided is not None:
                    # The text would run under the links: paint it again, cut short before them.
                    start = max(CURRENT_MARK_WIDTH if background is CURRENT_HEADER else 0, int(text_rect.left()))
                    painter.fillRect(QRect(start, top, self.viewport().width() - start, bottom - top), background)
                    painter.setFont(self.font())
                    painter.setPen(HEADER_TEXT)
                    painter.drawText(text_rect, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, elided)
                painter.setFont(link_font)
                for rect, _hunk, _action, title in links:
                    painter.fillRect(rect.adjusted(-6, 0, 4, 0), background)
                    painter.setPen(LINK_TEXT)
                    painter.drawText(rect, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, title)
        finally:
            painter.end()

    def _link_font(self) -> QFont:
        font = QFont(self.font())
        font.setUnderline(True)
        return font

    def _links_of_row(self, row: int, top: int, bottom: int):
        """``(rect, hunk, action, title)`` of the links of header row ``row``, right-aligned."""
        metrics = QFontMetrics(self._link_font())
        right = self.viewport().width() - 8
        for action in reversed(self.actions):
            title = self.ACTION_TITLES[action]
            width = metrics.horizontalAdvance(title)
            yield QRect(right - width, top, width, bottom - top), self.rows.rows.hunks[row], action, title
            right -= width + 14

    def _links_left(self) -> int:
        """The x (viewport pixels) where a header row's links start; the viewport width without
        links."""
        if not self.actions:
            return self.viewport().width()
        metrics = QFontMetrics(self._link_font())
        widths = [metrics.horizontalAdvance(self.ACTION_TITLES[a]) for a in self.actions]
        return self.viewport().width() - 8 - sum(widths) - 14 * (len(widths) - 1) - 6

    def _header_text_layout(self, row: int, top: int, bottom: int) -> tuple[QRectF, str | None]:
        """Where header row ``row``'s text is drawn, and its shortened text when it has to be cut
        short to leave the links room (None when it fits)."""
        text = self.document().findBlockByNumber(row).text()
        metrics = QFontMetrics(self.font())
        left = self.contentOffset().x() + self.document().documentMargin()
        full = metrics.horizontalAdvance(text)
        room = self._links_left() - LINK_GAP - left
        if not self.actions or left + full <= self._links_left() - LINK_GAP:
            return QRectF(left, top, full, bottom - top), None
        elided = metrics.elidedText(text, Qt.TextElideMode.ElideRight, max(0, int(room)))
        width = metrics.horizontalAdvance(elided)
        return QRectF(left, top, width, bottom - top), elided

    def header_text_rect(self, row: int) -> QRectF:
        """Where the text of header row ``row`` is drawn (viewport pixels), after any cut for the
        links."""
        block = self.document().findBlockByNumber(row)
        geometry = self.blockBoundingGeometry(block).translated(self.contentOffset())
        return self._header_text_layout(row, round(geometry.top()), round(geometry.bottom()))[0]

    def _link_rects(self, area: QRect):
        """``(rect, hunk, action, title)`` of the links on the header rows within ``area``."""
        rows = self.rows
        if rows is None or not self.actions:
            return
        for row, top, bottom in self.visible_rows(area.top(), area.bottom()):
            if rows.kinds[row] == HEADER:
                yield from self._links_of_row(row, top, bottom)

    def link_rects(self) -> list[QRect]:
        """The rects of the visible header links (viewport pixels)."""
        return [rect for rect, *_ in self._link_rects(self.viewport().rect())]

    def link_at(self, point: QPoint) -> tuple[int, str] | None:
        """The (hunk, action) of the header link under ``point`` (viewport pixels)."""
        for rect, hunk, action, _title in self._link_rects(QRect(point, point)):
            if rect.contains(point):
                return hunk, action
        return None

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 (Qt override)
        link = self.link_at(event.position().toPoint()) if event.button() == Qt.MouseButton.LeftButton else None
        if link is not None:
            self.sig_hunk_action.emit(*link)
            event.accept()
            return
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 (Qt override)
        over_link = self.link_at(event.position().toPoint()) is not None
        self.viewport().setCursor(Qt.CursorShape.PointingHandCursor if over_link else Qt.CursorShape.IBeamCursor)
        super().mouseMoveEvent(event)

    # --- gutter -----------------------------------------------------------------------------

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt override)
        super().resizeEvent(event)
        self._place_gutter()

    def _place_gutter(self) -> None:
        rect = self.contentsRect()
        self.gutter.setGeometry(QRect(rect.left(), rect.top(), self.gutter.width_needed(), rect.height()))

    def _on_update_request(self, rect: QRect, dy: int) -> None:
        if dy:
            self.gutter.scroll(0, dy)
        else:
            self.gutter.update(0, rect.y(), self.gutter.width(), rect.height())


def _x_of(text_line, position: int) -> float:
    x = text_line.cursorToX(position)
    # PySide returns (x, position) for the overload that takes the position by pointer.
    return x[0] if isinstance(x, tuple) else x

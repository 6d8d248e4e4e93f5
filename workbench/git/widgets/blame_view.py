"""Blame annotations in a gutter of the editor: who last changed each line, when, in which commit.

The gutter is a child of the editor, like its line numbers, and sits between them and the text:
it widens the editor's left viewport margin by its own width and gives the margin back when it
is removed. The line-number panel resets that margin when the number of digits changes; the
gutter, connected after it, puts its share back. No editor module is changed.

The blame is read off the GUI thread for the file on disk. Typing shifts the annotations with
the lines; an edited or inserted line reads "Not committed yet"; saving reads the blame again.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QPoint, QRect, Qt, Signal
from PySide6.QtGui import QColor, QFont, QHelpEvent, QMouseEvent, QPainter, QPaintEvent
from PySide6.QtWidgets import QPlainTextEdit, QToolTip, QWidget

from workbench.git.blame import NOT_COMMITTED_SUMMARY, BlameLine, blame
from workbench.git.repository import Repository

AUTHOR_CHARS = 16  # longer names are cut with an ellipsis
PADDING = 6
# The empty line after a file's last newline: git blames no such line, so it has no annotation.
_AFTER_LAST_LINE = object()
_ids = itertools.count(1)


def annotation_text(line: BlameLine | None) -> str:
    """"author · 2024-05-01 · 1a2b3c4" for a committed line, "Not committed yet" otherwise."""
    if line is None or not line.committed:
        return NOT_COMMITTED_SUMMARY
    author = line.author if len(line.author) <= AUTHOR_CHARS else line.author[:AUTHOR_CHARS - 1] + "…"
    return f"{author} · {line.date.strftime('%Y-%m-%d')} · {line.short_sha}"


def tooltip_text(line: BlameLine | None) -> str:
    """The hover text: the commit's summary, author, date and sha."""
    if line is None or not line.committed:
        return f"{NOT_COMMITTED_SUMMARY}: this line differs from the last commit."
    when = line.date.strftime("%Y-%m-%d %H:%M %z")
    renamed = f"\nthen in {line.original_path}" if line.original_path else ""
    return f"{line.summary}\n{line.author} <{line.email}>, {when}\ncommit {line.sha}{renamed}"


def _carry_over(old: list[BlameLine | None], texts: list[str]) -> list[BlameLine | None]:
    """The blame of each of the edited lines ``texts``: a line whose text is still that of one of
    the ``old`` lines (in order) keeps its blame; a new or changed line has none."""
    if len(old) * len(texts) > 1_000_000:  # a huge paste: not worth matching
        return [None] * len(texts)
    result: list[BlameLine | None] = []
    start = 0
    for text in texts:
        match = None
        for position in range(start, len(old)):
            candidate = old[position]
            if isinstance(candidate, BlameLine) and candidate.text == text:
                match, start = candidate, position + 1
                break
        result.append(match)
    return result


class BlameGutter(QWidget):
    """Annotations beside each visible line of ``editor`` (a QPlainTextEdit showing ``path``).
    ``window`` provides ``tasks`` and ``show_error``."""

    sig_blame_loaded = Signal(int)
    """The blame arrived; the argument is how many lines it covers."""

    sig_commit_activated = Signal(str)
    """The user double-clicked the annotation of a line of this commit (full sha)."""

    def __init__(self, editor: QPlainTextEdit, window, repo: Repository, path: str | Path):
        super().__init__(editor)
        self.editor, self.window, self.repo, self.path = editor, window, repo, Path(path)
        self.lines: list = []  # a BlameLine, None (typed since) or _AFTER_LAST_LINE per block
        self.loaded = False
        self.attached = True
        self._key = f"git.blame.{next(_ids)}"
        # A blame that arrives after the editor (and so the gutter) is closed is dropped.
        self.destroyed.connect(lambda *_, tasks=window.tasks, key=self._key: tasks.cancel(key))
        self._base_left = editor.viewportMargins().left()
        self._applied_left = -1
        self._block_count = editor.blockCount()
        self._oldest = self._newest = 0.0
        self.setObjectName("blame-gutter")
        self.setMouseTracking(True)
        font = QFont(editor.font())
        self.setFont(font)
        self._width = PADDING * 2 + 4 + self.fontMetrics().horizontalAdvance(
            "M" * AUTHOR_CHARS + " · 0000-00-00 · 0000000")

        document = editor.document()
        document.contentsChange.connect(self._on_contents_change)
        document.modificationChanged.connect(self._on_modification_changed)
        editor.updateRequest.connect(self._on_update_request)
        editor.blockCountChanged.connect(self._keep_margin)
        editor.installEventFilter(self)
        self._keep_margin()
        self.show()
        self.reload()

    # Public ----------------------------------------------------------------------------------

    def reload(self) -> None:
        """Read the blame of the file on disk again."""
        self.window.tasks.run(self._key, blame, self.repo, self.path, on_done=self._on_blame,
                              on_error=self._on_error, title="Reading the blame")

    def remove(self) -> None:
        """Take the gutter off the editor and give its margin back."""
        if not self.attached:
            return
        self.attached = False
        self.window.tasks.cancel(self._key)
        editor = self.editor
        editor.removeEventFilter(self)
        document = editor.document()
        for signal, slot in ((document.contentsChange, self._on_contents_change),
                             (document.modificationChanged, self._on_modification_changed),
                             (editor.updateRequest, self._on_update_request),
                             (editor.blockCountChanged, self._keep_margin)):
            signal.disconnect(slot)
        margins = editor.viewportMargins()
        editor.setViewportMargins(self._base_left, margins.top(), margins.right(), margins.bottom())
        self.hide()
        self.deleteLater()

    def line(self, line_no: int) -> BlameLine | None:
        """The blame of 1-based line ``line_no`` of the buffer; None for a line typed since (and
        for the empty line after the file's last newline)."""
        index = line_no - 1
        found = self.lines[index] if 0 <= index < len(self.lines) else None
        return found if isinstance(found, BlameLine) else None

    def annotation(self, line_no: int) -> str:
        """What the gutter shows beside 1-based line ``line_no`` ("" after the last newline)."""
        index = line_no - 1
        if 0 <= index < len(self.lines) and self.lines[index] is _AFTER_LAST_LINE:
            return ""
        return annotation_text(self.line(line_no))

    def visible_rows(self) -> list[tuple[int, str]]:
        """(1-based line, annotation) for each line the editor shows now."""
        rows = []
        editor = self.editor
        block = editor.firstVisibleBlock()
        top = editor.blockBoundingGeometry(block).translated(editor.contentOffset()).top()
        height = editor.viewport().height()
        while block.isValid() and top <= height:
            if block.isVisible():
                rows.append((block.blockNumber() + 1, self.annotation(block.blockNumber() + 1)))
            top += editor.blockBoundingRect(block).height()
            block = block.next()
        return rows

    # Margins and geometry --------------------------------------------------------------------

    def _keep_margin(self, *_: object) -> None:
        if not self.attached:
            return
        margins = self.editor.viewportMargins()
        if margins.left() != self._applied_left:
            # Someone else (the line numbers) set the margin: theirs plus ours.
            self._base_left = margins.left()
            self._applied_left = self._base_left + self._width
            self.editor.setViewportMargins(self._applied_left, margins.top(), margins.right(), margins.bottom())
        self._place()

    def _place(self) -> None:
        rect = self.editor.contentsRect()
        self.setGeometry(QRect(rect.left() + self._base_left, rect.top(), self._width, rect.height()))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt override)
        if watched is self.editor and event.type() == QEvent.Type.Resize:
            self._place()
        return False

    def _on_update_request(self, rect: QRect, dy: int) -> None:
        if dy:
            self.scroll(0, dy)
        else:
            self.update(0, rect.y(), self.width(), rect.height())
        if rect.contains(self.editor.viewport().rect()):
            self._keep_margin()

    # Blame and edits -------------------------------------------------------------------------

    def _on_blame(self, lines: list[BlameLine]) -> None:
        if not self.attached:
            return
        self.lines = list(lines)
        count = self.editor.blockCount()
        # A file ending in a newline has one more (empty) block than blamed lines.
        self.lines += [_AFTER_LAST_LINE] * max(0, count - len(self.lines))
        widest = max((self.fontMetrics().horizontalAdvance(annotation_text(line)) for line in lines), default=0)
        self._width = PADDING * 3 + 4 + max(widest, self.fontMetrics().horizontalAdvance(NOT_COMMITTED_SUMMARY))
        margins = self.editor.viewportMargins()
        self._applied_left = self._base_left + self._width
        self.editor.setViewportMargins(self._applied_left, margins.top(), margins.right(), margins.bottom())
        self._place()
        self._block_count = count
        stamps = [line.date.timestamp() for line in lines if line.committed]
        self._oldest, self._newest = (min(stamps), max(stamps)) if stamps else (0.0, 0.0)
        self.loaded = True
        self.update()
        self.sig_blame_loaded.emit(len(lines))

    def _on_error(self, error: Exception) -> None:
        self.window.show_error(str(error))
        self.remove()

    def _on_contents_change(self, position: int, _removed: int, added: int) -> None:
        document = self.editor.document()
        count = document.blockCount()
        delta = count - self._block_count
        self._block_count = count
        if not self.loaded:
            return
        # The blocks the change touched now, and how many lines they were before it.
        first = document.findBlock(position).blockNumber()
        last = document.findBlock(position + added).blockNumber()
        if last < first:
            last = count - 1
        new_count = last - first + 1
        old_count = max(0, new_count - delta)
        old = self.lines[first:first + old_count]
        self.lines[first:first + old_count] = _carry_over(old, [document.findBlockByNumber(n).text()
                                                               for n in range(first, last + 1)])
        self.lines += [None] * max(0, count - len(self.lines))
        del self.lines[count:]
        self.update()

    def _on_modification_changed(self, modified: bool) -> None:
        if not modified:  # saved (or reloaded from disk): the lines on disk changed
            self.reload()

    # Painting and hover ----------------------------------------------------------------------

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt override)
        painter = QPainter(self)
        painter.fillRect(event.rect(), QColor("#f4f4f0"))
        painter.setPen(QColor("#dcdcd6"))
        painter.drawLine(self.width() - 1, event.rect().top(), self.width() - 1, event.rect().bottom())
        if not self.loaded:
            painter.setPen(QColor("#999"))
            painter.drawText(self.rect().adjusted(PADDING, 4, 0, 0), Qt.AlignmentFlag.AlignTop, "Reading blame…")
            return
        editor = self.editor
        block = editor.firstVisibleBlock()
        top = round(editor.blockBoundingGeometry(block).translated(editor.contentOffset()).top())
        height = editor.fontMetrics().height()
        previous_sha = None
        if block.blockNumber() > 0:
            above = self.line(block.blockNumber())
            previous_sha = above.sha if above is not None else None
        while block.isValid() and top <= event.rect().bottom():
            bottom = top + round(editor.blockBoundingRect(block).height())
            line = self.line(block.blockNumber() + 1)
            sha = line.sha if line is not None else None
            after_last = block.blockNumber() < len(self.lines) and self.lines[block.blockNumber()] is _AFTER_LAST_LINE
            if block.isVisible() and bottom >= event.rect().top() and not after_last:
                painter.fillRect(QRect(0, top, 3, bottom - top), self._age_colour(line))
                committed = line is not None and line.committed
                if not committed:
                    painter.setPen(QColor("#a0a0a0"))
                elif sha == previous_sha:
                    painter.setPen(QColor("#b0b0aa"))  # the same commit as the line above: quieter
                else:
                    painter.setPen(QColor("#4a4a44"))
                painter.drawText(PADDING + 4, top, self.width() - PADDING * 2 - 4, height,
                                 Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, annotation_text(line))
            previous_sha = sha
            block = block.next()
            top = bottom

    def _age_colour(self, line: BlameLine | None) -> QColor:
        if line is None or not line.committed:
            return QColor("#c0c0c0")
        span = self._newest - self._oldest
        age = 1.0 if span <= 0 else (line.date.timestamp() - self._oldest) / span
        colour = QColor("#e8590c")
        colour.setAlphaF(0.25 + 0.75 * age)  # newer changes stand out
        return colour

    def _line_at(self, y: int) -> int:
        return self.editor.cursorForPosition(QPoint(0, y)).blockNumber() + 1

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent) and self.loaded:
            QToolTip.showText(event.globalPos(), tooltip_text(self.line(self._line_at(event.pos().y()))), self)
            return True
        return super().event(event)

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:  # noqa: N802 (Qt override)
        line = self.line(self._line_at(event.position().toPoint().y()))
        if line is not None and line.committed:
            self.sig_commit_activated.emit(line.sha)


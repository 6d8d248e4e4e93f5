"""Breakpoints in an editor's gutter, and the line the program is stopped on.

A click in the line-number area toggles a breakpoint; a right-click offers to edit its
condition, hit count or log message. Markers: a red dot (a plain breakpoint), a dot with a bar
(conditional or hit-counted), a diamond (log point), a hollow circle (disabled, or not verified
by the running session), an orange ring (moved by the adapter to another line); the current
line gets a yellow arrow and a highlight. Breakpoints follow their lines as lines are added or
removed above them.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QPoint, QPointF, QRect, Qt
from PySide6.QtGui import QBrush, QColor, QPainter, QPen, QPolygonF, QTextCursor, QTextFormat
from PySide6.QtWidgets import QMenu, QTextEdit, QToolTip

from workbench.debug.breakpoints import Breakpoint, with_line
from workbench.debug.widgets.controller import DebugController

MARKER_WIDTH = 16
BREAKPOINT_RED = "#e51400"
MOVED_ORANGE = "#d97706"
DISABLED_GREY = "#9a9a9a"
CURRENT_LINE_YELLOW = "#fff3b0"
CURRENT_ARROW = "#e2b100"
LINE_MARK_OWNER = "debug.current-line"


class BreakpointGutter(QObject):
    """The debugger's part of one editor tab's gutter (the tab must hold a code editor)."""

    def __init__(self, tab, controller: DebugController, edit_breakpoint=None):
        super().__init__(tab)
        self.tab = tab
        self.editor = tab.editor
        self.panel = self.editor.line_number_panel
        self.controller = controller
        self.edit_breakpoint = edit_breakpoint
        """Called with (tab, breakpoint, point) to edit a breakpoint (the dialog; replaceable)."""
        self.current_line: int | None = None
        self._line_count = self.editor.document().blockCount()
        self.panel.set_marker_width(MARKER_WIDTH)
        self.panel.marker_painters.append(self._paint)
        self.panel.sig_line_clicked.connect(self._on_clicked)
        self.panel.sig_line_menu_requested.connect(self._on_menu)
        self.panel.setMouseTracking(True)
        self.panel.installEventFilter(self)
        self.editor.document().contentsChange.connect(self._on_contents_change)
        controller.sig_breakpoints_changed.connect(self._on_breakpoints_changed)
        controller.sig_frame_selected.connect(self._on_frame_selected)
        self._on_frame_selected(controller.current_frame)

    @property
    def path(self) -> str:
        return str(Path(self.tab.path))

    # --- clicks and menus ---------------------------------------------------------------------

    def _on_clicked(self, line: int) -> None:
        self.controller.toggle_breakpoint(self.path, line)

    def _on_menu(self, line: int, point: QPoint) -> None:
        menu = self.menu_for(line)
        menu.exec(point)

    def menu_for(self, line: int) -> QMenu:
        """The gutter's context menu for ``line`` (built fresh each time)."""
        menu = QMenu(self.panel)
        existing = self.controller.state.at(self.path, line)
        if existing is None:
            menu.addAction("Add Breakpoint", lambda: self.controller.toggle_breakpoint(self.path, line))
            menu.addAction("Add Conditional Breakpoint…",
                           lambda: self._edit(Breakpoint(self.path, line), focus="condition"))
            menu.addAction("Add Log Point…", lambda: self._edit(Breakpoint(self.path, line), focus="log_message"))
        else:
            menu.addAction("Edit Breakpoint…", lambda: self._edit(existing))
            menu.addAction("Disable Breakpoint" if existing.enabled else "Enable Breakpoint",
                           lambda: self.controller.put_breakpoint(
                               Breakpoint(existing.path, existing.line, existing.condition, existing.hit_condition,
                                          existing.log_message, not existing.enabled)))
            menu.addAction("Remove Breakpoint", lambda: self.controller.remove_breakpoint(self.path, line))
        return menu

    def _edit(self, breakpoint: Breakpoint, focus: str = "condition") -> None:
        if self.edit_breakpoint is not None:
            self.edit_breakpoint(self.tab, breakpoint, focus)
            return
        from workbench.debug.widgets.breakpoint_dialog import BreakpointDialog

        dialog = BreakpointDialog(breakpoint, self.editor, focus=focus)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.sig_saved.connect(self.controller.put_breakpoint)
        dialog.sig_removed.connect(lambda b: self.controller.remove_breakpoint(b.path, b.line))
        dialog.open()

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt override)
        if watched is self.panel and event.type() == QEvent.Type.ToolTip:
            line = self.panel.line_at(event.pos().y())
            text = self.tooltip_for(line) if line is not None else ""
            if text:
                QToolTip.showText(event.globalPos(), text, self.panel)
            else:
                QToolTip.hideText()
            return True
        return False

    def tooltip_for(self, line: int) -> str:
        """What the marker on ``line`` means (empty for no marker)."""
        parts = []
        if line == self.current_line:
            parts.append("The program is stopped here.")
        breakpoint = self.controller.state.at(self.path, line)
        if breakpoint is not None:
            detail = breakpoint.describe()
            kind = "Log point" if breakpoint.is_log_point else "Breakpoint"
            parts.append(f"{kind}{': ' + detail if detail else ''}. Click to remove, right-click to edit.")
            result = self.controller.result_for(self.path, line)
            if result is not None and result.message:
                parts.append(result.message)
        return "\n".join(parts)

    # --- painting -----------------------------------------------------------------------------

    def _paint(self, painter: QPainter, line: int, rect: QRect) -> None:
        breakpoint = self.controller.state.at(self.path, line)
        is_current = line == self.current_line
        if breakpoint is None and not is_current:
            return
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        size = min(rect.height() - 4, MARKER_WIDTH - 4)
        centre = QPointF(rect.left() + MARKER_WIDTH / 2, rect.top() + rect.height() / 2)
        if breakpoint is not None:
            self._paint_breakpoint(painter, breakpoint, centre, size)
        if is_current:
            self._paint_arrow(painter, centre, size)
        painter.restore()

    def _paint_breakpoint(self, painter: QPainter, breakpoint: Breakpoint, centre: QPointF, size: float) -> None:
        result = self.controller.result_for(self.path, breakpoint.line)
        colour, filled = QColor(BREAKPOINT_RED), True
        if not breakpoint.enabled or (result is not None and not result.verified):
            colour, filled = QColor(DISABLED_GREY), False
        elif result is not None and result.moved:
            colour = QColor(MOVED_ORANGE)
        painter.setPen(QPen(colour, 1.5))
        painter.setBrush(QBrush(colour) if filled else Qt.BrushStyle.NoBrush)
        half = size / 2
        if breakpoint.is_log_point:
            painter.drawPolygon(QPolygonF([QPointF(centre.x(), centre.y() - half), QPointF(centre.x() + half, centre.y()),
                                           QPointF(centre.x(), centre.y() + half), QPointF(centre.x() - half, centre.y())]))
        else:
            painter.drawEllipse(centre, half, half)
        if (breakpoint.condition or breakpoint.hit_condition) and filled:
            painter.setPen(QPen(QColor("#ffffff"), 1.5))
            painter.drawLine(QPointF(centre.x() - half / 2, centre.y() - 1.5), QPointF(centre.x() + half / 2, centre.y() - 1.5))
            painter.drawLine(QPointF(centre.x() - half / 2, centre.y() + 1.5), QPointF(centre.x() + half / 2, centre.y() + 1.5))

    @staticmethod
    def _paint_arrow(painter: QPainter, centre: QPointF, size: float) -> None:
        half = size / 2
        painter.setPen(QPen(QColor("#8a6d00"), 1))
        painter.setBrush(QBrush(QColor(CURRENT_ARROW)))
        painter.drawPolygon(QPolygonF([
            QPointF(centre.x() - half, centre.y() - half / 2), QPointF(centre.x(), centre.y() - half / 2),
            QPointF(centre.x(), centre.y() - half), QPointF(centre.x() + half, centre.y()),
            QPointF(centre.x(), centre.y() + half), QPointF(centre.x(), centre.y() + half / 2),
            QPointF(centre.x() - half, centre.y() + half / 2)]))

    # --- following the session ----------------------------------------------------------------

    def _on_breakpoints_changed(self, path: str) -> None:
        if path == self.path:
            self.panel.update()

    def _on_frame_selected(self, frame) -> None:
        line = frame.line if frame is not None and frame.path and str(Path(frame.path)) == self.path else None
        self.current_line = line
        if line is None:
            self.editor.set_line_marks(LINE_MARK_OWNER, [])
        else:
            selection = QTextEdit.ExtraSelection()
            selection.format.setBackground(QColor(CURRENT_LINE_YELLOW))
            selection.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
            block = self.editor.document().findBlockByNumber(line - 1)
            selection.cursor = QTextCursor(block)
            self.editor.set_line_marks(LINE_MARK_OWNER, [selection])
        self.panel.update()

    # --- lines moving under the breakpoints ---------------------------------------------------

    def _on_contents_change(self, position: int, _removed: int, _added: int) -> None:
        count = self.editor.document().blockCount()
        delta, self._line_count = count - self._line_count, count
        if not delta:
            return
        breakpoints = self.controller.breakpoints_in(self.path)
        if not breakpoints:
            return
        block = self.editor.document().findBlock(position)
        changed = block.blockNumber() + 1
        # Lines added at the very start of a line push that line down too.
        first_moved = changed if delta > 0 and position == block.position() else changed + 1
        moved, kept_lines = [], set()
        for breakpoint in breakpoints:
            line = breakpoint.line
            if line >= first_moved:
                line = max(changed, line + delta)
            if line in kept_lines:
                continue  # two breakpoints on lines joined by a deletion: one is kept
            kept_lines.add(line)
            moved.append(with_line(breakpoint, line))
        if [b.line for b in moved] != [b.line for b in breakpoints]:
            self.controller.move_breakpoints(self.path, moved)

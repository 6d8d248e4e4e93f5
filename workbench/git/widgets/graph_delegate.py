"""Painting of the history view's graph cell and of the branch and tag badges before a summary.

The lanes come from ``workbench.git.graph.layout_graph``; this module only draws them, as its
docstring says: ``lines_in`` from the top edge to the centre, ``lines`` from the centre to the
bottom edge, then the commit's dot. Colour indices grow without bound and are taken modulo
``PALETTE``.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QBrush, QColor, QFontMetrics, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem

from workbench.git.graph import GraphRow

# Distinct on a light and a dark background alike; lanes repeat after these.
PALETTE = ("#1f77d0", "#e8590c", "#2f9e44", "#c2255c", "#7048e8", "#0c8599", "#e67700", "#5c940d")

LANE_WIDTH = 14  # pixels per graph column
DOT_RADIUS = 4
MARGIN = 6  # left of the first lane and right of the last
MIN_WIDTH = 56
ROW_HEIGHT = 22  # room for the badges' frames

GRAPH_ROLE = Qt.ItemDataRole.UserRole + 1  # the row's GraphRow
REFS_ROLE = Qt.ItemDataRole.UserRole + 2  # (refs, tags, head branch or None) of the row's commit


def lane_colour(colour: int) -> QColor:
    """The colour of lane colour index ``colour``."""
    return QColor(PALETTE[colour % len(PALETTE)])


def graph_width(columns: int) -> int:
    """Pixels a graph cell of ``columns`` lanes needs (at least room for the "Graph" header)."""
    return max(MIN_WIDTH, MARGIN * 2 + max(1, columns) * LANE_WIDTH)


def dot_pen_and_brush(colour: int, selected: bool) -> tuple[QPen, QBrush]:
    """The outline and fill of a commit's dot. On a selected row a white ring keeps the dot
    visible against the highlight, which is often the same blue as the first lane."""
    fill = lane_colour(colour)
    if selected:
        return QPen(QColor("#ffffff"), 2), QBrush(fill)
    return QPen(fill.darker(130), 1.5), QBrush(fill)


class GraphDelegate(QStyledItemDelegate):
    """Draws the GraphRow found under ``GRAPH_ROLE``."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        # The selection background first, so the lanes stay visible on a selected row.
        style = option.widget.style() if option.widget is not None else None
        background = QStyleOptionViewItem(option)
        self.initStyleOption(background, index)
        background.text = ""
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, background, painter, option.widget)
        row = index.data(GRAPH_ROLE)
        if not isinstance(row, GraphRow):
            return
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = option.rect
        painter.setClipRect(rect)
        top, bottom = float(rect.top()), float(rect.bottom() + 1)
        centre = (top + bottom) / 2

        def x(column: float) -> float:
            return rect.left() + MARGIN + (column + 0.5) * LANE_WIDTH

        for line in row.lines_in:
            self._segment(painter, QPointF((x(line.from_column) + x(line.to_column)) / 2, top),
                          QPointF(x(line.to_column), centre), line.colour)
        for line in row.lines:
            self._segment(painter, QPointF(x(line.from_column), centre),
                          QPointF((x(line.from_column) + x(line.to_column)) / 2, bottom), line.colour)
        pen, brush = dot_pen_and_brush(row.colour, bool(option.state & QStyle.StateFlag.State_Selected))
        painter.setPen(pen)
        painter.setBrush(brush)
        painter.drawEllipse(QPointF(x(row.column), centre), DOT_RADIUS, DOT_RADIUS)
        painter.restore()

    @staticmethod
    def _segment(painter: QPainter, start: QPointF, end: QPointF, colour: int) -> None:
        painter.setPen(QPen(lane_colour(colour), 2, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        if start.x() == end.x():
            painter.drawLine(start, end)
            return
        # A gentle S-curve reads better than a kink where lanes bend.
        path = QPainterPath(start)
        middle = (start.y() + end.y()) / 2
        path.cubicTo(QPointF(start.x(), middle), QPointF(end.x(), middle), end)
        painter.drawPath(path)

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:  # noqa: N802 (Qt override)
        row = index.data(GRAPH_ROLE)
        hint = super().sizeHint(option, index)
        return QSize(graph_width(row.width if isinstance(row, GraphRow) else 1), max(hint.height(), ROW_HEIGHT))


class SummaryDelegate(QStyledItemDelegate):
    """A commit summary with a badge for each branch and tag pointing at the commit
    (``REFS_ROLE``): the checked-out branch in bold, tags in amber, remote branches grey."""

    BADGE_PADDING = 4
    BADGE_GAP = 4

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:  # noqa: N802 (Qt override)
        hint = super().sizeHint(option, index)
        return QSize(hint.width(), max(hint.height(), ROW_HEIGHT))

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        badges = index.data(REFS_ROLE)
        if not badges or not badges[0]:
            super().paint(painter, option, index)
            return
        refs, tags, head_branch = badges
        item = QStyleOptionViewItem(option)
        self.initStyleOption(item, index)
        style = option.widget.style() if option.widget is not None else None
        text = item.text
        item.text = ""
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, item, painter, option.widget)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        font = QFontMetrics(option.font)
        rect = option.rect.adjusted(3, 2, -3, -2)
        left = float(rect.left())
        for name in refs:
            is_tag = name in tags
            is_remote = not is_tag and "/" in name and name != head_branch
            if name == head_branch:
                fill, ink = QColor("#1f77d0"), QColor("#ffffff")
            elif is_tag:
                fill, ink = QColor("#fff3bf"), QColor("#7a5b00")
            elif is_remote:
                fill, ink = QColor("#e9ecef"), QColor("#495057")
            else:
                fill, ink = QColor("#d0ebff"), QColor("#1864ab")
            label = name
            width = font.horizontalAdvance(label) + self.BADGE_PADDING * 2
            if left + width > rect.right() - 20:
                break
            badge = QRectF(left, rect.top(), width, rect.height())
            painter.setPen(QPen(fill.darker(115), 1))
            painter.setBrush(fill)
            painter.drawRoundedRect(badge, 3, 3)
            painter.setPen(ink)
            painter.drawText(badge, Qt.AlignmentFlag.AlignCenter, label)
            left += width + self.BADGE_GAP
        colour_role = item.palette.ColorRole.HighlightedText if option.state & QStyle.StateFlag.State_Selected \
            else item.palette.ColorRole.Text
        painter.setPen(item.palette.color(colour_role))
        text_rect = QRectF(left + 2, option.rect.top(), option.rect.right() - left - 4, option.rect.height())
        painter.drawText(text_rect, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                         font.elidedText(text, Qt.TextElideMode.ElideRight, int(text_rect.width())))
        painter.restore()

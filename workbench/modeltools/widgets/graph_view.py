"""A model's graph drawn natively: boxes for the operators, inputs and outputs, arrows for the
tensors, placed by workbench.modeltools.graph_layout.

Kept fast on graphs of a thousand operators: one plain item per box (a rectangle and its label,
no shadow or effect), all arrows in two path items, and the labels left out when zoomed so far
out that they would be unreadable anyway. The node's detail (attributes, weights, output
shapes) is its tooltip, and a click shows it in the panel beside the graph with the tensors that
come in and go out.
"""

from __future__ import annotations

from html import escape

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import (
    QFrame,
    QGraphicsItem,
    QGraphicsPathItem,
    QGraphicsScene,
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QScrollArea,
    QSplitter,
    QStyleOptionGraphicsItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)
from workbench.qt import theme

# Below this scale the labels are not drawn (they would be a few pixels high).
LABEL_MIN_SCALE = 0.45
ARROW_SIZE = 5.0
# Room left around the graph when it is fitted in the view.
FIT_MARGIN = 12
DETAILS_WIDTH = 260

KIND_COLOURS = {"input": ("#e3f3e6", "#4d9a5f"), "output": ("#fdeedd", "#c9822f")}
FAMILY_COLOURS = (
    (("Conv", "ConvTranspose", "QLinearConv", "ConvInteger"), ("#dfe9f7", "#3b6fb6")),
    (("Gemm", "MatMul", "QLinearMatMul", "MatMulInteger"), ("#e7e1f5", "#6a4fb0")),
    (("Relu", "Sigmoid", "Tanh", "Clip", "LeakyRelu", "Gelu", "HardSwish", "Softmax", "HardSigmoid"),
     ("#fbe3e3", "#b54848")),
    (("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"), ("#f4f0d4", "#9b8a1e")),
    (("BatchNormalization", "LayerNormalization", "InstanceNormalization"), ("#e0f2f1", "#2f8a80")),
)
DEFAULT_COLOURS = ("#eef0f3", "#6f7b8a")


def colours_for(kind: str, label: str) -> tuple[str, str]:
    """Fill and border colour of a box: inputs and outputs by kind, operators by family."""
    if kind in KIND_COLOURS:
        return KIND_COLOURS[kind]
    op = label.rsplit(".", 1)[-1]
    for family, colours in FAMILY_COLOURS:
        if op in family:
            return colours
    return DEFAULT_COLOURS


class NodeItem(QGraphicsItem):
    """One box with its label."""

    def __init__(self, node_id: str, label: str, kind: str, centre: tuple[float, float],
                 size: tuple[float, float], font: QFont):
        super().__init__()
        self.node_id = node_id
        self.label = label
        self.name = ""
        width, height = size
        self._rect = QRectF(-width / 2, -height / 2, width, height)
        fill, border = colours_for(kind, label)
        self._brush = QBrush(QColor(fill))
        self._pen = QPen(QColor(border), 1.2)
        self._pen.setCosmetic(True)
        self._selected_pen = QPen(QColor("#e07b00"), 2.5)
        self._selected_pen.setCosmetic(True)
        self._font = font
        self.setPos(*centre)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable, True)

    def boundingRect(self) -> QRectF:
        return self._rect.adjusted(-2, -2, 2, 2)

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        painter.setPen(self._selected_pen if self.isSelected() else self._pen)
        painter.setBrush(self._brush)
        scale = QStyleOptionGraphicsItem.levelOfDetailFromTransform(painter.worldTransform())
        if scale < LABEL_MIN_SCALE:
            painter.drawRect(self._rect)
            return
        painter.drawRoundedRect(self._rect, 4, 4)
        painter.setFont(self._font)
        painter.setPen(QColor("#1d2530"))
        painter.drawText(self._rect, Qt.AlignmentFlag.AlignCenter, self.label)


class GraphView(QGraphicsView):
    """Draws a ModelGraph with its GraphLayout; wheel zooms, drag pans."""

    sig_node_selected = Signal(str)
    """A box was clicked: its node id."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setScene(QGraphicsScene(self))
        self.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        self.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.MinimalViewportUpdate)
        self.setOptimizationFlag(QGraphicsView.OptimizationFlag.DontSavePainterState, True)
        # The boxes keep their light fills and dark text in either theme (they read as cards, as
        # in Netron); the canvas around them follows the theme.
        self.setBackgroundBrush(QColor(theme.colour("GRAPH_BACKGROUND")))
        theme.theme_changes().sig_theme_changed.connect(self._on_theme_changed)
        self.node_items: dict[str, NodeItem] = {}
        self.scene().selectionChanged.connect(self._on_selection)
        self._font = QFont(self.font())
        self._font.setPointSizeF(max(7.5, self.font().pointSizeF() - 1))

    def _on_theme_changed(self, _theme: str) -> None:
        self.setBackgroundBrush(QColor(theme.colour("GRAPH_BACKGROUND")))

    def set_graph(self, graph, layout) -> None:
        """Show ``graph`` (a graph_layout.ModelGraph) placed by ``layout`` (its GraphLayout)."""
        scene = self.scene()
        scene.clear()
        self.node_items = {}
        edges, heads = QPainterPath(), QPainterPath()
        for route in layout.routes:
            if len(route) < 2:
                continue
            edges.moveTo(*route[0])
            for point in route[1:]:
                edges.lineTo(*point)
            _arrow_head(heads, QPointF(*route[-2]), QPointF(*route[-1]))
        pen = QPen(QColor("#8a94a3"), 1.0)
        pen.setCosmetic(True)
        edge_item = QGraphicsPathItem(edges)
        edge_item.setPen(pen)
        edge_item.setZValue(-1)
        scene.addItem(edge_item)
        head_item = QGraphicsPathItem(heads)
        head_item.setPen(QPen(Qt.PenStyle.NoPen))
        head_item.setBrush(QColor("#8a94a3"))
        head_item.setZValue(-1)
        scene.addItem(head_item)
        for node in graph.nodes:
            centre = layout.positions.get(node.id)
            if centre is None:
                continue
            item = NodeItem(node.id, node.label, node.kind, centre, layout.sizes[node.id], self._font)
            item.setToolTip(node.detail or node.name)
            item.name = node.name
            scene.addItem(item)
            self.node_items[node.id] = item
        scene.setSceneRect(QRectF(0, 0, max(layout.width, 1.0), max(layout.height, 1.0)))
        self.fit_width()

    def fit(self) -> None:
        """Zoom so the whole graph shows, its width and its height, never above 1:1."""
        rect = self.scene().sceneRect()
        if rect.isEmpty():
            return
        self.resetTransform()
        view = self.viewport().rect()
        scale = min(1.0, max(view.width() - 2 * FIT_MARGIN, 50) / rect.width(),
                    max(view.height() - 2 * FIT_MARGIN, 50) / rect.height())
        self.scale(scale, scale)
        self.centerOn(rect.center())

    def fit_width(self) -> None:
        """Zoom so the graph's width fits (a tall graph then scrolls from its top), never above
        1:1: how a graph first shows, its boxes readable."""
        rect = self.scene().sceneRect()
        if rect.isEmpty():
            return
        self.resetTransform()
        view = self.viewport().rect()
        scale = min(1.0, max(view.width() - 2 * FIT_MARGIN, 50) / rect.width())
        self.scale(scale, scale)
        self.centerOn(rect.center().x(), rect.top())

    def zoom(self, factor: float) -> None:
        current = self.transform().m11()
        factor = max(0.02 / current, min(factor, 4.0 / current))
        self.scale(factor, factor)

    def select_node(self, node_id: str) -> bool:
        item = self.node_items.get(node_id)
        if item is None:
            return False
        self.scene().clearSelection()
        item.setSelected(True)
        self.centerOn(item)
        return True

    def find(self, text: str) -> str | None:
        """Select the first box whose name, label, id or detail contains ``text``; its node id."""
        needle = text.strip().lower()
        if not needle:
            return None
        for node_id, item in self.node_items.items():
            if any(needle in field.lower() for field in (item.name, item.label, node_id, item.toolTip())):
                self.select_node(node_id)
                return node_id
        return None

    def wheelEvent(self, event) -> None:
        if event.modifiers() & Qt.KeyboardModifier.ControlModifier or not self.verticalScrollBar().isVisible():
            self.zoom(1.15 if event.angleDelta().y() > 0 else 1 / 1.15)
            event.accept()
        else:
            super().wheelEvent(event)

    def _on_selection(self) -> None:
        selected = self.scene().selectedItems()
        if selected and isinstance(selected[0], NodeItem):
            self.sig_node_selected.emit(selected[0].node_id)
        elif not selected:
            self.sig_node_selected.emit("")


def _arrow_head(path: QPainterPath, before: QPointF, tip: QPointF) -> None:
    direction = tip - before
    length = (direction.x() ** 2 + direction.y() ** 2) ** 0.5
    if length == 0:
        return
    unit = QPointF(direction.x() / length, direction.y() / length)
    normal = QPointF(-unit.y(), unit.x())
    base = tip - unit * ARROW_SIZE * 1.6
    path.moveTo(tip)
    path.lineTo(base + normal * ARROW_SIZE)
    path.lineTo(base - normal * ARROW_SIZE)
    path.closeSubpath()


def node_details_html(graph, node_id: str) -> str:
    """What the details panel says of a node: its operator and name, its detail lines
    (attributes, weights), and the tensors coming in and going out with their shapes."""
    node = graph.node(node_id)
    names = {n.id: n.name or n.label for n in graph.nodes}
    parts = [f"<b style='font-size: 13px;'>{escape(node.label)}</b>"]
    if node.name and node.name != node.label:
        parts.append(f"<div style='color: #5f6b7a;'>{escape(node.name)}</div>")
    lines = [line for line in node.detail.splitlines() if line.strip()]
    if lines and lines[0].split()[:1] == [node.label]:
        lines = lines[1:]  # the tooltip's first line repeats the operator and name
    if lines:
        parts.append("<div style='margin-top: 6px;'>" + "<br>".join(escape(line) for line in lines) + "</div>")
    incoming = [e for e in graph.edges if e.dst == node_id]
    outgoing = [e for e in graph.edges if e.src == node_id]
    for title, edges, other in (("Inputs", incoming, "src"), ("Outputs", outgoing, "dst")):
        if not edges:
            continue
        rows = [f"{escape(e.tensor)}: {escape(e.shape_text())}"
                f" <span style='color: #6b7686;'>{'from' if other == 'src' else 'to'} "
                f"{escape(names.get(getattr(e, other), getattr(e, other)))}</span>" for e in edges]
        parts.append(f"<div style='margin-top: 8px; font-weight: 600;'>{title}</div><div>{'<br>'.join(rows)}</div>")
    return "".join(parts)


class NodeDetails(QFrame):
    """The panel beside the graph: the clicked node's details, text that can be selected and
    copied."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("graph-node-details")
        theme.set_themed_style_sheet(self, "#graph-node-details { background: @BACKGROUND;"
                                           " border-left: 1px solid @PANEL_BORDER; }")
        self.text = QLabel("")
        self.text.setObjectName("graph-node-details-text")
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.RichText)
        self.text.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        theme.set_themed_style_sheet(self.text, "color: @FOREGROUND; background: @BACKGROUND; padding: 8px;")
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(self.text)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(scroll)
        self.show_hint()

    def show_hint(self) -> None:
        self.text.setText("<span style='color: #6b6b6b;'>Click a box to see its attributes, weights "
                          "and tensors here.</span>")

    def show_html(self, html: str) -> None:
        self.text.setText(html)


class GraphPanel(QWidget):
    """The Graph tab: a find box, zoom buttons, a count, the view and the details of the node
    clicked. ``load(path)`` reads and lays out the model off the GUI thread (onnx is imported
    there, in the tool window's process only)."""

    def __init__(self, tasks, parent: QWidget | None = None):
        super().__init__(parent)
        self._tasks = tasks
        self.view = GraphView()
        self.view.sig_node_selected.connect(self._show_details)
        self.details = NodeDetails()
        self.status = QLabel("")
        self.status.setObjectName("graph-status")
        theme.set_themed_style_sheet(self.status, "color: @MUTED_TEXT;")
        self.find_box = QLineEdit()
        self.find_box.setPlaceholderText("Find a node…")
        self.find_box.setClearButtonEnabled(True)
        self.find_box.returnPressed.connect(lambda: self.view.find(self.find_box.text()))
        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(self.find_box, 1)
        for text, tip, action in (("−", "Zoom out", lambda: self.view.zoom(1 / 1.25)),
                                  ("+", "Zoom in", lambda: self.view.zoom(1.25)),
                                  ("Fit", "Show the whole graph", self.view.fit)):
            button = QToolButton()
            button.setText(text)
            button.setObjectName(f"graph-{'fit' if text == 'Fit' else 'zoom'}")
            button.setToolTip(tip)
            button.clicked.connect(action)
            bar.addWidget(button)
        bar.addWidget(self.status)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.view)
        self.splitter.addWidget(self.details)
        self.splitter.setStretchFactor(0, 1)
        self.splitter.setStretchFactor(1, 0)
        self.splitter.setSizes([600, DETAILS_WIDTH])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.splitter, 1)
        self.loaded_path: str | None = None
        self.graph = None

    def load(self, path: str) -> None:
        if self.loaded_path == path:
            return
        self.loaded_path = path
        self.status.setText("Reading the graph…")
        self._tasks.run("modeltools.graph", _read_graph, path, on_done=self._show, on_error=self._failed)

    def show_graph(self, graph, placed) -> None:
        """Show ``graph`` laid out as ``placed`` (what ``load`` does once the file is read)."""
        self.graph = graph
        self.view.set_graph(graph, placed)
        self.details.show_hint()
        operators = sum(1 for n in graph.nodes if n.kind == "op")
        self.status.setText(f"{operators} operators")

    def _show(self, result) -> None:
        graph, placed = result
        self.show_graph(graph, placed)

    def _show_details(self, node_id: str) -> None:
        if not node_id or self.graph is None:
            self.details.show_hint()
            return
        self.details.show_html(node_details_html(self.graph, node_id))

    def _failed(self, error: Exception) -> None:
        self.loaded_path = None
        self.status.setText(str(error) or type(error).__name__)


def _read_graph(path: str):
    from workbench.modeltools.graph_layout import graph_of, layout

    graph = graph_of(path)
    return graph, layout(graph)

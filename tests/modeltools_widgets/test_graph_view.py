"""The native graph view: one plain item per box and all arrows in two items, so a thousand
operators stay cheap to draw; labels only when readable; find and select."""

from __future__ import annotations

from PySide6.QtCore import Qt

from workbench.modeltools.graph_layout import GraphEdge, GraphNode, ModelGraph, layout
from workbench.modeltools.widgets.graph_view import GraphView, NodeItem, colours_for

from .conftest import screenshot


def chain_with_branches(operators: int) -> ModelGraph:
    """input → op0 → op1 → …, every fourth op also feeding the op three further on (a residual
    edge skipping layers), → output."""
    nodes = [GraphNode("input:x", "input", "x", "x: 1×3×32×32", "input")]
    edges = []
    kinds = ("Conv", "Relu", "Add", "MatMul")
    previous = "input:x"
    for i in range(operators):
        node_id = f"node:{i}"
        nodes.append(GraphNode(node_id, kinds[i % 4], f"{kinds[i % 4].lower()}_{i}", f"{kinds[i % 4]} #{i}"))
        edges.append(GraphEdge(previous, node_id, f"t{i}"))
        if i % 4 == 0 and i + 3 < operators:
            edges.append(GraphEdge(node_id, f"node:{i + 3}", f"skip{i}"))
        previous = node_id
    nodes.append(GraphNode("output:y", "output", "y", "y: 1×10", "output"))
    edges.append(GraphEdge(previous, "output:y", "y"))
    return ModelGraph(nodes, edges, "chain")


def test_a_thousand_operators_are_a_thousand_plain_items_and_two_paths(qtbot):
    graph = chain_with_branches(1000)
    view = GraphView()
    qtbot.addWidget(view)
    view.resize(800, 600)
    view.show()
    view.set_graph(graph, layout(graph))
    items = view.scene().items()
    assert len(items) == len(graph.nodes) + 2
    assert all(not item.graphicsEffect() for item in items)
    assert len(view.node_items) == len(graph.nodes)
    view.fit()
    assert view.transform().m11() <= 1.0
    view.grab()  # drawn zoomed out: boxes without labels


def test_find_selects_and_centres_a_node_and_the_tooltip_is_its_detail(qtbot):
    graph = chain_with_branches(12)
    view = GraphView()
    qtbot.addWidget(view)
    view.resize(500, 500)
    view.show()
    selected = []
    view.sig_node_selected.connect(selected.append)
    view.set_graph(graph, layout(graph))
    assert view.find("matmul_7") == "node:7"
    assert selected == ["node:7"] and view.node_items["node:7"].isSelected()
    assert view.node_items["node:7"].toolTip() == "MatMul #7"
    assert view.find("no such node") is None
    view.zoom(1.5)
    screenshot(view, "graph-view")


def test_boxes_are_coloured_by_kind_and_operator_family():
    assert colours_for("input", "input") != colours_for("output", "output")
    assert colours_for("op", "Conv") == colours_for("op", "QLinearConv")
    assert colours_for("op", "com.microsoft.Gelu") == colours_for("op", "Relu")
    assert isinstance(NodeItem("n", "Conv", "op", (0, 0), (80, 30), GraphView().font()), NodeItem)


def test_fit_shows_the_whole_graph_its_height_as_well_as_its_width(qtbot):
    graph = chain_with_branches(30)  # far taller than wide
    view = GraphView()
    qtbot.addWidget(view)
    view.resize(700, 360)
    view.show()
    view.set_graph(graph, layout(graph))
    view.fit()
    shown = view.mapFromScene(view.scene().sceneRect()).boundingRect()
    assert view.viewport().rect().contains(shown)
    assert view.transform().m11() <= 1.0


def test_a_clicked_box_shows_its_details_and_tensors_in_the_side_panel(qtbot):
    from workbench.modeltools.graph_layout import GraphEdge as Edge
    from workbench.modeltools.widgets.graph_view import GraphPanel

    graph = chain_with_branches(12)
    graph.node("node:4").detail = ("Conv  conv_4\ngroup=1 pads=1,1,1,1 kernel_shape=3,3\n"
                                   "weight features.1.weight: 16×8×3×3")
    graph.edges = [Edge(e.src, e.dst, e.tensor, [1, 16, 8, 8]) if e.dst == "node:4" else e for e in graph.edges]
    panel = GraphPanel(tasks=None)
    qtbot.addWidget(panel)
    panel.resize(900, 500)
    panel.show()
    panel.show_graph(graph, layout(graph))
    assert "Click a box" in panel.details.text.text()
    item = panel.view.node_items["node:4"]
    position = panel.view.mapFromScene(item.scenePos())
    qtbot.mouseClick(panel.view.viewport(), Qt.MouseButton.LeftButton, pos=position)
    text = panel.details.text.text()
    assert "Conv" in text and "kernel_shape=3,3" in text and "16×8×3×3" in text
    assert "Inputs" in text and "t4: 1×16×8×8" in text and "from matmul_3" in text
    assert "Outputs" in text and "to relu_5" in text and "to matmul_7" in text  # the skip edge too
    assert panel.details.isVisible() and panel.details.width() > 150
    qtbot.wait(20)
    screenshot(panel, "graph-panel-details")

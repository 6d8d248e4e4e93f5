"""The model graph (nodes and edges read from ONNX) and its layered layout."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.graph_layout import (GraphEdge, GraphLayout, GraphNode, ModelGraph,
                                               graph_of, layout)


def residual_onnx(path: Path, blocks: int, channels: int = 4) -> Path:
    """A chain of residual blocks (Conv, Relu, Conv, Add with the block's input): 4 operators
    per block, weights as initializers."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes, weights, x = [], [], "x"
    for b in range(blocks):
        for suffix in "ab":
            weights.append(numpy_helper.from_array(
                np.zeros((channels, channels, 3, 3), np.float32), f"w{b}{suffix}"))
        nodes += [helper.make_node("Conv", [x, f"w{b}a"], [f"c{b}a"], pads=[1, 1, 1, 1], name=f"conv{b}a"),
                  helper.make_node("Relu", [f"c{b}a"], [f"r{b}"], name=f"relu{b}"),
                  helper.make_node("Conv", [f"r{b}", f"w{b}b"], [f"c{b}b"], pads=[1, 1, 1, 1], name=f"conv{b}b"),
                  helper.make_node("Add", [x, f"c{b}b"], [f"y{b}"], name=f"add{b}")]
        x = f"y{b}"
    graph = helper.make_graph(
        nodes, "residual", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", channels, 8, 8])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], weights)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def assert_valid(graph: ModelGraph, result: GraphLayout) -> None:
    """Every node placed; every edge points down and its route runs from the source's bottom
    to the target's top without going up; no two boxes overlap."""
    assert set(result.positions) == {n.id for n in graph.nodes}
    assert len(result.routes) == len(graph.edges)
    for edge, route in zip(graph.edges, result.routes):
        (_, y0), (_, y1) = result.positions[edge.src], result.positions[edge.dst]
        assert y1 > y0, f"{edge.src} -> {edge.dst} does not point down"
        assert route[0][1] == pytest.approx(y0 + result.sizes[edge.src][1] / 2)
        assert route[-1][1] == pytest.approx(y1 - result.sizes[edge.dst][1] / 2)
        ys = [p[1] for p in route]
        assert ys == sorted(ys)
    ids = list(result.positions)
    centre = np.array([result.positions[i] for i in ids])
    size = np.array([result.sizes[i] for i in ids])
    apart_x = np.abs(centre[:, None, 0] - centre[None, :, 0]) >= (size[:, None, 0] + size[None, :, 0]) / 2
    apart_y = np.abs(centre[:, None, 1] - centre[None, :, 1]) >= (size[:, None, 1] + size[None, :, 1]) / 2
    overlapping = ~(apart_x | apart_y)
    np.fill_diagonal(overlapping, False)
    assert not overlapping.any(), [(ids[a], ids[b]) for a, b in zip(*np.nonzero(overlapping))][:5]
    assert all(0 <= x - w / 2 and x + w / 2 <= result.width + 1e-6
               for (x, _), (w, _) in zip(centre, size))


def test_a_thousand_operator_residual_graph_lays_out_validly_and_fast(tmp_path, capsys):
    graph = graph_of(residual_onnx(tmp_path / "residual.onnx", blocks=250))
    assert sum(n.kind == "op" for n in graph.nodes) == 1000
    start = time.perf_counter()
    result = layout(graph)
    seconds = time.perf_counter() - start
    with capsys.disabled():
        print(f"\nlayout of {len(graph.nodes)} nodes / {len(graph.edges)} edges: {seconds * 1000:.0f} ms, "
              f"{result.crossings} crossings, {result.width:.0f}x{result.height:.0f}")
    assert_valid(graph, result)
    assert result.crossings == 0
    # No drift down the chain: every block is drawn the same way, so the drawing stays narrow.
    for label in ("Add", "Relu"):
        assert len({round(result.positions[n.id][0], 3) for n in graph.nodes if n.label == label}) == 1
    assert result.width < 300


def test_the_graph_has_inputs_outputs_and_operators_but_no_weight_nodes(tmp_path):
    import onnx

    path = residual_onnx(tmp_path / "two-blocks.onnx", blocks=2)
    graph = graph_of(path)
    model = onnx.load(str(path))
    kinds = [n.kind for n in graph.nodes]
    assert kinds.count("input") == 1 and kinds.count("output") == 1
    assert kinds.count("op") == len(model.graph.node) == 8
    weight_names = {init.name for init in model.graph.initializer}
    assert not weight_names & {n.name for n in graph.nodes}
    assert not weight_names & {e.tensor for e in graph.edges}
    # x feeds the first Conv and, past it, the first Add: two edges from the input node.
    assert sorted(e.dst for e in graph.edges if e.src == "input:x") == ["node:0", "node:3"]
    first = next(e for e in graph.edges if e.src == "input:x")
    assert first.tensor == "x" and first.shape == ["batch", 4, 8, 8]
    conv = graph.node("node:0")
    assert conv.label == "Conv" and conv.name == "conv0a"
    assert "pads=1,1,1,1" in conv.detail and "weight w0a: 4×4×3×3" in conv.detail
    last = next(e for e in graph.edges if e.dst.startswith("output:"))
    assert last.shape == ["batch", 4, 8, 8] and last.shape_text() == "batch×4×8×8"
    assert_valid(graph, layout(graph))


def test_barycenter_sweeps_undo_a_crossing_the_model_order_makes():
    # In file order the second row is [C, D], but A feeds D and B feeds C.
    graph = ModelGraph([GraphNode(i, "Relu", i) for i in "ABCDE"],
                       [GraphEdge("A", "D", "a"), GraphEdge("B", "C", "b"),
                        GraphEdge("C", "E", "c"), GraphEdge("D", "E", "d")])
    result = layout(graph)
    assert result.crossings == 0
    assert (result.positions["A"][0] < result.positions["B"][0]) == \
           (result.positions["D"][0] < result.positions["C"][0])
    assert_valid(graph, result)


def test_a_constant_sits_just_above_the_node_that_reads_it():
    graph = ModelGraph([GraphNode("in", "input", "x", kind="input"),
                        *[GraphNode(f"n{i}", "Relu", f"n{i}") for i in range(5)],
                        GraphNode("k", "Constant", "k")],
                       [GraphEdge("in", "n0", "x"), *[GraphEdge(f"n{i}", f"n{i + 1}", f"t{i}") for i in range(4)],
                        GraphEdge("k", "n4", "k")])
    result = layout(graph)
    assert result.layers["in"] == 0
    assert result.layers["k"] == result.layers["n4"] - 1 == 4
    assert_valid(graph, result)


def test_an_edge_that_skips_rows_runs_straight_down_through_them():
    graph = ModelGraph([GraphNode(i, "Add", i) for i in "abcde"],
                       [GraphEdge("a", "b", "1"), GraphEdge("b", "c", "2"), GraphEdge("c", "d", "3"),
                        GraphEdge("a", "d", "skip"), GraphEdge("a", "e", "far"), GraphEdge("d", "e", "4")])
    result = layout(graph)
    skip = result.routes[3]
    assert len(skip) == 2 + 2 * 2   # two skipped rows, entered and left vertically
    assert len({round(x, 6) for x, _ in skip[1:-1]}) == 1
    # The two long edges from a share their way down as far as they go together.
    far = result.routes[4]
    assert far[:len(skip) - 1] == skip[:-1]
    assert_valid(graph, result)


def test_a_cycle_is_still_laid_out_without_overlaps():
    graph = ModelGraph([GraphNode(i, "Loop", i) for i in "abc"],
                       [GraphEdge("a", "b", "1"), GraphEdge("b", "c", "2"), GraphEdge("c", "a", "back")])
    result = layout(graph)
    assert len(result.positions) == 3 and len(result.routes[2]) >= 2
    assert result.positions["a"][1] < result.positions["b"][1] < result.positions["c"][1]


def test_an_empty_graph_and_a_lone_node_lay_out():
    assert layout(ModelGraph()).positions == {}
    single = layout(ModelGraph([GraphNode("n", "Identity", "n")]))
    assert single.positions["n"][0] > 0 and single.width > single.sizes["n"][0]


def test_a_graph_survives_json():
    import json

    graph = ModelGraph([GraphNode("a", "input", "x", "x: 1×3", "input"), GraphNode("b", "Relu", "r")],
                       [GraphEdge("a", "b", "x", [1, "n", None])], "g")
    assert ModelGraph.from_json(json.loads(json.dumps(graph.to_json()))) == graph


@pytest.mark.parametrize("content", [b"", b"not a model at all\n" * 20])
def test_graph_of_names_a_file_that_is_not_onnx(tmp_path, content):
    path = tmp_path / "broken.onnx"
    path.write_bytes(content)
    with pytest.raises(ModelToolError, match="broken.onnx"):
        graph_of(path)


def test_graph_of_names_a_truncated_model(tmp_path):
    data = residual_onnx(tmp_path / "whole.onnx", blocks=2).read_bytes()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(ModelToolError, match=r"cut\.onnx.*truncated"):
        graph_of(path)

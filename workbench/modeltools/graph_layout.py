"""A model's graph as boxes and arrows, and a layered layout to draw it with.

``graph_of(path)`` reads an ONNX model (its structure, not its weights) into a ``ModelGraph``:
one node per operator, per graph input and per graph output; one edge per tensor from the node
that produces it to each node that reads it. Weights (initializers) are not nodes: the detail
of the node that reads them lists them with their shapes.

``layout(graph)`` places the nodes in the Sugiyama manner: longest-path layering (so every
edge points down), dummy points where an edge skips layers (shared by the long edges of one
source), a few barycenter sweeps to cut crossings, then Brandes-Köpf x coordinates, which keep
chains and long edges straight. Pure Python (no Qt, no NumPy); a graph of 1,000 operators lays
out in well under a second. The window draws the result; nothing here imports Qt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

INPUT, OUTPUT, OPERATOR = "input", "output", "op"


@dataclass
class GraphNode:
    """A box: ``label`` is what it shows (the op type, or "input"/"output"), ``name`` the node's
    or tensor's name, ``detail`` more lines for a tooltip, ``kind`` one of "op", "input", "output"."""

    id: str
    label: str
    name: str
    detail: str = ""
    kind: str = OPERATOR


@dataclass
class GraphEdge:
    """An arrow from ``src`` to ``dst`` carrying the tensor ``tensor``; ``shape`` lists its
    dimensions (ints, names of free dimensions, None when unknown), or is None when the whole
    shape is unknown."""

    src: str
    dst: str
    tensor: str
    shape: list | None = None

    def shape_text(self) -> str:
        if self.shape is None:
            return "?"
        return "×".join("?" if d is None else str(d) for d in self.shape) or "scalar"


@dataclass
class ModelGraph:
    """The nodes and edges of one model, in the model's (topological) order."""

    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)
    name: str = ""

    def node(self, node_id: str) -> GraphNode:
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(node_id)

    def to_json(self) -> dict:
        return {"name": self.name,
                "nodes": [{"id": n.id, "label": n.label, "name": n.name, "detail": n.detail,
                           "kind": n.kind} for n in self.nodes],
                "edges": [{"src": e.src, "dst": e.dst, "tensor": e.tensor,
                           "shape": None if e.shape is None else list(e.shape)} for e in self.edges]}

    @classmethod
    def from_json(cls, data: dict) -> "ModelGraph":
        return cls([GraphNode(**n) for n in data.get("nodes", [])],
                   [GraphEdge(**e) for e in data.get("edges", [])], data.get("name", ""))


def graph_of(path: Path | str) -> ModelGraph:
    """The graph of the ONNX model at ``path``; ModelToolError when it is not one."""
    from workbench.modeltools.inspect import infer_shapes, read_onnx

    model = read_onnx(Path(path))
    model, _ = infer_shapes(model)
    return graph_from_onnx(model)


def graph_from_onnx(model: Any) -> ModelGraph:
    """The ModelGraph of an ``onnx.ModelProto`` (shapes as far as the model records them; run
    shape inference first for the edges to carry them)."""
    from workbench.modeltools.inspect import attribute_summary, tensor_shapes

    graph = model.graph
    shapes = tensor_shapes(model)
    weights = {init.name: list(init.dims) for init in graph.initializer}
    weights.update({s.values.name: list(s.dims) for s in graph.sparse_initializer})
    result = ModelGraph(name=graph.name)
    producer: dict[str, str] = {}

    for tensor in graph.input:
        if tensor.name in weights:
            continue
        node_id = f"input:{tensor.name}"
        result.nodes.append(GraphNode(node_id, "input", tensor.name,
                                      _tensor_line(tensor.name, shapes), INPUT))
        producer[tensor.name] = node_id

    for index, node in enumerate(graph.node):
        node_id = f"node:{index}"
        op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        lines = [f"{op}  {node.name}" if node.name else op]
        attributes = attribute_summary(node)
        if attributes:
            lines.append(attributes)
        lines += [f"weight {name}: {'×'.join(map(str, weights[name])) or 'scalar'}"
                  for name in node.input if name in weights]
        lines += ["→ " + _tensor_line(name, shapes) for name in node.output if name]
        result.nodes.append(GraphNode(node_id, op, node.name or f"{op}_{index}", "\n".join(lines)))
        for name in node.input:
            if name and name in producer:
                result.edges.append(GraphEdge(producer[name], node_id, name, shapes.get(name)))
        for name in node.output:
            if name:
                producer[name] = node_id

    for tensor in graph.output:
        node_id = f"output:{tensor.name}"
        result.nodes.append(GraphNode(node_id, "output", tensor.name,
                                      _tensor_line(tensor.name, shapes), OUTPUT))
        if tensor.name in producer:
            result.edges.append(GraphEdge(producer[tensor.name], node_id, tensor.name,
                                          shapes.get(tensor.name)))
    return result


def _tensor_line(name: str, shapes: dict) -> str:
    shape = shapes.get(name)
    text = "?" if shape is None else ("×".join("?" if d is None else str(d) for d in shape) or "scalar")
    return f"{name}: {text}"


# ---------------------------------------------------------------------------------------------
# Layout


@dataclass
class GraphLayout:
    """Where to draw a ModelGraph. ``positions`` are box centres and ``sizes`` box (width,
    height) by node id; ``layers`` the row of each node (0 at the top); ``routes`` one polyline
    per edge of ``graph.edges`` (same order), from the bottom of the source box to the top of
    the target box through the points where it passes the rows it skips; ``crossings`` how many
    pairs of edge segments cross."""

    positions: dict[str, tuple[float, float]]
    sizes: dict[str, tuple[float, float]]
    layers: dict[str, int]
    routes: list[list[tuple[float, float]]]
    width: float
    height: float
    crossings: int


def default_node_size(node: GraphNode) -> tuple[float, float]:
    """A box wide enough for the label in a small UI font."""
    return max(72.0, 7.5 * len(node.label) + 24.0), 32.0


def layout(graph: ModelGraph, node_size: Callable[[GraphNode], tuple[float, float]] = default_node_size,
           layer_gap: float = 40.0, node_gap: float = 24.0, sweeps: int = 4,
           margin: float = 16.0) -> GraphLayout:
    """A layered layout of ``graph``: every edge points down (for an acyclic graph, which ONNX
    graphs are; an edge closing a cycle is drawn upwards), boxes never overlap, and crossings
    are reduced by ``sweeps`` barycenter sweeps down and up."""
    count = len(graph.nodes)
    index = {node.id: i for i, node in enumerate(graph.nodes)}
    sizes = [tuple(map(float, node_size(node))) for node in graph.nodes]
    pairs, reversed_pairs = _acyclic_pairs(graph, index)
    layer = _layers(count, pairs, [n.kind for n in graph.nodes])

    # The proper layered graph: real nodes 0..count-1, then one dummy chain per source node
    # that reaches further than the next layer, shared by all its long edges.
    succ: list[list[int]] = [[] for _ in range(count)]
    pred: list[list[int]] = [[] for _ in range(count)]
    width = [s[0] for s in sizes]
    chain: dict[int, dict[int, int]] = {}   # source -> {layer: dummy}
    order_key = list(range(count))

    def link(a: int, b: int) -> None:
        if b not in succ[a]:
            succ[a].append(b)
            pred[b].append(a)

    for u, v in sorted(pairs):
        if layer[v] == layer[u] + 1:
            link(u, v)
            continue
        points = chain.setdefault(u, {})
        previous = u
        for row in range(layer[u] + 1, layer[v]):
            if row not in points:
                dummy = len(succ)
                succ.append([])
                pred.append([])
                width.append(0.0)
                layer.append(row)
                order_key.append(u)
                points[row] = dummy
            link(previous, points[row])
            previous = points[row]
        link(previous, v)

    rows: list[list[int]] = [[] for _ in range(max(layer, default=-1) + 1)]
    for node in sorted(range(len(layer)), key=lambda n: (order_key[n], n)):
        rows[layer[node]].append(node)
    rows = _order(rows, succ, pred, sweeps)
    crossings = _total_crossings(rows, succ)

    is_dummy = [n >= count for n in range(len(layer))]
    x = _x_positions(rows, succ, pred, width, is_dummy, node_gap)
    heights = [max((sizes[n][1] for n in row if n < count), default=0.0) for row in rows]
    centre_y, top = [], margin
    for h in heights:
        centre_y.append(top + h / 2)
        top += h + layer_gap
    left = min((x[n] - width[n] / 2 for row in rows for n in row), default=0.0)
    shift = margin - left
    xs = [value + shift for value in x]
    right = max((xs[n] + width[n] / 2 for row in rows for n in row), default=0.0)

    positions = {graph.nodes[n].id: (xs[n], centre_y[layer[n]]) for n in range(count)}
    routes = []
    for edge in graph.edges:
        u, v = index.get(edge.src), index.get(edge.dst)
        if u is None or v is None or u == v:
            routes.append([])
            continue
        flipped = (u, v) in reversed_pairs
        a, b = (v, u) if flipped else (u, v)
        points = [(xs[a], centre_y[layer[a]] + sizes[a][1] / 2)]
        for row, d in sorted(chain.get(a, {}).items()):
            if layer[a] < row < layer[b]:
                # Straight down through the rows it passes, so it never cuts a box there.
                points += [(xs[d], centre_y[row] - heights[row] / 2),
                           (xs[d], centre_y[row] + heights[row] / 2)]
        points.append((xs[b], centre_y[layer[b]] - sizes[b][1] / 2))
        routes.append(points[::-1] if flipped else points)
    return GraphLayout(positions=positions,
                       sizes={graph.nodes[n].id: sizes[n] for n in range(count)},
                       layers={graph.nodes[n].id: layer[n] for n in range(count)},
                       routes=routes, width=right + margin,
                       height=top - layer_gap + margin if rows else 2 * margin,
                       crossings=crossings)


def _acyclic_pairs(graph: ModelGraph, index: dict[str, int]) -> tuple[set, set]:
    """The distinct (source, target) pairs of the edges, with the edges that close a cycle
    turned round (found by a depth-first search), and the set of pairs that were turned."""
    count = len(graph.nodes)
    out: list[list[int]] = [[] for _ in range(count)]
    for edge in graph.edges:
        u, v = index.get(edge.src), index.get(edge.dst)
        if u is not None and v is not None and u != v and v not in out[u]:
            out[u].append(v)
    state = [0] * count   # 0 unseen, 1 on the stack, 2 done
    back = set()
    for start in range(count):
        if state[start]:
            continue
        state[start] = 1
        stack = [(start, iter(out[start]))]
        while stack:
            node, successors = stack[-1]
            for nxt in successors:
                if state[nxt] == 1:
                    back.add((node, nxt))
                elif state[nxt] == 0:
                    state[nxt] = 1
                    stack.append((nxt, iter(out[nxt])))
                    break
            else:
                state[node] = 2
                stack.pop()
    pairs = {(u, v) for u in range(count) for v in out[u] if (u, v) not in back}
    pairs |= {(v, u) for u, v in back}
    return pairs, {(v, u) for u, v in back}


def _layers(count: int, pairs: set, kinds: list[str]) -> list[int]:
    """Longest-path layering; then operators without inputs (constants) move down to just
    above their first reader instead of sitting in the top row."""
    succ: list[list[int]] = [[] for _ in range(count)]
    indegree = [0] * count
    for u, v in pairs:
        succ[u].append(v)
        indegree[v] += 1
    layer = [0] * count
    ready = [n for n in range(count) if indegree[n] == 0]
    sources = set(ready)
    while ready:
        node = ready.pop()
        for nxt in succ[node]:
            layer[nxt] = max(layer[nxt], layer[node] + 1)
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                ready.append(nxt)
    for node in sources:
        if kinds[node] != INPUT and succ[node]:
            layer[node] = min(layer[v] for v in succ[node]) - 1
    return layer


def _order(rows: list[list[int]], succ: list, pred: list, sweeps: int) -> list[list[int]]:
    """Barycenter sweeps, down then up, keeping the order with the fewest crossings."""
    best = [list(r) for r in rows]
    best_crossings = _total_crossings(rows, succ)
    current = [list(r) for r in rows]
    for _ in range(sweeps):
        if best_crossings == 0:
            break
        for i in range(1, len(current)):
            current[i] = _barycenter_sort(current[i], current[i - 1], pred)
        for i in range(len(current) - 2, -1, -1):
            current[i] = _barycenter_sort(current[i], current[i + 1], succ)
        crossings = _total_crossings(current, succ)
        if crossings < best_crossings:
            best, best_crossings = [list(r) for r in current], crossings
    return best


def _barycenter_sort(row: list[int], fixed: list[int], neighbours: list) -> list[int]:
    position = {n: i for i, n in enumerate(fixed)}
    keys = {}
    scale = len(fixed) / max(len(row), 1)
    for i, node in enumerate(row):
        places = [position[m] for m in neighbours[node] if m in position]
        # A node with no neighbour in the fixed row keeps its relative place.
        keys[node] = sum(places) / len(places) if places else i * scale
    return sorted(row, key=lambda n: keys[n])


def _total_crossings(rows: list[list[int]], succ: list) -> int:
    return sum(_crossings(rows[i], rows[i + 1], succ) for i in range(len(rows) - 1))


def _crossings(upper: list[int], lower: list[int], succ: list) -> int:
    """Crossings between two adjacent rows: inversions of the lower ends when the edges are
    sorted by their upper ends (counted with a Fenwick tree)."""
    position = {n: i for i, n in enumerate(lower)}
    ends = []
    for node in upper:
        ends.extend(sorted(position[m] for m in succ[node] if m in position))
    tree = [0] * (len(lower) + 1)
    crossings = 0
    for seen, end in enumerate(ends):
        # Count earlier edges ending strictly right of this one.
        i, not_greater = end + 1, 0
        while i > 0:
            not_greater += tree[i]
            i -= i & -i
        crossings += seen - not_greater
        i = end + 1
        while i <= len(lower):
            tree[i] += 1
            i += i & -i
    return crossings


def _x_positions(rows: list[list[int]], succ: list, pred: list, width: list[float],
                 is_dummy: list[bool], gap: float) -> list[float]:
    """x of every box centre by Brandes and Köpf's method ("Fast and simple horizontal
    coordinate assignment", 2001, as dagre does it): four layouts that each line nodes up with a
    median neighbour (above or below, packed to the left or the right), balanced by taking the
    mean of the two middle values per node. Chains come out straight, long edges vertical, and
    the order and spacing of every row hold in each layout and so in their balance."""
    def separation(a: int, b: int) -> float:
        return (width[a] + width[b]) / 2 + (gap / 2 if is_dummy[a] or is_dummy[b] else gap)

    conflicts = _type1_conflicts(rows, pred, is_dummy)
    layouts = []
    for downward in (True, False):
        layered = rows if downward else rows[::-1]
        neighbours = pred if downward else succ
        for leftward in (True, False):
            adjusted = layered if leftward else [row[::-1] for row in layered]
            root, align = _vertical_alignment(adjusted, neighbours, conflicts, len(width))
            xs = _horizontal_compaction(adjusted, root, separation, len(width))
            layouts.append((leftward, xs if leftward else [-v for v in xs]))

    placed = [n for row in rows for n in row]
    if not placed:
        return [0.0] * len(width)

    def extent(xs: list[float]) -> float:
        return max(xs[n] + width[n] / 2 for n in placed) - min(xs[n] - width[n] / 2 for n in placed)

    narrowest = min((xs for _, xs in layouts), key=extent)
    low, high = min(narrowest[n] for n in placed), max(narrowest[n] for n in placed)
    shifted = []
    for leftward, xs in layouts:
        delta = low - min(xs[n] for n in placed) if leftward else high - max(xs[n] for n in placed)
        shifted.append([v + delta for v in xs])
    x = [0.0] * len(width)
    for n in placed:
        values = sorted(xs[n] for xs in shifted)
        x[n] = (values[1] + values[2]) / 2
    return x


def _type1_conflicts(rows: list[list[int]], pred: list, is_dummy: list[bool]) -> set:
    """Segments between a real node and anything that cross an inner segment (dummy to dummy):
    those are not used for alignment, so long edges stay straight."""
    conflicts = set()
    position = {}
    for row in rows:
        for i, n in enumerate(row):
            position[n] = i
    for upper, lower in zip(rows, rows[1:]):
        k0, scan = 0, 0
        for i, v in enumerate(lower):
            inner = next((u for u in pred[v] if is_dummy[u]), None) if is_dummy[v] else None
            if inner is None and i != len(lower) - 1:
                continue
            k1 = position[inner] if inner is not None else len(upper)
            for scanned in lower[scan:i + 1]:
                for u in pred[scanned]:
                    if (position[u] < k0 or k1 < position[u]) and not (is_dummy[u] and is_dummy[scanned]):
                        conflicts.add((min(u, scanned), max(u, scanned)))
            scan, k0 = i + 1, k1
    return conflicts


def _vertical_alignment(rows: list[list[int]], neighbours: list, conflicts: set,
                        count: int) -> tuple[list[int], list[int]]:
    """Blocks of nodes lined up vertically: each node joins the block of a median neighbour in
    the row before, unless that would cross an earlier alignment or a conflict."""
    root, align = list(range(count)), list(range(count))
    position = {}
    for row in rows:
        for i, n in enumerate(row):
            position[n] = i
    for row in rows:
        previous = -1
        for v in row:
            near = sorted((w for w in neighbours[v] if w in position), key=position.__getitem__)
            if not near:
                continue
            middle = (len(near) - 1) / 2
            for i in range(int(middle), int(middle + 0.5) + 1):
                w = near[i]
                if align[v] == v and previous < position[w] and (min(v, w), max(v, w)) not in conflicts:
                    align[w] = v
                    root[v] = root[w]
                    align[v] = root[v]
                    previous = position[w]
    return root, align


def _horizontal_compaction(rows: list[list[int]], root: list[int], separation: Callable,
                           count: int) -> list[float]:
    """x of each block: as far left as its left neighbours allow, then moved right towards its
    right neighbours where there is room, so blocks do not cling to the left edge."""
    gaps: dict[int, dict[int, float]] = {}
    incoming: dict[int, dict[int, float]] = {}
    blocks = []
    for row in rows:
        for left, right in zip(row, row[1:]):
            a, b = root[left], root[right]
            needed = separation(left, right)
            if needed > gaps.setdefault(a, {}).get(b, float("-inf")):
                gaps[a][b] = needed
                incoming.setdefault(b, {})[a] = needed
        blocks.extend(root[n] for n in row if root[n] == n)
    indegree = {b: len(incoming.get(b, {})) for b in blocks}
    ready = [b for b in blocks if indegree[b] == 0]
    order = []
    while ready:
        block = ready.pop()
        order.append(block)
        for nxt in gaps.get(block, {}):
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                ready.append(nxt)
    xs = [0.0] * count
    for block in order:
        xs[block] = max((xs[a] + s for a, s in incoming.get(block, {}).items()), default=0.0)
    for block in reversed(order):
        room = min((xs[b] - s for b, s in gaps.get(block, {}).items()), default=None)
        if room is not None:
            xs[block] = max(xs[block], room)
    for row in rows:
        for n in row:
            xs[n] = xs[root[n]]
    return xs

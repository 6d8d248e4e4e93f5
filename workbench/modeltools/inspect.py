"""Inspect: what a model file holds, without running it.

For an ONNX model: its inputs and outputs with shapes and types, opsets, an operator
histogram, the parameter count (see ``onnx_parameters``), an estimate of the
multiply-accumulates of one run, the layers with the most MACs, and the file's size. The graph
view is ``workbench.modeltools.graph_layout.graph_of``.

"Parameters" means what PyTorch means by it, so the tools agree on a model: the weights a
network learns. In PyTorch they are the module's parameters (a batch norm's running statistics
are buffers, counted apart); in ONNX they are the initializers a node takes as weights, biases
or batch-norm scale and shift, never an integer shape constant, a quantization scale or a
scalar constant. An exporter that folds batch norms into the convolutions before them changes
the count, legitimately: Convert's report says when that happened.

MACs are estimated from the inferred shapes for the operators that dominate compute:
Conv / ConvInteger / QLinearConv (output elements × Cin/group × kernel elements),
ConvTranspose (input elements × Cout/group × kernel elements) and Gemm / MatMul /
MatMulInteger / QLinearMatMul (M × N × K). Every other operator counts 0: element-wise
operators, pooling and normalisation are small next to them. Free dimensions (a dynamic batch)
count as 1, so the figure is per sample.

For PyTorch files: a state_dict or training checkpoint (``.pt`` / ``.pth``, read with
``torch.load(weights_only=True)``, which runs no code from the file) gives its tensors, the
parameter total and the buffers (batch norms' running statistics, integer tensors) apart; a
TorchScript archive its inputs, operators and tensors; a ``torch.export`` archive (``.pt2``) is
read from its JSON description, without unpickling anything. Nothing is written.
"""

from __future__ import annotations

import json
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

from workbench.modeltools.context import ToolContext
from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.library_output import first_line
from workbench.modeltools.params import Param, ToolSpec
from workbench.modeltools.report import ReportPlot, ReportTable, ToolReport

ONNX_SUFFIXES = (".onnx",)
TORCH_SUFFIXES = (".pt", ".pth", ".pt2")

SPEC = ToolSpec(
    name="inspect",
    title="Inspect",
    summary="Inputs and outputs with shapes and types, opset, operator histogram, parameter "
            "count, estimated MACs and size of an ONNX or PyTorch model file.",
    params=(
        Param("model", "path", "The model file: .onnx, or a PyTorch .pt / .pth / .pt2 file.",
              required=True, positional=True, suffixes=ONNX_SUFFIXES + TORCH_SUFFIXES),
        Param("top", "int", "How many layers the table of the heaviest layers lists.",
              default=10, minimum=1, maximum=10000, advanced=True),
    ),
    run="workbench.modeltools.inspect:run_inspect",
    stages=("Load", "Infer shapes", "Count"),
    applies_to=ONNX_SUFFIXES + TORCH_SUFFIXES,
)


def run_inspect(values: dict, context: ToolContext) -> ToolReport:
    """The inspection report of ``values["model"]``; ModelToolError when the file cannot be read."""
    from workbench.modeltools import model_files

    path = Path(values["model"]).expanduser()
    top = int(values.get("top") or 10)
    # What the file holds decides, not its name; a file that is no model gets the message
    # every tool gives.
    kind = model_files.identify(path).kind
    if kind == model_files.ONNX:
        return inspect_onnx(path, top, context)
    if kind in model_files.PYTORCH_KINDS:
        return inspect_torch(path, top, context, kind)
    raise ModelToolError(_other_format_message(path))


def _other_format_message(path: Path) -> str:
    suffix = path.suffix.lower() or "extension-less"
    try:
        from workbench.modeltools.registry import tools_for

        others = [spec.name for spec in tools_for(path.suffix) if spec.name != SPEC.name]
    except Exception:
        others = []
    hint = (f"use {', '.join(others)} for {suffix} files" if others else
            f"no installed plugin inspects {suffix} files; inspect the ONNX model it was made from")
    return f"{path}: inspect reads .onnx, .pt, .pth and .pt2 files; {hint}"


# ---------------------------------------------------------------------------------------------
# ONNX


def read_onnx(path: Path) -> Any:
    """The ONNX model at ``path`` without its external weights (structure and shapes only);
    ModelToolError naming the file when it is missing, truncated or not ONNX (the message
    every tool gives, see ``model_files.expect``)."""
    from workbench.modeltools import model_files

    path = Path(path)
    model_files.expect(path, (model_files.ONNX,), "Inspect")
    import onnx  # heavy: only when a model is read

    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception:
        raise ModelToolError(model_files.damaged(path, model_files.ONNX)) from None
    if not model.ir_version or not model.HasField("graph") or not model.graph.output:
        raise ModelToolError(model_files.damaged(path, model_files.ONNX))
    return model


def infer_shapes(model: Any) -> tuple[Any, str | None]:
    """The model with inferred shapes, and a warning when inference failed (the model comes
    back as it was)."""
    import onnx

    try:
        return onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True), None
    except Exception as exc:
        return model, (f"shape inference failed ({first_line(exc)}); only the shapes the file "
                       "records are shown")


def tensor_shapes(model: Any) -> dict[str, list | None]:
    """Every named tensor's dimensions (int, name of a free dimension, or None when unknown),
    or None when even its rank is unknown: graph inputs, outputs, inferred values, weights."""
    graph = model.graph
    shapes: dict[str, list | None] = {}
    for info in list(graph.value_info) + list(graph.input) + list(graph.output):
        shapes[info.name] = _value_shape(info)
    for init in graph.initializer:
        shapes[init.name] = list(init.dims)
    for sparse in graph.sparse_initializer:
        shapes[sparse.values.name] = list(sparse.dims)
    return shapes


def _value_shape(info: Any) -> list | None:
    kind = info.type.WhichOneof("value")
    if kind != "tensor_type" or not info.type.tensor_type.HasField("shape"):
        return None
    dims = []
    for dim in info.type.tensor_type.shape.dim:
        if dim.HasField("dim_value"):
            dims.append(int(dim.dim_value))
        elif dim.HasField("dim_param"):
            dims.append(dim.dim_param)
        else:
            dims.append(None)
    return dims


def _value_type(info: Any) -> str:
    kind = info.type.WhichOneof("value")
    if kind == "tensor_type":
        return _dtype_name(info.type.tensor_type.elem_type)
    return {"sequence_type": "sequence", "map_type": "map", "optional_type": "optional",
            "sparse_tensor_type": "sparse tensor"}.get(kind, "unknown")


def _dtype_name(elem_type: int) -> str:
    import onnx

    try:
        return onnx.helper.tensor_dtype_to_np_dtype(elem_type).name
    except Exception:
        try:
            return onnx.TensorProto.DataType.Name(elem_type).lower()
        except ValueError:
            return f"type {elem_type}"


def shape_text(shape: list | None) -> str:
    """``[batch, 1, 8, 8]``; ``?`` for an unknown dimension or shape."""
    if shape is None:
        return "?"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def attribute_summary(node: Any, limit: int = 120) -> str:
    """A node's attributes on one line (``kernel_shape=3,3 pads=1,1,1,1``)."""
    import onnx

    summary = " ".join(f"{a.name}={_attribute_text(onnx.helper.get_attribute_value(a))}"
                       for a in node.attribute)
    return summary if len(summary) <= limit else summary[:limit - 1] + "…"


def _attribute_text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        return ",".join(_attribute_text(v) for v in value)
    name = type(value).__name__
    return "subgraph" if name == "GraphProto" else name.removesuffix("Proto").lower()


# TensorProto element types of learned float weights, and of quantized (integer) ones.
_FLOAT_TYPES = (1, 10, 11, 16)           # FLOAT, FLOAT16, DOUBLE, BFLOAT16
# Inputs (by position) that hold no learned weights: quantization scales and zero points, a
# batch norm's running statistics, bounds, pads and sizes.
_NOT_WEIGHTS = {
    "QuantizeLinear": (1, 2), "DequantizeLinear": (1, 2),
    "QLinearConv": (1, 2, 4, 5, 6, 7), "QLinearMatMul": (1, 2, 4, 5, 6, 7),
    "ConvInteger": (2, 3), "MatMulInteger": (2, 3),
    "BatchNormalization": (3, 4),
    "Clip": (1, 2), "Pad": (1, 2, 3), "Resize": (1, 2, 3), "Upsample": (1,),
}
# Inputs (by position) where an integer initializer is a quantized weight or bias.
_INTEGER_WEIGHTS = {
    "DequantizeLinear": (0,), "QLinearConv": (3, 8), "QLinearMatMul": (0, 3),
    "ConvInteger": (1,), "MatMulInteger": (0, 1),
}


def onnx_parameters(model: Any) -> dict[str, int]:
    """The initializers of ``model`` that are parameters, by name, with their element counts:
    those a node takes as weights, biases or batch-norm scale and shift (float, or integer
    when quantized), not integer shape constants, quantization scales and zero points, batch
    norms' running statistics or scalar constants."""
    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    uses: dict[str, list[tuple[str, int]]] = {}
    for node in graph.node:
        for index, name in enumerate(node.input):
            if name in initializers:
                uses.setdefault(name, []).append((node.op_type, index))
    found = {}
    for name, init in initializers.items():
        if not init.dims:
            continue  # a scalar: a constant of the computation, not a learned weight
        weight_uses = [(op, index) for op, index in uses.get(name, ())
                       if index not in _NOT_WEIGHTS.get(op, ())]
        if not weight_uses:
            continue
        if init.data_type in _FLOAT_TYPES or any(
                index in _INTEGER_WEIGHTS.get(op, ()) for op, index in weight_uses):
            found[name] = _elements(list(init.dims))
    for sparse in graph.sparse_initializer:
        found[sparse.values.name] = _elements(list(sparse.dims))
    return found


def onnx_parameter_count(model: Any) -> int:
    """How many parameters ``model`` holds (see ``onnx_parameters``)."""
    return sum(onnx_parameters(model).values())


def _node_parameters(node: Any, parameters: dict[str, int], producers: dict[str, Any]) -> int:
    """The parameters a node takes: its own weight inputs, and those a DequantizeLinear right
    before it turns into float (a quantized model's weights)."""
    total = 0
    for name in dict.fromkeys(node.input):
        if name in parameters:
            total += parameters[name]
            continue
        producer = producers.get(name)
        if producer is not None and producer.op_type == "DequantizeLinear" and producer.input:
            total += parameters.get(producer.input[0], 0)
    return total


MAC_OPERATORS = ("Conv", "ConvInteger", "QLinearConv", "ConvTranspose", "Gemm", "MatMul",
                 "MatMulInteger", "QLinearMatMul")


def node_macs(node: Any, shapes: dict, free: set[str] | None = None) -> int | None:
    """Estimated multiply-accumulates of one run of ``node`` (see the module's docstring);
    None when a shape it needs is unknown. Names of free dimensions taken as 1 go to ``free``."""
    if node.domain not in ("", "ai.onnx", "com.microsoft") or node.op_type not in MAC_OPERATORS:
        return 0
    free = set() if free is None else free
    op, inputs, outputs = node.op_type, list(node.input), list(node.output)

    def dims(name: str) -> list[int] | None:
        shape = shapes.get(name) if name else None
        if shape is None or any(d is None for d in shape):
            return None
        free.update(d for d in shape if isinstance(d, str))
        return [d if isinstance(d, int) else 1 for d in shape]

    def product(values: list[int]) -> int:
        result = 1
        for v in values:
            result *= max(int(v), 0)
        return result

    if op in ("Conv", "ConvInteger", "QLinearConv"):
        weight = dims(inputs[3] if op == "QLinearConv" and len(inputs) > 3 else inputs[1])
        out = dims(outputs[0])
        return None if weight is None or out is None else product(out) * product(weight[1:])
    if op == "ConvTranspose":
        weight, data = dims(inputs[1]), dims(inputs[0])
        return None if weight is None or data is None else product(data) * product(weight[1:])
    out = dims(outputs[0])
    a = dims(inputs[0])
    if out is None or a is None or not a:
        return None
    if op == "Gemm":
        trans_a = any(at.name == "transA" and at.i for at in node.attribute)
        k = a[0] if trans_a else a[-1]
    else:
        k = a[-1]
    return product(out) * k


def inspect_onnx(path: Path, top: int, context: ToolContext) -> ToolReport:
    from workbench.modeltools.outputs import file_size

    context.stage("Load")
    model = read_onnx(path)
    warnings = []
    checked = _check_onnx(model)
    if checked:
        warnings.append(f"the ONNX checker reports: {checked}")

    context.stage("Infer shapes")
    model, failed = infer_shapes(model)
    if failed:
        warnings.append(failed)
    graph = model.graph
    shapes = tensor_shapes(model)

    context.stage("Count")
    parameters = onnx_parameters(model)
    producers = {out: node for node in graph.node for out in node.output}
    free: set[str] = set()
    operators: Counter = Counter()
    layers, unknown_macs = [], 0
    for index, node in enumerate(graph.node):
        op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        operators[op] += 1
        macs = node_macs(node, shapes, free)
        if macs is None:
            unknown_macs += 1
            macs = 0
        if macs:
            layers.append([node.name or f"{op}_{index}", op, macs,
                           _node_parameters(node, parameters, producers),
                           shape_text(shapes.get(node.output[0]) if node.output else None)])
        if index % 200 == 0:
            context.progress(index / max(len(graph.node), 1))
    if unknown_macs:
        warnings.append(f"the MACs of {unknown_macs} node(s) are not counted: their shapes are unknown")
    input_free = {d for i in graph.input for d in (_value_shape(i) or [])[:1] if isinstance(d, str)}
    if free - input_free:
        warnings.append("MACs take the free dimension(s) "
                        f"{', '.join(sorted(free - input_free))} as 1")

    initializer_names = {init.name for init in graph.initializer}
    inputs = [[i.name, _value_type(i), shape_text(_value_shape(i))]
              for i in graph.input if i.name not in initializer_names]
    outputs = [[o.name, _value_type(o), shape_text(shapes.get(o.name, _value_shape(o)))]
               for o in graph.output]
    histogram = sorted(operators.items(), key=lambda item: (-item[1], item[0]))
    layers.sort(key=lambda row: (-row[2], -row[3], row[0]))
    # Exporters declare more opsets than a model uses (the dynamo exporter lists the training
    # and preview domains): those its nodes, or its local functions' nodes, use are the model's.
    used = {node.domain or "ai.onnx" for node in graph.node}
    used |= {node.domain or "ai.onnx" for function in model.functions for node in function.node}
    opsets = {(o.domain or "ai.onnx"): int(o.version) for o in model.opset_import
              if (o.domain or "ai.onnx") in used | {"ai.onnx"}}
    producer = " ".join(p for p in (model.producer_name, model.producer_version) if p)

    figures = {
        "format": "ONNX",
        "parameters": sum(parameters.values()),
        "macs": sum(row[2] for row in layers),
        "size_bytes": file_size(path),
        "nodes": len(graph.node),
        "opset": opsets.get("ai.onnx"),
        "opsets": ", ".join(f"{domain} {version}" for domain, version in sorted(opsets.items())),
        "ir_version": int(model.ir_version),
        "producer": producer or None,
        "file": str(path.resolve()),
    }
    tables = [
        ReportTable("Inputs", ["name", "type", "shape"], inputs),
        ReportTable("Outputs", ["name", "type", "shape"], outputs),
        ReportTable("Operators", ["op type", "count"], [list(item) for item in histogram]),
        ReportTable("Layers with most MACs", ["node", "op", "MACs", "params", "output shape"],
                    layers[:top]),
    ]
    plots = [ReportPlot("Operators", [op for op, _ in histogram],
                        [{"name": "count", "values": [float(n) for _, n in histogram]}],
                        kind="bar", y_label="nodes")] if histogram else []
    context.progress(1.0)
    return ToolReport(tool=SPEC.name, title=f"Inspect {path.name}", figures=figures,
                      tables=tables, plots=plots, warnings=warnings)


def _check_onnx(model: Any) -> str:
    import onnx

    try:
        onnx.checker.check_model(model, full_check=False)
    except Exception as exc:
        return first_line(exc)[:300]
    return ""


# ---------------------------------------------------------------------------------------------
# PyTorch


def inspect_torch(path: Path, top: int, context: ToolContext, kind: str | None = None) -> ToolReport:
    """The report of a PyTorch file; ``kind`` is what ``model_files.identify`` found in it."""
    from workbench.modeltools import model_files
    from workbench.modeltools.outputs import file_size

    context.stage("Load")
    kind = kind or model_files.identify(path).kind
    if kind == model_files.EXPORTED_PROGRAM:
        content = _read_exported_program(path, _zip_names(path))
    elif kind == model_files.TORCHSCRIPT:
        content = _read_torchscript(path)
    else:
        content = _read_state_dict(path)

    context.stage("Count")
    tensors = content["tensors"]
    rows = [[name, shape_text(shape), dtype, kind, _elements(shape)]
            for name, shape, dtype, kind in tensors]
    total = sum(row[4] for row in rows if row[3] == PARAMETER)
    buffers = sum(row[4] for row in rows if row[3] != PARAMETER)
    modules: Counter = Counter()
    for name, _, _, kind, count in rows:
        if kind == PARAMETER:
            modules[name.rsplit(".", 1)[0] if "." in name else name] += count
    heaviest = sorted(modules.items(), key=lambda item: (-item[1], item[0]))[:top]
    dtypes = Counter(row[2] for row in rows)

    figures = {"format": content["format"], "parameters": total, "buffers": buffers,
               "tensors": len(rows),
               "dtypes": ", ".join(f"{d} ({n})" for d, n in dtypes.most_common()) or None}
    figures.update(content.get("figures", {}))
    figures.update({"size_bytes": file_size(path), "file": str(path.resolve())})
    tables = []
    if "inputs" in content:
        tables.append(ReportTable("Inputs", ["name", "type", "shape"], content["inputs"]))
    if "outputs" in content:
        tables.append(ReportTable("Outputs", ["name", "type", "shape"], content["outputs"]))
    plots = []
    if content.get("operators"):
        histogram = sorted(content["operators"].items(), key=lambda item: (-item[1], item[0]))
        tables.append(ReportTable("Operators", ["op type", "count"], [list(i) for i in histogram]))
        plots.append(ReportPlot("Operators", [op for op, _ in histogram],
                                [{"name": "count", "values": [float(n) for _, n in histogram]}],
                                kind="bar", y_label="nodes"))
    tables.append(ReportTable("Tensors", ["name", "shape", "dtype", "kind", "elements"], rows))
    tables.append(ReportTable("Layers with most parameters", ["layer", "params"],
                              [list(item) for item in heaviest]))
    context.progress(1.0)
    return ToolReport(tool=SPEC.name, title=f"Inspect {path.name}", figures=figures,
                      tables=tables, plots=plots, warnings=content.get("warnings", []))


def _zip_names(path: Path) -> list[str]:
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.namelist()
    except (zipfile.BadZipFile, OSError):
        return []


def _read_state_dict(path: Path) -> dict:
    """Tensors of a state_dict or a checkpoint, loaded without running code from the file."""
    import pickle

    import torch  # heavy: only for PyTorch files

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        if "weights only" in str(exc).lower() or "weights_only" in str(exc):
            raise ModelToolError(
                f"{path} holds pickled Python objects (a whole model?), not just tensors; "
                "Workbench does not unpickle them because that runs code from the file. Save "
                "model.state_dict() instead, or export the model to ONNX") from None
        raise ModelToolError(f"{path} is not a PyTorch file ({first_line(exc)}); it may be "
                             "truncated: save it again") from None
    except Exception as exc:
        raise ModelToolError(f"{path} is not a PyTorch file ({first_line(exc)[:200]}); it may "
                             "be truncated or of another kind: save it again") from None
    tensors, kind, other_keys = _tensors_of(state, torch)
    if not tensors:
        raise ModelToolError(f"{path} holds no tensors; save the weights with "
                             "torch.save(model.state_dict(), path)")
    figures = {"checkpoint_keys": ", ".join(other_keys)} if other_keys else {}
    return {"format": kind, "tensors": tensors, "figures": figures}


STATE_KEYS = ("model", "state_dict", "model_state_dict", "model_state", "net", "weights")
PARAMETER, BUFFER = "parameter", "buffer"
# The buffers PyTorch's own layers keep in a state_dict (batch norms' running statistics, and
# the masks torch.nn.utils.prune adds): not learned, so not parameters.
BUFFER_NAMES = ("running_mean", "running_var", "num_batches_tracked")
BUFFER_SUFFIXES = ("_mask",)


def tensor_kind(name: str, floating: bool) -> str:
    """Whether a state_dict entry is a parameter or a buffer, told from its name and type (a
    state_dict does not say): an integer tensor can never be learned."""
    last = name.rsplit(".", 1)[-1]
    if not floating or last in BUFFER_NAMES or last.endswith(BUFFER_SUFFIXES):
        return BUFFER
    return PARAMETER


def _tensors_of(state: Any, torch: Any) -> tuple[list, str, list[str]]:
    """(name, shape, dtype, kind) of every tensor; the kind of file; a checkpoint's other
    keys."""
    def flatten(value: Any, prefix: str, found: list) -> None:
        if isinstance(value, torch.Tensor):
            name = prefix or "tensor"
            floating = value.is_floating_point() or value.is_complex()
            found.append((name, list(value.shape), str(value.dtype).removeprefix("torch."),
                          tensor_kind(name, floating)))
        elif isinstance(value, dict):
            for key, item in value.items():
                flatten(item, f"{prefix}.{key}" if prefix else str(key), found)
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                flatten(item, f"{prefix}.{i}" if prefix else str(i), found)

    if isinstance(state, dict):
        if state and all(isinstance(v, torch.Tensor) for v in state.values()):
            found: list = []
            flatten(state, "", found)
            return found, "PyTorch state_dict", []
        for key in STATE_KEYS:
            if isinstance(state.get(key), dict):
                found = []
                flatten(state[key], "", found)
                if found:
                    return found, f"PyTorch checkpoint ({key})", [str(k) for k in state if k != key]
    found = []
    flatten(state, "", found)
    return found, "PyTorch tensors", []


def _read_torchscript(path: Path) -> dict:
    import torch

    try:
        module = torch.jit.load(str(path), map_location="cpu")
    except Exception as exc:
        raise ModelToolError(f"{path} is not a loadable TorchScript archive "
                             f"({first_line(exc)[:200]}); save it again with torch.jit.save") from None
    parameter_names = {name for name, _ in module.named_parameters()}
    tensors = [(name, list(t.shape), str(t.dtype).removeprefix("torch."),
                PARAMETER if name in parameter_names else BUFFER)
               for name, t in module.state_dict().items()]
    inputs, outputs, operators = [], [], Counter()
    try:
        graph = module.inlined_graph
        for value in list(graph.inputs())[1:]:
            inputs.append([value.debugName().split(".")[0], str(value.type()), "?"])
        for value in graph.outputs():
            outputs.append([value.debugName().split(".")[0], str(value.type()), "?"])
        for node in graph.nodes():
            if not node.kind().startswith("prim::"):
                operators[node.kind()] += 1
    except Exception as exc:
        return {"format": "TorchScript", "tensors": tensors,
                "warnings": [f"the graph could not be read ({first_line(exc)[:200]})"]}
    return {"format": "TorchScript", "tensors": tensors, "inputs": inputs, "outputs": outputs,
            "operators": dict(operators), "figures": {"nodes": sum(operators.values())}}


# torch._export.serde.schema.ScalarType, which the archive's JSON uses for dtypes.
_SCALAR_TYPES = {1: "uint8", 2: "int8", 3: "int16", 4: "int32", 5: "int64", 6: "float16",
                 7: "float32", 8: "float64", 9: "complex32", 10: "complex64", 11: "complex128",
                 12: "bool", 13: "bfloat16", 28: "uint16", 29: "float8_e4m3fn", 30: "float8_e5m2",
                 34: "uint32", 35: "uint64"}


def _read_exported_program(path: Path, names: list[str]) -> dict:
    """What a torch.export archive's JSON says: inputs, outputs, operators, weights. Nothing is
    unpickled, so this is safe for a file of unknown origin, and needs no torch."""
    models = sorted(n for n in names if "/models/" in f"/{n}" and n.endswith(".json"))
    if not models:
        raise ModelToolError(f"{path} holds no exported program (no models/*.json); it may be an "
                             "AOTInductor package or of an unknown version: save it with "
                             "torch.export.save")
    try:
        with zipfile.ZipFile(path) as archive:
            program = json.loads(archive.read(models[0]))
            model_name = models[0].rsplit("/", 1)[-1].removesuffix(".json")
            weights_config = [n for n in names
                              if n.endswith(f"data/weights/{model_name}_weights_config.json")]
            weights = json.loads(archive.read(weights_config[0]))["config"] if weights_config else {}
            constants_config = [n for n in names
                                if n.endswith(f"data/constants/{model_name}_constants_config.json")]
            constants = json.loads(archive.read(constants_config[0]))["config"] if constants_config else {}
        graph = program["graph_module"]["graph"]
        signature = program["graph_module"]["signature"]
        values = graph.get("tensor_values", {})
        parameter_names = {spec["parameter"].get("parameter_name")
                           for spec in signature.get("input_specs", []) if "parameter" in spec}
        tensors = []
        for name, entry in list(weights.items()) + list(constants.items()):
            meta = entry.get("tensor_meta") or {}
            tensors.append((name, _sizes(meta.get("sizes")), _SCALAR_TYPES.get(meta.get("dtype"), "?"),
                            PARAMETER if name in parameter_names else BUFFER))

        def described(spec_arg: dict) -> list | None:
            tensor_name = (spec_arg.get("as_tensor") or {}).get("name")
            if tensor_name is None:
                return None
            meta = values.get(tensor_name, {})
            return [tensor_name, _SCALAR_TYPES.get(meta.get("dtype"), "?"),
                    shape_text(_sizes(meta.get("sizes")))]

        inputs = [row for spec in signature.get("input_specs", []) if "user_input" in spec
                  for row in [described(spec["user_input"]["arg"])] if row]
        outputs = [row for spec in signature.get("output_specs", []) if "user_output" in spec
                   for row in [described(spec["user_output"]["arg"])] if row]
        operators = Counter(_op_name(node.get("target", "?")) for node in graph.get("nodes", []))
    except (KeyError, TypeError, ValueError, IndexError, zipfile.BadZipFile) as exc:
        raise ModelToolError(f"{path} is a torch.export archive of a layout this version cannot "
                             f"read ({type(exc).__name__}: {exc}); export the model to ONNX to "
                             "inspect it") from None
    figures = {"nodes": sum(operators.values()),
               "torch_version": program.get("torch_version") or None}
    return {"format": "torch.export program", "tensors": tensors, "inputs": inputs,
            "outputs": outputs, "operators": dict(operators), "figures": figures}


def _sizes(sizes: list | None) -> list | None:
    if sizes is None:
        return None
    dims = []
    for size in sizes:
        if "as_int" in size:
            dims.append(int(size["as_int"]))
        else:
            dims.append((size.get("as_expr") or {}).get("expr_str") or None)
    return dims


def _op_name(target: str) -> str:
    """``torch.ops.aten.conv2d.default`` -> ``aten.conv2d``."""
    if target.startswith("torch.ops."):
        parts = target.removeprefix("torch.ops.").split(".")
        return ".".join(parts[:2])
    return target


# ---------------------------------------------------------------------------------------------


def _elements(dims: Any) -> int:
    if dims is None:
        return 0
    count = 1
    for d in dims:
        if not isinstance(d, int):
            return 0
        count *= d
    return count

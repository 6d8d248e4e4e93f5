"""Runs INSIDE the console's kernel: a JSON summary of the user's namespace for the Variables view.

The console sends this file's source to the kernel once (it may be another Python than
Workbench's, without Workbench installed), as a module kept in ``sys.modules`` so the user's
namespace gains no names; after each execution it asks for ``summary(namespace)`` through the
execute request's ``user_expressions``. Standard library only; NumPy and torch are looked at only
when the user's code has imported them. The work is bounded: a few thousand entries, the first
items of each container, and min / max over a sample of very large arrays.
"""

import json
import math
import re
import reprlib
import sys
import types

MAX_DEPTH = 3
"""Levels of containers the summary opens (a variable's items, their items, theirs)."""
MAX_CHILDREN = 50
MAX_NODES = 3000
EXACT_STATS_LIMIT = 2_000_000
"""Above this many elements min / max are computed over an evenly spaced sample of about this many."""
VALUE_CHARS = 120
SMALL_ARRAY = 10
"""Arrays up to this many elements show their values in a container's preview."""
HIDDEN_NAMES = {"In", "Out", "exit", "quit", "get_ipython"}
_DEFAULT_REPR = re.compile(r"<([\w.]+\.)?(\w+) object at 0x[0-9a-fA-F]+>")



class _ShortRepr(reprlib.Repr):
    def repr_instance(self, x, level):
        try:
            text = repr(x)
        except Exception:
            return "<%s instance at %#x>" % (type(x).__name__, id(x))
        # "<torch.utils.data.dataset.TensorDataset object at 0x7f...>" says no more than
        # "<TensorDataset>"; shortened before the cut, so a long repr keeps what it says.
        text = _DEFAULT_REPR.sub(r"<\2>", text)
        return text if len(text) <= self.maxother else text[: self.maxother - 1] + "\u2026"

    def repr_Tensor(self, x, level):  # noqa: N802 (reprlib's name for the type Tensor)
        # In a container's preview a big tensor is its shape: torch takes milliseconds to format
        # one only to be cut, and the item's own row has its summary.
        try:
            if x.numel() > SMALL_ARRAY:
                return "tensor(shape=%s, %s)" % (_shape_text(list(x.shape)), str(x.dtype).replace("torch.", ""))
        except Exception:
            pass
        return self.repr_instance(x, level)

    repr_Parameter = repr_Tensor

    def repr_ndarray(self, x, level):
        try:
            if x.size > SMALL_ARRAY:
                return "array(shape=%s, %s)" % (_shape_text(list(x.shape)), x.dtype)
        except Exception:
            pass
        return self.repr_instance(x, level)


_repr = _ShortRepr()
_repr.maxstring = VALUE_CHARS
_repr.maxother = VALUE_CHARS
_repr.maxlist = _repr.maxtuple = _repr.maxset = _repr.maxfrozenset = _repr.maxdict = 8


def summary(namespace):
    """The user's variables as a JSON string: ``{"variables": [node, ...], "truncated": bool}``."""
    budget = [MAX_NODES]
    variables = []
    for name in sorted(namespace, key=lambda n: (n.lower(), n)):
        if not isinstance(name, str) or name.startswith("_") or name in HIDDEN_NAMES:
            continue
        value = namespace[name]
        if _is_code(value):
            continue
        if budget[0] <= 0:
            return json.dumps({"variables": variables, "truncated": True})
        variables.append(describe(name, value, 0, budget))
    return json.dumps({"variables": variables, "truncated": False})


def _is_code(value):
    """Modules, functions and classes: what the user imported or defined, not data."""
    return isinstance(value, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
                              types.MethodType, type))


def describe(name, value, depth, budget):
    budget[0] -= 1
    node = {"name": name, "type": _type_name(value)}
    try:
        if _describe_array(node, value):
            return node
        items = _items(value)
        if items is not None:
            node["size"] = _count(len(value), "item")
            node["value"] = _preview(value)
            if depth < MAX_DEPTH:
                children = []
                for child_name, child in items:
                    if len(children) >= MAX_CHILDREN or budget[0] <= 0:
                        break
                    children.append(describe(child_name, child, depth + 1, budget))
                node["children"] = children
                node["more"] = len(value) - len(children)
            else:
                node["children"] = []
                node["more"] = len(value)
            return node
        fields = _fields(value)
        if fields is not None:
            node["value"] = _preview(value)
            if depth < MAX_DEPTH:
                node["children"] = [describe(field, getattr(value, field, None), depth + 1, budget)
                                    for field in fields[:MAX_CHILDREN] if budget[0] > 0]
                node["more"] = len(fields) - len(node["children"])
            return node
        attributes = _attributes(value)
        if attributes:
            # An object of the user's or a library's (a TensorDataset's tensors, a loader's
            # settings): its public attributes, as a debugger shows them, so shapes are in reach.
            _add_length(node, value)
            node["value"] = _preview(value)
            if depth < MAX_DEPTH:
                node["children"] = [describe(attribute, child, depth + 1, budget)
                                    for attribute, child in attributes[:MAX_CHILDREN] if budget[0] > 0]
            else:
                node["children"] = []
            node["more"] = len(attributes) - len(node["children"])
            return node
        if isinstance(value, str):
            node["size"] = _count(len(value), "char")
        elif isinstance(value, (bytes, bytearray)):
            node["size"] = _count(len(value), "byte")
        else:
            _add_length(node, value)
        node["value"] = _preview(value)
    except Exception as exc:  # a broken __repr__ or __len__ must not hide every other variable
        node["value"] = "<cannot show: %s>" % type(exc).__name__
    return node


def _type_name(value):
    kind = type(value)
    module = getattr(kind, "__module__", "")
    if module in ("builtins", "__main__") or not module:
        return kind.__name__
    top = module.split(".")[0]
    return "%s.%s" % ({"numpy": "np", "torch": "torch", "pandas": "pd"}.get(top, top), kind.__name__)


def _count(number, unit):
    return "%d %s%s" % (number, unit, "" if number == 1 else "s")


def _preview(value):
    text = " ".join(_repr.repr(value).split())
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "\u2026"


def _items(value):
    """(name, item) pairs of a list, tuple, set or dict (subclasses too), else None."""
    if isinstance(value, dict):
        pairs = []
        for key in value:
            if len(pairs) >= MAX_CHILDREN:
                break
            pairs.append((_preview(key), value[key]))
        return pairs
    if isinstance(value, (list, tuple)):
        return [(str(index), value[index]) for index in range(min(len(value), MAX_CHILDREN))]
    if isinstance(value, (set, frozenset)):
        pairs = []
        for item in value:
            if len(pairs) >= MAX_CHILDREN:
                break
            pairs.append(("", item))
        return pairs
    return None


def _fields(value):
    """The fields of a dataclass instance or a namedtuple-like simple namespace, else None."""
    fields = getattr(type(value), "__dataclass_fields__", None)
    if isinstance(fields, dict):
        return list(fields)
    if isinstance(value, types.SimpleNamespace):
        return sorted(vars(value))
    return None


def _add_length(node, value):
    """Datasets, data loaders, models' module lists: their length is what users look for."""
    if hasattr(type(value), "__len__"):
        try:
            node["size"] = _count(len(value), "item")
        except Exception:  # an object that cannot say its length still has a value to show
            pass


def _attributes(value):
    """(name, value) pairs of an instance's public data attributes, in the order they were set;
    empty for values without a ``__dict__`` (numbers, strings, slotted objects)."""
    try:
        attributes = vars(value)
    except Exception:  # no __dict__ (TypeError), or a proxy whose __dict__ raises
        return []
    if not isinstance(attributes, dict):
        return []
    return [(name, child) for name, child in list(attributes.items())
            if isinstance(name, str) and not name.startswith("_") and not _is_code(child)]


def _describe_array(node, value):
    """Fill ``node`` for a NumPy array or scalar, a torch tensor, or anything else with a shape
    and a dtype (pandas, JAX...); False when ``value`` is none of them."""
    numpy = sys.modules.get("numpy")
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        node["shape"] = list(value.shape)
        node["dtype"] = str(value.dtype).replace("torch.", "")
        node["device"] = str(value.device)
        node["size"] = _shape_text(node["shape"])
        if value.dim() == 0:
            node["value"] = _preview(_scalar(value.detach().cpu().item()))
        _tensor_stats(node, value)
        return True
    if numpy is not None and isinstance(value, numpy.ndarray):
        node["shape"] = list(value.shape)
        node["dtype"] = str(value.dtype)
        node["size"] = _shape_text(node["shape"])
        _array_stats(node, value, numpy)
        if value.size <= SMALL_ARRAY:
            node["value"] = _preview(value.tolist())
        return True
    if numpy is not None and isinstance(value, numpy.generic):
        node["dtype"] = str(value.dtype)
        node["value"] = _preview(value.item() if hasattr(value, "item") else value)
        return True
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape) and not isinstance(value, type):
        node["shape"] = list(shape)
        node["size"] = _shape_text(shape)
        dtype = getattr(value, "dtype", None)
        if dtype is not None:
            node["dtype"] = str(dtype)
        node["value"] = _preview(value).split("\n")[0]
        return True
    return False


def _shape_text(shape):
    return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


def _array_stats(node, array, numpy):
    if array.size == 0 or not (numpy.issubdtype(array.dtype, numpy.number) or array.dtype == bool):
        return
    if numpy.issubdtype(array.dtype, numpy.complexfloating):
        return
    flat = array.reshape(-1) if array.flags.c_contiguous else array.ravel()
    if flat.size > EXACT_STATS_LIMIT:
        flat = flat[:: int(math.ceil(flat.size / EXACT_STATS_LIMIT))]
        node["approximate"] = True
    node["min"] = _scalar(flat.min().item())
    node["max"] = _scalar(flat.max().item())


def _tensor_stats(node, tensor):
    if tensor.numel() == 0 or tensor.is_complex() or tensor.is_sparse or tensor.device.type == "meta":
        return
    try:
        flat = tensor.detach().reshape(-1)
        if flat.numel() > EXACT_STATS_LIMIT:
            flat = flat[:: int(math.ceil(flat.numel() / EXACT_STATS_LIMIT))]
            node["approximate"] = True
        node["min"] = _scalar(flat.min().item())
        node["max"] = _scalar(flat.max().item())
    except Exception:  # quantized, nested or otherwise special tensors have no plain min / max
        node.pop("approximate", None)


def _scalar(number):
    """A JSON-able number (bools as they are; NaN and infinities as strings JSON can carry)."""
    if isinstance(number, float) and (math.isnan(number) or math.isinf(number)):
        return str(number)
    return number

"""Summaries of arrays and tensors in the debugged program: shape, dtype, device, min, max and
mean, worked out there by an ``evaluate`` in the stopped frame, and their values on demand.

Only DAP is used: the first summary of a session defines two helpers in the program's
``builtins`` (``exec`` of ``HELPER_SOURCE`` in a namespace of its own, so no frame gains a
name), and each summary after that is one ``evaluate`` of a call to them. A program without
NumPy or PyTorch needs neither: the helpers import nothing until a value asks for it.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass

SUMMARY_HELPER = "_workbench_debug_summaries"
VALUES_HELPER = "_workbench_debug_values"

# The DAP ``type`` of the values worth a summary (the class's name, as debugpy gives it).
ARRAY_TYPES = frozenset({"ndarray", "Tensor", "Parameter", "memmap", "matrix", "MaskedArray",
                         "UninitializedParameter", "Buffer"})

# Statistics of more elements than this would stall the program being looked at.
STATS_LIMIT = 50_000_000
VALUES_THRESHOLD = 2_000

HELPER_SOURCE = f'''
import builtins, json

def _summary(value):
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is None or dtype is None:
        return None
    out = {{"shape": [int(n) for n in shape], "dtype": str(dtype).replace("torch.", "")}}
    module = type(value).__module__ or ""
    size = 1
    for n in out["shape"]:
        size *= n
    out["size"] = size
    if module.startswith("torch"):
        out["device"] = str(value.device)
        if getattr(value, "requires_grad", False):
            out["requires_grad"] = True
        data = value.detach()
        if size and size <= {STATS_LIMIT} and not data.is_complex() and data.dtype != __import__("torch").bool:
            if data.is_floating_point():
                wide = data.double()
            else:
                wide = data.long()
            out["min"], out["max"] = wide.min().item(), wide.max().item()
            out["mean"] = wide.double().mean().item()
    else:
        out["device"] = "cpu"
        kind = getattr(dtype, "kind", "")
        if size and size <= {STATS_LIMIT} and kind in "iufb":
            import numpy
            wide = numpy.asarray(value, dtype="float64") if kind == "b" else value
            out["min"], out["max"] = float(numpy.min(wide)), float(numpy.max(wide))
            out["mean"] = float(numpy.mean(wide, dtype="float64"))
    return out

def {SUMMARY_HELPER}(expressions, globals_, locals_):
    answers = []
    for expression in expressions:
        try:
            answers.append(_summary(eval(expression, globals_, locals_)))
        except Exception as exc:
            answers.append({{"error": type(exc).__name__ + ": " + str(exc)}})
    return json.dumps(answers, default=str)

def {VALUES_HELPER}(value, threshold={VALUES_THRESHOLD}):
    if type(value).__module__.startswith("torch"):
        value = value.detach().cpu()
        if value.dtype in (__import__("torch").bfloat16,):
            value = value.float()
        value = value.numpy()
    import numpy
    return numpy.array2string(numpy.asarray(value), threshold=threshold, max_line_width=120)

builtins.{SUMMARY_HELPER} = {SUMMARY_HELPER}
builtins.{VALUES_HELPER} = {VALUES_HELPER}
'''


def install_expression() -> str:
    """The expression that defines the helpers in the program (evaluated once a session)."""
    return f"exec({HELPER_SOURCE!r}, {{}})"


def summaries_expression(expressions: list[str]) -> str:
    """The expression whose value is the JSON list of summaries of ``expressions``, each
    evaluated in the frame it is evaluated in."""
    return f"{SUMMARY_HELPER}({list(expressions)!r}, globals(), locals())"


def values_expression(expression: str) -> str:
    """The expression whose value is the text of all of an array's or tensor's values (up to
    ``VALUES_THRESHOLD`` of them, then elided)."""
    return f"{VALUES_HELPER}({expression})"


@dataclass(frozen=True)
class ArraySummary:
    """An array or tensor at a glance; ``min``, ``max`` and ``mean`` are None for an empty,
    complex, boolean-tensor or too large value."""

    shape: tuple[int, ...]
    dtype: str
    device: str = "cpu"
    size: int = 0
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    requires_grad: bool = False

    def text(self) -> str:
        """``float32 [3, 4] cpu  min 0  max 11  mean 5.5``; ``float32 [] cpu  = 2.5`` for one value."""
        shape = "[" + ", ".join(str(n) for n in self.shape) + "]"
        parts = [f"{self.dtype} {shape} {self.device}"]
        if self.size == 1 and self.min is not None:
            parts.append(f"= {_number(self.min)}")  # one value: min, max and mean say it thrice
        elif self.min is not None:
            parts.append(f"min {_number(self.min)}  max {_number(self.max)}  mean {_number(self.mean)}")
        if self.requires_grad:
            parts.append("requires grad")
        return "  ".join(parts)


def parse_summaries(result: str, count: int) -> list[ArraySummary | str | None]:
    """The helper's answer, one entry per expression: a summary, an error's text, or None for
    a value with no shape and dtype. Raises ValueError when ``result`` is not its answer."""
    text = result
    try:
        literal = ast.literal_eval(result)
        if isinstance(literal, str):
            text = literal
    except (ValueError, SyntaxError):
        pass
    answers = json.loads(text)
    if not isinstance(answers, list) or len(answers) != count:
        raise ValueError("not an answer of the summary helper")
    return [_summary_from_json(answer) for answer in answers]


def parse_values(result: str) -> str:
    """The text of the values (the evaluate's result is the repr of a string)."""
    try:
        literal = ast.literal_eval(result)
    except (ValueError, SyntaxError):
        return result
    return literal if isinstance(literal, str) else result


def _summary_from_json(answer: object) -> ArraySummary | str | None:
    if answer is None:
        return None
    if not isinstance(answer, dict):
        return "not a summary"
    if "error" in answer:
        return str(answer["error"])

    def number(key: str) -> float | None:
        value = answer.get(key)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    return ArraySummary(shape=tuple(int(n) for n in answer.get("shape", [])), dtype=str(answer.get("dtype", "")),
                        device=str(answer.get("device", "cpu")), size=int(answer.get("size", 0)),
                        min=number("min"), max=number("max"), mean=number("mean"),
                        requires_grad=bool(answer.get("requires_grad", False)))


def _number(value: float | None) -> str:
    if value is None:
        return "?"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6g}"

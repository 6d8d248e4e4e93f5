"""The console's namespace as the Variables view shows it: the code that teaches a kernel to
summarise its namespace, the expression that asks for the summary, and the parsed answer.

The summary is computed by ``namespace_probe`` inside the kernel (see there); this side only
reads its JSON back into ``Variable`` objects.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

PROBE_MODULE = "_workbench_namespace_probe"

SUMMARY_EXPRESSION = f"__import__({PROBE_MODULE!r}).summary(get_ipython().user_ns)"
"""Evaluated in the kernel (as a user expression, after each execution) to get the summary."""


@dataclass
class Variable:
    """One entry of the Variables view: a variable, or an item of a container."""

    name: str
    type: str
    size: str = ""
    """The shape of an array ("(1797, 1, 8, 8)"), the length of a container ("3 items")."""
    value: str = ""
    shape: list[int] | None = None
    dtype: str = ""
    device: str = ""
    min: float | int | str | None = None
    max: float | int | str | None = None
    approximate: bool = False
    """min / max come from a sample of a very large array."""
    children: list["Variable"] | None = None
    """The items shown when expanded (None: not a container)."""
    more: int = 0
    """Items of the container beyond ``children``."""

    @property
    def summary(self) -> str:
        """What the Value column shows: dtype, device and range for arrays and tensors, else the
        value's short text."""
        if self.shape is None:
            return self.value
        parts = [self.dtype] if self.dtype else []
        if self.device and self.device != "cpu":
            parts.append(self.device)
        if self.min is not None:
            about = "≈" if self.approximate else ""
            parts.append(f"min {about}{_number(self.min)}   max {about}{_number(self.max)}")
        elif self.value:
            parts.append(self.value)
        return "   ".join(parts)


def probe_setup_code() -> str:
    """Code that installs the probe as a module in the kernel, leaving no name in the user's
    namespace; run it silently once per kernel."""
    source = (Path(__file__).with_name("namespace_probe.py")).read_text(encoding="utf-8")
    return ("def _workbench_install_probe(source):\n"
            "    import sys, types\n"
            f"    module = types.ModuleType({PROBE_MODULE!r})\n"
            "    exec(compile(source, '<workbench namespace probe>', 'exec'), module.__dict__)\n"
            f"    sys.modules[{PROBE_MODULE!r}] = module\n"
            f"_workbench_install_probe({source!r})\n"
            "del _workbench_install_probe\n")


def parse_summary_reply(reply: dict) -> tuple[list[Variable], bool]:
    """The variables from a user-expression reply ({"status", "data": {"text/plain": ...}}), and
    whether the list was cut short. Raises ValueError when the kernel reported an error."""
    if reply.get("status") != "ok":
        raise ValueError(f"{reply.get('ename', 'Error')}: {reply.get('evalue', '')}")
    text = reply.get("data", {}).get("text/plain", "")
    return parse_summary(ast.literal_eval(text))


def parse_summary(payload: str) -> tuple[list[Variable], bool]:
    """The variables of a ``namespace_probe.summary`` JSON string, and whether it was cut short."""
    data = json.loads(payload)
    return [_variable(node) for node in data.get("variables", [])], bool(data.get("truncated"))


def _variable(node: dict) -> Variable:
    children = node.get("children")
    return Variable(
        name=str(node.get("name", "")), type=str(node.get("type", "")), size=str(node.get("size", "")),
        value=str(node.get("value", "")), shape=node.get("shape"), dtype=str(node.get("dtype", "")),
        device=str(node.get("device", "")), min=node.get("min"), max=node.get("max"),
        approximate=bool(node.get("approximate")),
        children=[_variable(child) for child in children] if children is not None else None,
        more=int(node.get("more", 0) or 0),
    )


def _number(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def find(variables: list[Variable], name: str) -> Variable | None:
    """The top-level variable called ``name``."""
    return next((v for v in variables if v.name == name), None)

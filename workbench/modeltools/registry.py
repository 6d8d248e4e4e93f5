"""Every model tool: the built-in ones and those plugins add (see workbench.extensions)."""

from __future__ import annotations

import difflib
import importlib

from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.params import ToolSpec

# "module:attribute" of each built-in tool's declaration. Declarations are light: a tool's
# module imports torch or onnxruntime only inside its run function.
BUILT_IN: tuple[str, ...] = (
    "workbench.modeltools.convert:SPEC",
    "workbench.modeltools.quantize:SPEC",
    "workbench.modeltools.sparsify:SPEC",
    "workbench.modeltools.inspect:SPEC",
    "workbench.modeltools.compare:SPEC",
)


def all_tools(include_plugins: bool = True) -> dict[str, ToolSpec]:
    """The tools by name, built-in first, in menu order."""
    tools: dict[str, ToolSpec] = {}
    for entry in BUILT_IN:
        module_name, _, attribute = entry.partition(":")
        spec = getattr(importlib.import_module(module_name), attribute)
        tools[spec.name] = spec
    if include_plugins:
        from workbench.extensions import load_extensions

        for spec in load_extensions().model_tools:
            tools.setdefault(spec.name, spec)
    return tools


def get_tool(name: str) -> ToolSpec:
    tools = all_tools()
    if name in tools:
        return tools[name]
    close = difflib.get_close_matches(name, sorted(tools), n=1)
    hint = f" Did you mean {close[0]}?" if close else ""
    raise ModelToolError(f"There is no model tool {name!r} (tools: {', '.join(tools)}).{hint}")


def tools_for(path_suffix: str) -> list[ToolSpec]:
    """The tools a right-click on a file with this suffix offers."""
    suffix = path_suffix.lower()
    return [spec for spec in all_tools().values() if suffix in spec.applies_to]

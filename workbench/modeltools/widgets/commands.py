"""The model tools' commands in a project window: one per tool ("Convert…", "Quantize…", …) in
the Explorer's right-click menu of the files it applies to and in the palette, "Compare
Selected…", and ``modeltools.openTool`` for scripts. Each opens a tool window: the window asks
the hub (``hub.open_tool``), which starts the tool window's own process; without a hub the
window's process starts it itself.

Every command takes keyword arguments, so a test or a script runs it without a menu
(``commands.execute("modeltools.openTool", tool="inspect", paths=[...])``).
"""

from __future__ import annotations

import importlib
import logging
from pathlib import Path
from typing import Callable

from workbench.ipc.messages import HUB_OPEN_TOOL
from workbench.modeltools.model_index import starts_like_a_model
from workbench.modeltools.params import ToolSpec

log = logging.getLogger(__name__)

CATEGORY = "Model Tools"
COMPARE_TOOL = "compare"
INSPECT_TOOL = "inspect"


def available_tools() -> dict[str, ToolSpec]:
    """The tools by name, in menu order. A tool whose module cannot be imported is left out
    (and logged) rather than taking the others with it."""
    from workbench.modeltools import registry

    try:
        return registry.all_tools()
    except Exception:  # a broken tool module: load the rest one by one
        log.exception("Loading the model tools failed; loading them one by one")
    tools: dict[str, ToolSpec] = {}
    for entry in registry.BUILT_IN:
        module_name, _, attribute = entry.partition(":")
        try:
            spec = getattr(importlib.import_module(module_name), attribute)
        except Exception:
            log.exception("The model tool %s could not load", entry)
            continue
        tools[spec.name] = spec
    try:
        from workbench.extensions import load_extensions

        for spec in load_extensions().model_tools:
            tools.setdefault(spec.name, spec)
    except Exception:
        log.exception("The model tool plugins could not load")
    return tools


def prefill(spec: ToolSpec, paths: list[Path | str]) -> dict:
    """The values a tool window starts with for the chosen files: they go into the tool's first
    positional parameter (all of them for a list of paths, the first one otherwise)."""
    files = [str(Path(p)) for p in paths]
    for param in spec.params:
        if param.positional:
            if param.type == "paths":
                return {param.name: files}
            return {param.name: files[0]} if files else {}
    return {}


def applies(spec: ToolSpec, path: Path | str) -> bool:
    """Whether ``spec`` takes the file at ``path``: by its suffix, and for a suffix other files
    use too (``.ts``: TypeScript or TorchScript) by its first bytes, as the Models panel lists it."""
    path = Path(path)
    return path.suffix.lower() in spec.applies_to and starts_like_a_model(path)


class ToolOpener:
    """Opens tool windows for one project window."""

    def __init__(self, window, tools: dict[str, ToolSpec]):
        self.window = window
        self.tools = tools
        self.opened: list[dict] = []
        """What each ``hub.open_tool`` answered ({window_id, pid, ...}), newest last."""

    def open(self, tool: str, paths: list[Path | str] | None = None, values: dict | None = None,
             run: bool = False, on_opened: Callable[[dict], None] | None = None) -> dict:
        """Ask for a window of ``tool`` with ``paths`` in its model parameter and ``values``
        over that; returns the request's params. ``run`` starts the job at once."""
        spec = self.tools.get(tool)
        if spec is None:
            raise ValueError(f"There is no model tool {tool!r} (tools: {', '.join(self.tools)}).")
        params = {"tool": tool, "values": {**prefill(spec, list(paths or [])), **(values or {})},
                  "project": str(self.window.project.root)}
        if run:
            params["run"] = True

        def opened(result) -> None:
            self.opened.append(dict(result or {}))
            if on_opened is not None:
                on_opened(dict(result or {}))

        def failed(error) -> None:
            message = getattr(error, "message", None) or str(error)
            self.window.show_error(f"Cannot open the {spec.title} window: {message}")

        self.window.request_hub(HUB_OPEN_TOOL, params, opened, failed)
        return params


class ModelToolCommands:
    """Declares the commands of one window."""

    def __init__(self, window, opener: ToolOpener, panel=None):
        self.window = window
        self.opener = opener
        self.panel = panel

    def register(self) -> list[str]:
        add = self.window.commands.add
        ids = []
        for name, spec in self.opener.tools.items():
            command_id = f"modeltools.{name}"
            add(command_id, f"{spec.title}…", lambda path=None, paths=None, tool=name: self.open(tool, path, paths),
                category=CATEGORY, context=("explorer",),
                applies_to=lambda path, spec=spec: Path(path).is_file() and applies(spec, path))
            ids.append(command_id)
        if COMPARE_TOOL in self.opener.tools:
            add("modeltools.compareSelected", "Compare Selected…", self.compare_selected, category=CATEGORY,
                enabled=lambda: self.panel is not None and len(self.panel.selected_paths()) >= 2)
            ids.append("modeltools.compareSelected")
        add("modeltools.openTool", "Open Tool Window", self.open_tool, category=CATEGORY, in_palette=False)
        ids.append("modeltools.openTool")
        if self.panel is not None:
            add("modeltools.refreshModels", "Refresh Models", self.panel.refresh, category=CATEGORY)
            add("modeltools.describeModels", "Describe Models", self.panel.describe, category=CATEGORY,
                in_palette=False)
            ids += ["modeltools.refreshModels", "modeltools.describeModels"]
        return ids

    def open(self, tool: str, path: Path | str | None = None, paths: list | None = None) -> dict | None:
        """A tool's command: on ``path`` (the Explorer), ``paths``, else the models selected in
        the Models panel."""
        chosen = [Path(path)] if path is not None else [Path(p) for p in (paths or [])]
        if not chosen and self.panel is not None:
            chosen = self.panel.selected_paths()
        spec = self.opener.tools[tool]
        if not chosen and any(p.positional and p.required for p in spec.params):
            self.window.show_error(f"Select a model in the Models panel or the Explorer first, then choose "
                                   f"{spec.title}….")
            return None
        return self.opener.open(tool, chosen)

    def compare_selected(self, paths: list | None = None) -> dict | None:
        chosen = [Path(p) for p in paths] if paths else (self.panel.selected_paths() if self.panel else [])
        if len(chosen) < 2:
            self.window.show_error("Select two or more models to compare.")
            return None
        return self.opener.open(COMPARE_TOOL, chosen)

    def open_tool(self, tool: str, paths: list | None = None, values: dict | None = None,
                  run: bool = False) -> dict:
        """Open ``tool``'s window on ``paths`` with ``values`` (for scripts and tests)."""
        return self.opener.open(tool, [Path(p) for p in paths or []], values, run)

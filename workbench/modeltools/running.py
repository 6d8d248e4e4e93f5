"""Running one tool invocation in this process: resolve the values, find the project, call the
tool's run function, and record a model it made from a model version's file under that version
(workbench.modeltools.model_versions). The CLI's and a tool window's job process call this."""

from __future__ import annotations

from pathlib import Path

from workbench.modeltools.context import EventSink, ToolContext
from workbench.modeltools.params import ToolInvocation
from workbench.modeltools.registry import get_tool
from workbench.modeltools.report import ToolReport


def project_of(invocation: ToolInvocation, values: dict) -> Path | None:
    """The invocation's project, else the project holding its first input file (None outside
    any project)."""
    if invocation.project:
        return Path(invocation.project).resolve()
    from workbench.modeltools.project_code import find_project_root

    spec = get_tool(invocation.tool)
    for param in spec.params:
        value = values.get(param.name)
        if param.positional and value:
            first = value[0] if isinstance(value, list) else value
            return find_project_root(Path(first).resolve().parent)
    return None


def run_tool(invocation: ToolInvocation, on_event: EventSink = lambda event: None,
             context: ToolContext | None = None) -> ToolReport:
    """Run the invocation and return its report; ModelToolError (with a message for the user)
    when it cannot. ``context`` lets a caller keep a handle to cancel from another thread."""
    spec = get_tool(invocation.tool)
    values = spec.resolve(invocation.values)
    if context is None:
        context = ToolContext()
    context.stages = spec.stages
    context.project = project_of(invocation, values)
    context.on_event = on_event
    from workbench.modeltools import model_versions

    for param in spec.params:
        if param.is_output and values.get(param.name):
            model_versions.refuse_replacing_a_version_file(values[param.name], context.project,
                                                           param.flag)
    report = spec.load_runner()(values, context)
    # Here, not in each tool: the CLI and the tool windows both come through this function.
    model_versions.record_variants(spec, values, report, context.project, context.log)
    return report

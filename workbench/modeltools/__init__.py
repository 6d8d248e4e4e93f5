"""Model tools: convert, quantize, sparsify, inspect and compare models, each declared once
(workbench.modeltools.params) and run the same way from the CLI, a tool window or a test.

Qt-free. Heavy libraries (torch, onnx, onnxruntime) are imported inside the tools' run
functions, so importing this package or listing the tools stays cheap.

The names below are the API a plugin builds its tools with (plugins/workbench-mnn does): how a
tool is declared and reports, where it writes, the project's data and code, the runtimes and
the measurements every tool compares with. Names are imported from their modules on first use
(PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.project.lazy_exports import lazy_exports

_WHERE = {
    # Declaring and running a tool
    "ModelToolError": "errors",
    "ToolCancelled": "errors",
    "Param": "params",
    "ToolInvocation": "params",
    "ToolSpec": "params",
    "ToolContext": "context",
    "all_tools": "registry",
    "get_tool": "registry",
    "run_tool": "running",
    # What a tool reports and writes
    "ReportPlot": "report",
    "ReportTable": "report",
    "ToolReport": "report",
    "atomic_output": "outputs",
    "check_output": "outputs",
    "default_output": "outputs",
    "file_size": "outputs",
    "captured_output": "library_output",
    # The project's samples and code
    "SPLITS": "data",
    "EvaluationData": "data",
    "from_project": "data",
    "load_npz": "data",
    "ProjectCode": "project_code",
    "find_project_root": "project_root",
    # Running models and comparing them
    "ModelSession": "runtimes",
    "open_model": "runtimes",
    "open_onnx": "runtimes",
    "accuracy": "measure",
    "agreement": "measure",
    "cosine_distance": "measure",
    "latency": "measure",
    "max_abs_diff": "measure",
}

__all__ = sorted(_WHERE)


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, globals())


if TYPE_CHECKING:
    from workbench.modeltools.context import ToolContext
    from workbench.modeltools.data import SPLITS, EvaluationData, from_project, load_npz
    from workbench.modeltools.errors import ModelToolError, ToolCancelled
    from workbench.modeltools.library_output import captured_output
    from workbench.modeltools.measure import accuracy, agreement, cosine_distance, latency, max_abs_diff
    from workbench.modeltools.outputs import atomic_output, check_output, default_output, file_size
    from workbench.modeltools.params import Param, ToolInvocation, ToolSpec
    from workbench.modeltools.project_code import ProjectCode
    from workbench.modeltools.project_root import find_project_root
    from workbench.modeltools.registry import all_tools, get_tool
    from workbench.modeltools.report import ReportPlot, ReportTable, ToolReport
    from workbench.modeltools.running import run_tool
    from workbench.modeltools.runtimes import ModelSession, open_model, open_onnx

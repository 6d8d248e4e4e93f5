"""Model tools: convert, quantize, sparsify, inspect and compare models, each declared once
(workbench.modeltools.params) and run the same way from the CLI, a tool window or a test.

Qt-free. Heavy libraries (torch, onnx, onnxruntime) are imported inside the tools' run
functions, so importing this package or listing the tools stays cheap.
"""

from workbench.modeltools.context import ToolContext
from workbench.modeltools.errors import ModelToolError, ToolCancelled
from workbench.modeltools.params import Param, ToolInvocation, ToolSpec
from workbench.modeltools.report import ReportPlot, ReportTable, ToolReport

__all__ = ["ModelToolError", "Param", "ReportPlot", "ReportTable", "ToolCancelled", "ToolContext",
           "ToolInvocation", "ToolReport", "ToolSpec"]

"""The console capability: an IPython console bound to a kernel that runs in the project's Python
(``[python] interpreter`` in ``workbench.toml``), in the project folder, with inline plots; the
Variables view of its namespace; and the editor's Run File / Run Selection / Run Cell commands.

The service modules here are Qt-free and load nothing heavy at import: jupyter_client is imported
inside ``start_kernel``. The dock and its widgets are in ``workbench.console.widgets``.
"""

from __future__ import annotations

from workbench.console.errors import ConsoleError
from workbench.console.interpreter import Interpreter, project_interpreter, resolve_interpreter
from workbench.console.kernel import Kernel, launch_kernel, launch_project_kernel, start_kernel
from workbench.console.namespace import SUMMARY_EXPRESSION, Variable, parse_summary, parse_summary_reply, probe_setup_code
from workbench.console.run_code import Cell, cell_at, code_of_selection, line_after_cell, run_file_code

__all__ = ["Cell", "ConsoleError", "Interpreter", "Kernel", "SUMMARY_EXPRESSION", "Variable", "cell_at",
           "code_of_selection", "line_after_cell", "parse_summary", "parse_summary_reply", "probe_setup_code",
           "project_interpreter", "resolve_interpreter", "run_file_code", "start_kernel", "launch_kernel", "launch_project_kernel"]

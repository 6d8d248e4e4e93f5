"""The debug capability: debugging programs through the Debug Adapter Protocol with debugpy.

Qt-free service modules (``dap_client`` speaks DAP over any byte stream; ``session`` drives one
program; ``breakpoints`` keeps a project's breakpoints; ``launches`` says what runs: a script,
the project's training run, or a program to attach to), and ``widgets`` for the window: the
Debug dock, breakpoints in the editor's gutter and the Run menu's commands. debugpy itself only
ever runs in child processes.

Names are imported from their modules on first use (PEP 562), so importing the package costs
nothing on a window's start-up path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.project.lazy_exports import lazy_exports

_WHERE = {
    "DebugError": "errors",
    "DapClient": "dap_client",
    "DebugSession": "session",
    "SessionListener": "session",
    "Breakpoint": "breakpoints",
    "BreakpointResult": "breakpoints",
    "DebugState": "breakpoints",
    "DebugStateStore": "breakpoints",
    "LaunchConfig": "launches",
    "AttachConfig": "launches",
    "attach_to_port": "launches",
    "script_launch": "launches",
    "training_launch": "launches",
    "StoppedEvent": "model",
    "StackFrame": "model",
    "Variable": "model",
    "SessionEnd": "model",
    "ArraySummary": "values",
    "DebugStop": "quick",
    "start_debug_session": "quick",
}

__all__ = sorted(_WHERE)


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, globals())


if TYPE_CHECKING:
    from workbench.debug.breakpoints import Breakpoint, BreakpointResult, DebugState, DebugStateStore
    from workbench.debug.dap_client import DapClient
    from workbench.debug.errors import DebugError
    from workbench.debug.launches import AttachConfig, LaunchConfig, attach_to_port, script_launch, training_launch
    from workbench.debug.model import SessionEnd, StackFrame, StoppedEvent, Variable
    from workbench.debug.quick import DebugStop, start_debug_session
    from workbench.debug.session import DebugSession, SessionListener
    from workbench.debug.values import ArraySummary

"""What a debug session shows: threads, frames, scopes, variables, stops and ends, as plain data
built from the adapter's DAP answers."""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.debug.values import ARRAY_TYPES, ArraySummary

STARTING = "starting"
RUNNING = "running"
STOPPED = "stopped"
ENDED = "ended"


@dataclass(frozen=True)
class ThreadInfo:
    id: int
    name: str


@dataclass(frozen=True)
class StackFrame:
    """One frame; ``path`` is None for code with no file here (``<string>``, a frozen module)."""

    id: int
    name: str
    path: str | None
    line: int
    column: int = 1

    @staticmethod
    def from_dap(frame: dict) -> "StackFrame":
        source = frame.get("source") or {}
        path = source.get("path") if isinstance(source, dict) else None
        return StackFrame(id=int(frame.get("id", 0)), name=str(frame.get("name", "")),
                          path=str(path) if path else None, line=int(frame.get("line") or 0),
                          column=int(frame.get("column") or 1))

    def location(self) -> str:
        """``name — file:line`` for the call stack list."""
        if self.path is None:
            return self.name
        return f"{self.name} — {self.path.rsplit('/', 1)[-1]}:{self.line}"


@dataclass(frozen=True)
class Scope:
    name: str
    reference: int
    expensive: bool = False


@dataclass
class Variable:
    """A variable, or a child of one (``reference`` > 0 when it has children to expand).
    ``summary`` is set for arrays and tensors: an ``ArraySummary``, or the text of why it could
    not be made."""

    name: str
    value: str
    type: str = ""
    evaluate_name: str = ""
    reference: int = 0
    summary: ArraySummary | str | None = None

    @staticmethod
    def from_dap(entry: dict) -> "Variable":
        return Variable(name=str(entry.get("name", "")), value=str(entry.get("value", "")),
                        type=str(entry.get("type") or ""), evaluate_name=str(entry.get("evaluateName") or ""),
                        reference=int(entry.get("variablesReference") or 0))

    @property
    def expandable(self) -> bool:
        return self.reference > 0

    @property
    def is_array(self) -> bool:
        return self.type in ARRAY_TYPES

    def display_value(self) -> str:
        """The summary for an array or tensor, else the adapter's value text."""
        if isinstance(self.summary, ArraySummary):
            return self.summary.text()
        return self.value


@dataclass
class EvaluateResult:
    """An expression's value in a frame (as a ``Variable`` named by the expression)."""

    expression: str
    variable: Variable


@dataclass(frozen=True)
class StoppedEvent:
    """The program stopped: why (``breakpoint``, ``step``, ``pause``, ``exception``, ``entry``),
    in which thread, with that thread's stack (innermost first) and every thread."""

    reason: str
    thread_id: int
    description: str = ""
    text: str = ""
    threads: tuple[ThreadInfo, ...] = ()
    frames: tuple[StackFrame, ...] = ()
    hit_breakpoint_ids: tuple[int, ...] = ()

    @property
    def top(self) -> StackFrame | None:
        return self.frames[0] if self.frames else None

    def headline(self) -> str:
        """"Stopped at a breakpoint in main (sample.py:10)" and the like."""
        what = {"breakpoint": "at a breakpoint", "step": "after a step", "pause": "(paused)",
                "exception": "on an exception", "entry": "on entry", "goto": "after a jump",
                "function breakpoint": "at a function breakpoint"}.get(self.reason, f"({self.reason})")
        where = ""
        if self.top is not None:
            where = f" in {self.top.name}"
            if self.top.path:
                where += f" ({self.top.path.rsplit('/', 1)[-1]}:{self.top.line})"
        detail = f": {self.text}" if self.reason == "exception" and self.text else ""
        return f"Stopped {what}{where}{detail}"


@dataclass(frozen=True)
class SessionEnd:
    """How a session ended: the program's exit code when it is known, and a ``message`` for the
    Debug dock; ``error`` when it ended through a fault (the program or the adapter could not
    start, or died) rather than by finishing or being stopped."""

    message: str
    exit_code: int | None = None
    error: bool = False
    output_tail: list[str] = field(default_factory=list)

"""Breakpoints of one project, what the adapter made of them, and where they are kept.

A project's breakpoints and watch expressions live in ``<project>/.workbench/debug.json``,
beside ``window-state.json``, with paths relative to the project (POSIX separators). They are
not in ``window-state.json`` itself because the window rewrites that file whole from its own
fields; a file of the debugger's own is never overwritten by a window that does not know of
breakpoints. A missing or damaged file gives no breakpoints.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from workbench.platform.atomic_files import write_text_atomically
from workbench.project.project_file import STATE_DIR, ensure_state_dir

DEBUG_STATE_FILE = "debug.json"


@dataclass(frozen=True)
class Breakpoint:
    """A line breakpoint: ``line`` is 1-based. ``condition`` stops only when the expression is
    true; ``hit_condition`` when the hit count matches (``5`` stops on the 5th hit, ``>= 5``,
    ``% 5`` on every 5th); a ``log_message`` makes it a log point that prints the message
    (``{expression}`` parts filled in) and does not stop."""

    path: str
    line: int
    condition: str = ""
    hit_condition: str = ""
    log_message: str = ""
    enabled: bool = True

    @property
    def is_log_point(self) -> bool:
        return bool(self.log_message)

    def to_dap(self) -> dict:
        """The ``SourceBreakpoint`` of a ``setBreakpoints`` request."""
        entry: dict = {"line": self.line}
        if self.condition:
            entry["condition"] = self.condition
        if self.hit_condition:
            entry["hitCondition"] = self.hit_condition
        if self.log_message:
            entry["logMessage"] = self.log_message
        return entry

    def describe(self) -> str:
        """What the breakpoint does, in a few words (for its tooltip and the Debug dock)."""
        parts = []
        if self.log_message:
            parts.append(f"logs {self.log_message!r}")
        if self.condition:
            parts.append(f"when {self.condition}")
        if self.hit_condition:
            parts.append(f"on hit {self.hit_condition}")
        if not self.enabled:
            parts.append("disabled")
        return ", ".join(parts)


@dataclass(frozen=True)
class BreakpointResult:
    """What the adapter made of a breakpoint set on ``requested_line``: ``verified`` when it
    will stop (or log) there, at ``line`` (the adapter may move it to the nearest line with
    code); ``message`` says why not, or that it moved."""

    path: str
    requested_line: int
    line: int
    verified: bool
    message: str = ""
    id: int | None = None

    @property
    def moved(self) -> bool:
        return self.verified and self.line != self.requested_line


def result_from_dap(path: str, requested_line: int, answer: dict) -> BreakpointResult:
    """A ``BreakpointResult`` from one entry of the adapter's ``setBreakpoints`` answer (or of a
    ``breakpoint`` event), with a message a user can act on when it did not stay put."""
    line = answer.get("line")
    line = line if isinstance(line, int) and line > 0 else requested_line
    verified = bool(answer.get("verified"))
    reason = str(answer.get("message") or "").strip()
    name = Path(path).name
    if not verified:
        message = (f"The breakpoint on line {requested_line} of {name} is not verified"
                   + (f": {reason}" if reason else "")
                   + ". Put it on a line that runs code (not a comment, a blank line or a docstring).")
    elif line != requested_line:
        message = (f"Line {requested_line} of {name} has no code: the breakpoint was moved to line {line}.")
    else:
        message = ""
    ident = answer.get("id")
    return BreakpointResult(path=path, requested_line=requested_line, line=line, verified=verified,
                            message=message, id=ident if isinstance(ident, int) else None)


def with_line(breakpoint: Breakpoint, line: int) -> Breakpoint:
    return replace(breakpoint, line=line)


@dataclass
class DebugState:
    """What the debugger keeps of a project: breakpoints (absolute paths in memory) and watch
    expressions."""

    breakpoints: list[Breakpoint] = field(default_factory=list)
    watches: list[str] = field(default_factory=list)

    def in_file(self, path: str | Path) -> list[Breakpoint]:
        """The breakpoints of ``path``, by line."""
        key = str(Path(path))
        return sorted((b for b in self.breakpoints if b.path == key), key=lambda b: b.line)

    def files(self) -> list[str]:
        return sorted({b.path for b in self.breakpoints})

    def at(self, path: str | Path, line: int) -> Breakpoint | None:
        key = str(Path(path))
        return next((b for b in self.breakpoints if b.path == key and b.line == line), None)

    def toggle(self, path: str | Path, line: int) -> Breakpoint | None:
        """Remove the breakpoint at ``path:line``, or add a plain one there; returns the one
        added (None when one was removed)."""
        existing = self.at(path, line)
        if existing is not None:
            self.breakpoints.remove(existing)
            return None
        added = Breakpoint(path=str(Path(path)), line=line)
        self.breakpoints.append(added)
        return added

    def put(self, breakpoint: Breakpoint) -> None:
        """Add ``breakpoint``, replacing the one on its line."""
        self.remove(breakpoint.path, breakpoint.line)
        self.breakpoints.append(breakpoint)

    def remove(self, path: str | Path, line: int) -> None:
        existing = self.at(path, line)
        if existing is not None:
            self.breakpoints.remove(existing)

    def replace_file(self, path: str | Path, breakpoints: list[Breakpoint]) -> None:
        """Make ``breakpoints`` the whole set of ``path`` (after lines moved in an edit)."""
        key = str(Path(path))
        self.breakpoints = [b for b in self.breakpoints if b.path != key] + list(breakpoints)


class DebugStateStore:
    """Loads and saves the :class:`DebugState` of the project at ``root``."""

    def __init__(self, root: Path | str, writable: bool = True):
        self.root = Path(root).resolve()
        self.file = self.root / STATE_DIR / DEBUG_STATE_FILE
        self.writable = writable

    def load(self) -> DebugState:
        """The saved state, or an empty one when there is none or it cannot be read; each
        entry is checked on its own, so one bad breakpoint does not lose the others."""
        try:
            data = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return DebugState()
        if not isinstance(data, dict):
            return DebugState()
        state = DebugState()
        listed = data.get("breakpoints")
        for item in listed if isinstance(listed, list) else []:
            breakpoint = self._breakpoint_from_json(item)
            if breakpoint is not None and state.at(breakpoint.path, breakpoint.line) is None:
                state.breakpoints.append(breakpoint)
        watches = data.get("watches")
        state.watches = [w for w in watches if isinstance(w, str) and w.strip()] if isinstance(watches, list) else []
        return state

    def save(self, state: DebugState) -> None:
        """Write ``state``; nothing in a read-only project (there is nowhere to keep it)."""
        if not self.writable:
            return
        entries = []
        for breakpoint in sorted(state.breakpoints, key=lambda b: (b.path, b.line)):
            entry = asdict(breakpoint)
            entry["path"] = self._relative(breakpoint.path)
            entries.append(entry)
        ensure_state_dir(self.root)
        write_text_atomically(self.file, json.dumps({"breakpoints": entries, "watches": list(state.watches)},
                                                    indent=2) + "\n")

    def _relative(self, path: str) -> str:
        try:
            return Path(path).relative_to(self.root).as_posix()
        except ValueError:
            return path  # a file outside the project keeps its absolute path

    def _breakpoint_from_json(self, item: object) -> Breakpoint | None:
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            return None
        line = item.get("line")
        if not isinstance(line, int) or isinstance(line, bool) or line < 1:
            return None

        def text(key: str) -> str:
            value = item.get(key, "")
            return value if isinstance(value, str) else ""

        path = Path(item["path"])
        enabled = item.get("enabled", True)
        return Breakpoint(path=str(path if path.is_absolute() else self.root / path), line=line,
                          condition=text("condition"), hit_condition=text("hit_condition"),
                          log_message=text("log_message"), enabled=enabled if isinstance(enabled, bool) else True)

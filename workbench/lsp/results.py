"""What the language server answers, as plain data: no protocol library type leaves the session.

Places follow the editor's convention: lines are 1-based, columns 0-based (characters of the
line's Python string).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Span:
    """From (``line``, ``column``) up to (``end_line``, ``end_column``), end excluded."""

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class Location:
    """A place in a file; ``text`` is that line's text when the session could read it."""

    path: Path
    span: Span
    text: str = ""


@dataclass(frozen=True)
class TextEdit:
    """Replace ``span`` with ``new_text``."""

    span: Span
    new_text: str


@dataclass(frozen=True)
class FileEdit:
    """The edits of one file, all against its text before any of them."""

    path: Path
    edits: tuple[TextEdit, ...]


@dataclass(frozen=True)
class Candidate:
    """One completion: ``insert`` is what goes in, ``label`` what the list shows."""

    label: str
    insert: str
    kind: str = ""
    detail: str = ""
    documentation: str = ""
    sort_key: str = ""


@dataclass(frozen=True)
class Signature:
    """One signature of a call: its ``label`` and the names of its parameters (each a substring
    of the label, or the label's (start, end) slice)."""

    label: str
    parameters: tuple[str | tuple[int, int], ...] = ()
    documentation: str = ""

    def parameter_span(self, index: int) -> tuple[int, int] | None:
        """Where parameter ``index`` is in ``label``, or None."""
        if not 0 <= index < len(self.parameters):
            return None
        parameter = self.parameters[index]
        if isinstance(parameter, tuple):
            return parameter
        # Search after the opening parenthesis so "x" in "f(x)" is the parameter, not the name.
        start = self.label.find(parameter, max(0, self.label.find("(") + 1))
        # Skip matches inside another name ("in" inside "in_channels").
        while start >= 0:
            before = self.label[start - 1] if start else " "
            after_at = start + len(parameter)
            after = self.label[after_at] if after_at < len(self.label) else " "
            if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
                return start, after_at
            start = self.label.find(parameter, start + 1)
        return None


@dataclass(frozen=True)
class SignatureHelp:
    signatures: tuple[Signature, ...]
    active_signature: int = 0
    active_parameter: int = 0

    @property
    def active(self) -> Signature | None:
        if not self.signatures:
            return None
        return self.signatures[min(max(self.active_signature, 0), len(self.signatures) - 1)]


@dataclass(frozen=True)
class Problem:
    """A diagnostic the server published; ``severity`` is "error", "warning", "information"
    or "hint"."""

    path: Path
    span: Span
    message: str
    severity: str = "error"
    source: str = ""
    code: str = ""


@dataclass(frozen=True)
class Symbol:
    """A named thing of a file (class, function, variable), with what it contains."""

    name: str
    kind: str
    span: Span
    children: tuple["Symbol", ...] = field(default_factory=tuple)
    detail: str = ""


@dataclass(frozen=True)
class ServerStatus:
    """Where the server is: "starting", "running", "restarting", "failed" or "stopped";
    ``message`` says why when it is not running."""

    state: str
    message: str = ""


@dataclass(frozen=True)
class Diagnostics:
    """The server's problems of one file, for the document ``version`` it checked (None when
    it did not say)."""

    path: Path
    version: int | None
    problems: tuple[Problem, ...]


@dataclass(frozen=True)
class Progress:
    """Work the server reports (``title`` such as "lint: pyflakes"), or its end (``done``)."""

    title: str
    done: bool = False

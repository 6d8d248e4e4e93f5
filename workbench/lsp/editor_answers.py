"""The server's answers in the editor's terms: completions for the caret's line, diagnostics to
underline, the word under the caret, and when typing is worth a question. Qt-free.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from workbench.editor.assist import CompletionItem, Completions
from workbench.editor.diagnostics import EditorDiagnostic
from workbench.lsp.results import Candidate, Problem

PYTHON_SUFFIXES = (".py", ".pyi")
MAX_CANDIDATES = 2000
# Typing asks on its own after a dot, or once a name has this many characters.
AUTO_COMPLETE_AFTER = 2


def is_python(path: Path | str) -> bool:
    return Path(path).suffix.lower() in PYTHON_SUFFIXES


def _is_name_character(character: str) -> bool:
    return character.isalnum() or character == "_"


def name_start(line_text: str, column: int) -> int:
    """Where the name that ends at ``column`` starts (``column`` when there is none)."""
    start = min(column, len(line_text))
    while start > 0 and _is_name_character(line_text[start - 1]):
        start -= 1
    return start


def name_at(line_text: str, column: int) -> tuple[int, int] | None:
    """The [start, end) columns of the name under or just before ``column``, or None."""
    start = name_start(line_text, column)
    end = min(column, len(line_text))
    while end < len(line_text) and _is_name_character(line_text[end]):
        end += 1
    if start == end or line_text[start].isdigit():
        return None
    return start, end


def _in_comment_or_string(before: str) -> bool:
    """Whether the end of ``before`` (a line up to the caret) is inside a comment or a string
    that opened on this line (enough to keep typing prose from asking the server)."""
    quote = ""
    index = 0
    while index < len(before):
        character = before[index]
        if quote:
            if character == "\\":
                index += 1
            elif before.startswith(quote, index):
                index += len(quote) - 1
                quote = ""
        elif character == "#":
            return True
        elif character in "'\"":
            quote = before[index:index + 3] if before[index:index + 3] in ("'''", '"""') else character
            index += len(quote) - 1
        index += 1
    return bool(quote)


def worth_asking(line_text: str, column: int, explicit: bool) -> bool:
    """Whether completions should be asked for at ``column``: always when the user asked,
    otherwise after a dot or a name of AUTO_COMPLETE_AFTER characters, outside comments and
    strings."""
    if explicit:
        return True
    before = line_text[:column]
    start = name_start(line_text, column)
    if column - start < AUTO_COMPLETE_AFTER and not before[:start].endswith("."):
        return False
    if start < column and before[start].isdigit():
        return False  # a number
    return not _in_comment_or_string(before)


def completions(candidates: list[Candidate], line_text: str, column: int) -> Completions | None:
    """The candidates as the editor's completions: they replace the name before the caret."""
    if not candidates:
        return None
    items = tuple(CompletionItem(text=candidate.insert, label=candidate.label,
                                 detail=candidate.detail or candidate.kind,
                                 documentation=candidate.documentation)
                  for candidate in candidates[:MAX_CANDIDATES])
    return Completions(name_start(line_text, column), column, items)


_QUOTED = re.compile(r"'([A-Za-z_][A-Za-z0-9_.]*)'")
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
# pylsp reports pyflakes' messages without flake8's codes; these are the ones a "# noqa: F…"
# names most.
PYFLAKES_CODES = (("imported but unused", "F401"), ("unable to detect undefined names", "F403"),
                  ("may be undefined, or defined from star imports", "F405"), ("redefinition of unused", "F811"),
                  ("undefined name", "F821"), ("is assigned to but never used", "F841"),
                  ("f-string is missing placeholders", "F541"))


def problem_code(problem: Problem) -> str:
    """The problem's flake8-style code (E501, F401…), or "" when it has none."""
    if problem.code:
        return problem.code
    if problem.source == "pyflakes":
        return next((code for text, code in PYFLAKES_CODES if text in problem.message), "")
    return ""


def silenced(problem: Problem, line_text: str) -> bool:
    """Whether the line says ``# noqa`` (or ``# noqa: CODES`` naming the problem's code), as
    flake8 reads it."""
    found = _NOQA.search(line_text)
    if found is None:
        return False
    codes = found.group("codes")
    if not codes:
        return True
    code = problem_code(problem)
    return bool(code) and any(code.upper().startswith(wanted.upper()) for wanted in re.split(r"[,\s]+", codes))
EDITOR_SEVERITY = {"error": "error", "warning": "warning", "information": "warning", "hint": "warning"}


def editor_diagnostics(problems: tuple[Problem, ...] | list[Problem],
                       line_text: Callable[[int], str] = lambda line: "") -> list[EditorDiagnostic]:
    """Problems as underlines: one line each (a problem over several lines marks its first
    line from its start on), leaving out those its line silences with ``# noqa``. pyflakes
    marks from a name to the end of its line; when the message quotes the name found there
    (``line_text(line)``), only the name is marked."""
    found = []
    for problem in problems:
        span = problem.span
        if silenced(problem, line_text(span.line)):
            continue
        end = span.end_column if span.end_line == span.line else 1 << 30
        quoted = _QUOTED.search(problem.message)
        if quoted and line_text(span.line)[span.column:].startswith(quoted.group(1)):
            end = min(end, span.column + len(quoted.group(1)))
        found.append(EditorDiagnostic(line=span.line, start=span.column, end=max(span.column, end),
                                      message=problem.message,
                                      severity=EDITOR_SEVERITY.get(problem.severity, "error"),
                                      source=problem.source))
    return found

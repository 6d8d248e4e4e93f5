"""Reading what the user typed into "Go to line" ("120", "120:8", ":8")."""

from __future__ import annotations

from workbench.editor.errors import EditorError


def parse_line_and_column(entry: str, current_line: int = 1) -> tuple[int, int]:
    """``"line[:column]"`` as a 1-based (line, column); a missing line keeps ``current_line``.

    Numbers are not checked against the file here: the editor clamps them to the text.
    Raises EditorError when the entry is not of that form.
    """
    entry = entry.strip().replace(",", ":")
    line_part, _, column_part = entry.partition(":")
    try:
        line = int(line_part) if line_part.strip() else current_line
        column = int(column_part) if column_part.strip() else 1
    except ValueError:
        raise EditorError(
            f"{entry!r} is not a line number. Type a line, optionally with a column: 120 or 120:8."
        ) from None
    return line, column


def clamp_line(line: int, line_count: int) -> int:
    """``line`` (1-based) kept between 1 and ``line_count``."""
    return max(1, min(line, max(1, line_count)))

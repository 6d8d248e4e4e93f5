"""Finding the bracket that matches the one at the cursor."""

from __future__ import annotations

from typing import Callable

OPENING = {"(": ")", "[": "]", "{": "}"}
CLOSING = {close: open_ for open_, close in OPENING.items()}

# How far to look for the partner; beyond this the search costs more than the hint is worth.
MAX_LINES_SCANNED = 2000


def find_matching_bracket(
    line_text: Callable[[int], str | None], line: int, column: int,
    max_lines: int = MAX_LINES_SCANNED,
) -> tuple[int, int] | None:
    """The (line, column) of the bracket matching the one at (``line``, ``column``), 0-based.

    ``line_text(n)`` returns line n, or None past either end of the file. Returns None when the
    character there is not a bracket or its partner is not found within ``max_lines`` lines.
    """
    text = line_text(line)
    if text is None or not 0 <= column < len(text):
        return None
    bracket = text[column]
    if bracket in OPENING:
        partner, step = OPENING[bracket], 1
    elif bracket in CLOSING:
        partner, step = CLOSING[bracket], -1
    else:
        return None
    depth = 0
    current, index = line, column
    for _ in range(max_lines):
        while 0 <= index < len(text):
            char = text[index]
            if char == bracket:
                depth += 1
            elif char == partner:
                depth -= 1
                if depth == 0:
                    return current, index
            index += step
        current += step
        text = line_text(current) if current >= 0 else None
        if text is None:
            return None
        index = 0 if step > 0 else len(text) - 1
    return None

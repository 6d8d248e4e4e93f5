"""What the command line asks of the terminal: can a line be redrawn in place, and how wide."""

from __future__ import annotations

import os
import shutil

# Narrower than this, a redrawn line is cut here anyway rather than at nothing.
MIN_WIDTH = 10


def is_terminal(stream) -> bool:
    """Whether ``stream`` is a terminal that can redraw a line (not a pipe, a file or TERM=dumb)."""
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def line_width() -> int:
    """The columns a redrawn line may take: one less than the terminal's, since a line that
    fills the last column wraps, and ``\\r`` can no longer redraw it."""
    return max(MIN_WIDTH, shutil.get_terminal_size().columns - 1)

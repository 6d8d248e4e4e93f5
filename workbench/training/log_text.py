"""What a trainer's output says went wrong: one line for the runs list and the CLI."""

from __future__ import annotations

import re

# torchrun's workers print "[rank0]: Traceback ..." when their output is prefixed.
_RANK_PREFIX = re.compile(r"^\[(?:rank|default)\d+\]:\s?")
# argparse's complaint about the command line: "train.py: error: unrecognized arguments: ...".
_PROGRAM_ERROR = re.compile(r"^\S+: error: ")
# torchrun's own report that a worker failed: the worker's error says more.
_WRAPPERS = ("ChildFailedError",)


def error_line(text: str) -> str:
    """The last error in ``text``: the exception line of the last Python traceback, or the last
    ``error: ...`` line (what the training helpers print for a problem the user can fix) or
    ``prog: error: ...`` line (argparse's), whichever comes later. Without any of these, the
    last line that says ``error:`` anywhere; "" when there is none."""
    lines = [_RANK_PREFIX.sub("", line.rstrip()) for line in text.splitlines()]
    found: list[str] = []
    for index, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last):"):
            exception = next((later for later in lines[index + 1:] if later.strip() and not later[0].isspace()
                              and not later.startswith("Traceback")), "")
            if exception:
                found.append(exception.strip())
        elif line.startswith("error: ") or _PROGRAM_ERROR.match(line):
            found.append(line.strip())
    useful = [line for line in found if not any(wrapper in line.split(":")[0] for wrapper in _WRAPPERS)]
    if not (useful or found):
        found = [line.strip() for line in lines if "error:" in line.lower()]
        useful = [line for line in found if not any(wrapper in line for wrapper in _WRAPPERS)]
    chosen = (useful or found or [""])[-1]
    return chosen[:500]


def tail_text(path, start: int = 0, limit: int = 65536) -> str:
    """The last ``limit`` bytes of a file from offset ``start`` on, as text ("" if none).

    ``start`` is taken as the start of a line; when the limit cuts in later, the text begins
    at the next whole line."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            begin = max(start, size - limit)
            # From the byte before, to see whether the limit fell at the start of a line.
            handle.seek(begin - 1 if begin > start else begin)
            data = handle.read()
    except OSError:
        return ""
    if begin > start:
        cut = data.find(b"\n")
        data = data[cut + 1:] if cut >= 0 else b""
    return data.decode("utf-8", errors="replace")

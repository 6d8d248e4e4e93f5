"""Running a command with its stderr on a pseudo-terminal, to see what a person at a terminal
would see (the progress line redrawn in place)."""

from __future__ import annotations

import os
import subprocess
from typing import Callable


def stderr_on_a_terminal(start: Callable[[int], subprocess.Popen], timeout: float = 60
                         ) -> tuple[subprocess.Popen, str | bytes, str]:
    """Start a command with ``start(terminal_fd)`` (which passes the fd as its stderr and a pipe
    as its stdout), wait for it, and return it, what it wrote on stdout, and everything the
    terminal received, decoded."""
    import pty

    controller, terminal = pty.openpty()
    command = start(terminal)
    os.close(terminal)
    out, _ = command.communicate(timeout=timeout)
    seen = b""
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # the terminal closed with the command
            break
        if not chunk:
            break
        seen += chunk
    os.close(controller)
    return command, out, seen.decode()

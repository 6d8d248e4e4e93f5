"""Debug a script up to its first stop in one call, outside Qt (for benchmarks and scripts)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from workbench.debug.breakpoints import Breakpoint
from workbench.debug.launches import script_launch
from workbench.debug.model import StoppedEvent
from workbench.debug.session import START_TIMEOUT_S, DebugSession


@dataclass
class DebugStop:
    """The first stop of a session started by ``start_debug_session``: ``event`` is where it
    stopped; ``session`` is still stopped there until ``close()`` ends it."""

    event: StoppedEvent
    session: DebugSession

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> "DebugStop":
        return self

    def __exit__(self, *_exc) -> None:
        self.close()


def start_debug_session(script: Path | str, breakpoints: Iterable[int | Breakpoint],
                        timeout: float = START_TIMEOUT_S, python: str | None = None) -> DebugStop:
    """Run ``script`` under debugpy with ``breakpoints`` (line numbers of the script, or
    ``Breakpoint``s) and return once it stops; DebugError when it cannot start or ends first.

        with start_debug_session("sample.py", [10]) as stop:
            print(stop.event.top.line)
    """
    config = script_launch(script, python=python)
    entries = [b if isinstance(b, Breakpoint) else Breakpoint(path=config.program, line=int(b)) for b in breakpoints]
    session = DebugSession(config, entries)
    try:
        session.start(timeout)
        event = session.next_stop(timeout)
    except BaseException:
        session.close()
        raise
    return DebugStop(event, session)

"""What a tool's run function gets besides its values: progress, log, cancel, the project."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from workbench.modeltools.errors import ToolCancelled

# An event is a plain dict: {"event": "stage", "name", "index", "count"},
# {"event": "progress", "fraction"}, {"event": "log", "text"}.
EventSink = Callable[[dict], None]


@dataclass
class ToolContext:
    """Handed to a tool's run function.

    ``stage(name)`` moves the progress bar to the next named stage (names come from the tool's
    ``stages``); ``progress(fraction)`` reports progress inside the stage; ``log(text)`` adds a
    line to the log; ``check_cancelled()`` raises ToolCancelled once ``cancel()`` was called, so
    loops call it between steps. ``project`` is the project folder, None outside any project.
    """

    stages: tuple[str, ...] = ()
    project: Path | None = None
    on_event: EventSink = lambda event: None
    _cancelled: threading.Event = field(default_factory=threading.Event)

    def stage(self, name: str) -> None:
        self.check_cancelled()
        index = self.stages.index(name) if name in self.stages else -1
        self.on_event({"event": "stage", "name": name, "index": index, "count": len(self.stages)})

    def progress(self, fraction: float) -> None:
        self.check_cancelled()
        self.on_event({"event": "progress", "fraction": max(0.0, min(1.0, float(fraction)))})

    def log(self, text: str) -> None:
        self.on_event({"event": "log", "text": str(text)})

    def cancel(self) -> None:
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def check_cancelled(self) -> None:
        if self._cancelled.is_set():
            raise ToolCancelled()

"""What a tool's run function gets besides its values: progress, log, cancel, the project.

Progress and cancel are the ones every long-running service shares (``workbench.tasks``): a
tool's progress is a ``Progress`` with the stage's number (``step`` of ``steps``), and its
cancel is a ``CancelToken``. Between processes (a tool job and its window or terminal) they
travel as events, plain dicts one JSON line each (see workbench.modeltools.job);
``progress_event`` turns a Progress into its event and ``ProgressOfEvents`` events back into
Progress.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from workbench.modeltools.errors import ToolCancelled
from workbench.tasks import CancelToken, Progress

# An event is a plain dict: {"event": "stage", "name", "index", "count"},
# {"event": "progress", "fraction"}, {"event": "log", "text"}.
EventSink = Callable[[dict], None]


@dataclass
class ToolContext:
    """Handed to a tool's run function.

    ``stage(name)`` moves the progress bar to the next named stage (names come from the tool's
    ``stages``); ``progress(fraction)`` reports progress inside the stage; ``log(text)`` adds a
    line to the log; ``check_cancelled()`` raises ToolCancelled once ``cancel_token`` is
    cancelled (``cancel()``, or whoever holds the token), so loops call it between steps.
    ``project`` is the project folder, None outside any project.
    """

    stages: tuple[str, ...] = ()
    project: Path | None = None
    on_event: EventSink = lambda event: None
    cancel_token: CancelToken = field(default_factory=CancelToken)
    _stage: Progress = field(default_factory=lambda: Progress(""), init=False, repr=False)

    def stage(self, name: str) -> None:
        self.check_cancelled()
        index = self.stages.index(name) if name in self.stages else -1
        self._stage = Progress(name, 0.0, index, len(self.stages))
        self.on_event(progress_event(self._stage, stage_begins=True))

    def progress(self, fraction: float) -> None:
        self.check_cancelled()
        fraction = max(0.0, min(1.0, float(fraction)))
        self._stage = Progress(self._stage.message, fraction, self._stage.step, self._stage.steps)
        self.on_event(progress_event(self._stage))

    @property
    def current(self) -> Progress:
        """The progress reported last: the stage and how far into it."""
        return self._stage

    def log(self, text: str) -> None:
        self.on_event({"event": "log", "text": str(text)})

    def cancel(self) -> None:
        self.cancel_token.cancel()

    @property
    def cancelled(self) -> bool:
        return self.cancel_token.cancelled

    def check_cancelled(self) -> None:
        if self.cancel_token.cancelled:
            raise ToolCancelled()


def progress_event(progress: Progress, stage_begins: bool = False) -> dict:
    """The event that carries ``progress``: a stage beginning, or progress inside the stage."""
    if stage_begins:
        return {"event": "stage", "name": progress.message,
                "index": -1 if progress.step is None else progress.step, "count": progress.steps or 0}
    return {"event": "progress", "fraction": progress.fraction}


class ProgressOfEvents:
    """Folds a job's events into the ``Progress`` they mean: a ``stage`` event begins a stage,
    a ``progress`` event moves inside it. Events of other kinds are not progress."""

    def __init__(self) -> None:
        self.current = Progress("")

    def add(self, event: dict) -> Progress | None:
        """The progress after ``event``, or None when it is not a progress event (or malformed)."""
        kind = event.get("event")
        if kind == "stage":
            self.current = Progress(str(event.get("name", "")), 0.0, _int(event.get("index"), -1),
                                    _int(event.get("count"), 0))
        elif kind == "progress":
            try:
                fraction = max(0.0, min(1.0, float(event.get("fraction", 0.0))))
            except (TypeError, ValueError):
                return None
            self.current = Progress(self.current.message, fraction, self.current.step,
                                    self.current.steps)
        else:
            return None
        return self.current


def _int(value, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default

"""What long-running service calls share: a cancel token and the shape of progress reports.

Services take ``progress`` (a callable) and ``cancel`` (a CancelToken) and know nothing of Qt;
widgets run them off the GUI thread and turn the reports into status-bar text.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable


class Cancelled(Exception):
    """The user cancelled the operation; nothing is wrong."""


class CancelToken:
    """Set from any thread; checked by the work at its safe points."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Cancelled()


@dataclass(frozen=True)
class Progress:
    """One progress report: what is happening, and how far (``fraction`` None when unknown).

    Work that goes through named stages (a model tool) also says which: ``message`` is the
    stage's name, ``step`` its number from 0 (-1 for a stage outside the declared ones) of
    ``steps``, and ``fraction`` how far into that stage."""

    message: str
    fraction: float | None = None
    step: int | None = None
    steps: int | None = None

    @property
    def overall(self) -> float | None:
        """How far the whole work is, 0 to 1: through the stages when there are any, else
        ``fraction``."""
        if self.steps and self.step is not None and self.step >= 0:
            return min(1.0, (self.step + (self.fraction or 0.0)) / self.steps)
        return self.fraction


ProgressCallback = Callable[[Progress], None]

"""How a run ended, decided and recorded the same way wherever it trained.

The local supervisor and a cluster run's follower both end a run here: a stop or terminate that
was asked for in the run folder decides its end first (``requested_end``); a run whose end no
one saw takes the one the training helpers wrote in ``outcome.json`` (``recorded_outcome``); and
the end is written by a ``RunRecorder``, run.json first (the folder has the last word), then the
project's run store.
"""

from __future__ import annotations

import sys
import time

from workbench.training.errors import TrainingError
from workbench.training.metrics import final_metrics
from workbench.training.registration import register_run
from workbench.training.run_folder import RunFolder
from workbench.training.run_info import COMPLETED, STOPPED, TERMINATED, RunInfo
from workbench.training.run_store import RunStore

NOT_RESUMABLE_STOP = "stopped before its first checkpoint, so it cannot be resumed; start it again"


def requested_end(folder: RunFolder, ended_by_itself: bool) -> tuple[str, str] | None:
    """``(state, error)`` of a run whose trainer has ended, when a stop or terminate was asked
    for in ``folder``; None when neither was. ``ended_by_itself``: the trainer exited with status
    0 on its own, so a terminate that came too late (a stop asked for first had done its work)
    does not make it terminated."""
    if folder.terminate_requested.exists() and not ended_by_itself:
        return TERMINATED, ""
    if folder.stop_requested.exists():
        if folder.latest_checkpoint() is None:
            # Stopped while starting (before the trainer could catch the signal), or by a
            # script that saves no checkpoints: there is nothing to resume from.
            return STOPPED, NOT_RESUMABLE_STOP
        return STOPPED, ""
    return None


def recorded_outcome(folder: RunFolder, segment_start: float, slack: float) -> tuple[str, float] | None:
    """The end the training helpers wrote in ``outcome.json`` during the segment of the run that
    began at ``segment_start`` (``slack`` seconds of clock difference allowed): ("completed" or
    "stopped", when); None when they wrote none then."""
    outcome = folder.read_outcome()
    if outcome is not None and outcome["time"] >= segment_start - slack:
        return (COMPLETED if outcome["state"] == "completed" else STOPPED), float(outcome["time"])
    return None


class RunRecorder:
    """Writes the record of the run in ``folder``: run.json first, then the run store. ``who``
    names the writer in the line a store that cannot be written leaves on stderr."""

    def __init__(self, folder: RunFolder, who: str):
        self.folder = folder
        self.store = RunStore(folder.path.parent.parent)
        self.who = who

    def save(self, info: RunInfo) -> None:
        """Write ``info``; a store that cannot be written is said on stderr (the folder has it)."""
        self.folder.write_info(info)
        try:
            self.store.put(info)
        except TrainingError as exc:
            print(f"workbench {self.who}: {exc}", file=sys.stderr, flush=True)

    def end(self, info: RunInfo, state: str, error: str, exit_code: int | None,
            ended_at: float | None = None) -> None:
        """Record that the run ended as ``state`` (with ``error`` and ``exit_code``) at
        ``ended_at`` (default: now), with the last values of its metrics."""
        info.state, info.error, info.exit_code = state, error, exit_code
        info.ended_at = time.time() if ended_at is None else ended_at
        info.final_metrics = final_metrics(self.folder.metrics)
        if state == COMPLETED and not info.model_version:
            register_run(info, self.folder)
        self.save(info)

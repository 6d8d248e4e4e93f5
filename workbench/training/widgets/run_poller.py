"""A worker thread that reads what the watched runs appended to their metrics and logs.

It polls every ``POLL_SECONDS`` (a metric is on the curve well within half a second) and hands
new records and log text to the GUI thread through queued signals; files are never read on the
GUI thread. Each ``watch`` starts a new generation: whatever was read for an older one is
dropped by the receiver.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QObject, Signal

from workbench.training.widgets.log_tail import RunLogTail

log = logging.getLogger(__name__)

POLL_SECONDS = 0.1


@dataclass(frozen=True)
class WatchedRun:
    """A run to follow: its metrics file and, when its log is shown, its folder (whose stdout.log
    and stderr.log are read together, in the order they arrived)."""

    run_id: str
    metrics_path: Path
    log_dir: Path | None = None


def _service_metrics_tail(path: Path):
    # Leave this import here: the training service loads only once a run is watched.
    from workbench.training import MetricsTail

    return MetricsTail(path)


class RunPoller(QObject):
    """Follows the watched runs' files in one daemon thread."""

    sig_metrics_read = Signal(int, str, object, bool)
    """(generation, run id, new metric records: list of dicts, restarted). ``restarted``: the
    file was replaced or cut short (a resume keeps the records up to its checkpoint), so the
    records start from the top and what was drawn before must go."""

    sig_log_read = Signal(int, str, str, str)
    """(generation, run id, stream "stdout"/"stderr", new text: whole lines)."""

    def __init__(self, parent: QObject | None = None,
                 metrics_tail: Callable[[Path], object] = _service_metrics_tail,
                 interval: float = POLL_SECONDS):
        super().__init__(parent)
        self._make_metrics_tail = metrics_tail
        self.interval = interval
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._generation = 0
        self._watched: list[WatchedRun] = []
        self._thread: threading.Thread | None = None
        self.destroyed.connect(self._stopped.set)

    @property
    def generation(self) -> int:
        return self._generation

    def watch(self, runs: list[WatchedRun]) -> int:
        """Follow ``runs`` from the start of their files (instead of the runs followed so far);
        returns the generation their reports carry."""
        with self._lock:
            self._generation += 1
            self._watched = list(runs)
            generation = self._generation
        if runs and self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="run-poller", daemon=True)
            self._thread.start()
        self._wake.set()
        return generation

    def stop(self) -> None:
        """End the thread (the panel calls it when it closes)."""
        self._stopped.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def _loop(self) -> None:
        generation = -1
        tails: list[tuple[WatchedRun, object, RunLogTail | None]] = []
        while not self._stopped.is_set():
            with self._lock:
                if generation != self._generation:
                    generation = self._generation
                    tails = [(run, self._make_metrics_tail(run.metrics_path),
                              RunLogTail(run.log_dir) if run.log_dir is not None else None)
                             for run in self._watched]
            try:
                tails = self._read(generation, tails)
            except RuntimeError:
                return  # the panel (and this QObject) is gone
            self._wake.wait(self.interval)
            self._wake.clear()

    def _read(self, generation: int, tails):
        kept = []
        for run, metrics, logs in tails:
            try:
                records = metrics.read_new()
            except OSError as exc:
                log.warning("Cannot read %s: %s", run.metrics_path, exc)
                records = []
            restarted = bool(getattr(metrics, "restarted", False))
            if records or restarted:
                self.sig_metrics_read.emit(generation, run.run_id, records, restarted)
            try:
                pieces = logs.read_new() if logs is not None else []
            except OSError as exc:
                log.warning("Cannot read the log of %s: %s", run.run_id, exc)
                pieces = []
            for stream, text in pieces:
                self.sig_log_read.emit(generation, run.run_id, stream, text)
            kept.append((run, metrics, logs))
        return kept

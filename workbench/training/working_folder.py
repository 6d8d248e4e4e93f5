"""Follows what a run writes in its working folder, on a thread of the run's supervisor:
TensorBoard event files become metrics.jsonl records (through the run's one metrics writer),
model files become the run's products (``products.json``).

The folder is walked often at first and less often later (written_files.next_scan_delay); the
event files found are read every ``TAIL_INTERVAL_S``. Nothing here may end the supervisor: a
file that cannot be read is said once in the supervisor's log and left.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Callable

from workbench.training.metrics_writer import RunMetricsWriter
from workbench.training.run_folder import RunFolder
from workbench.training.written_files import WorkingFolderScan, next_scan_delay, record_products

# How often the event files found are read: a scalar reaches metrics.jsonl within this.
TAIL_INTERVAL_S = 0.05
TENSORBOARD_SOURCE = "tensorboard"
# The walks take at most about 1/(1+this) of one core: a walk that took 0.1 s (a project of tens
# of thousands of files on a busy machine) waits at least 1 s before the next.
WALK_PAUSE_FACTOR = 10


class WorkingFolderWatcher:
    """Watches ``work_dir`` for the run in ``folder`` (its segment started at ``started_at``).
    ``say(text)`` tells the user something about it (in the run's log)."""

    def __init__(self, folder: RunFolder, work_dir: Path | str, started_at: float, writer: RunMetricsWriter,
                 say: Callable[[str], None] | None = None):
        self.folder = folder
        self.work_dir = Path(work_dir)
        self.writer = writer
        self.say = say or (lambda text: None)
        self.scan = WorkingFolderScan(self.work_dir, started_at)
        self.event_files: list[str] = []          # work_dir-relative, in the order found
        self.scans = 0
        self.scan_seconds = 0.0
        self.last_scan_seconds = 0.0
        self._tails: list = []
        self._broken: set[Path] = set()
        self._said_truncated = False
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._follow, name="working-folder", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def finish(self) -> None:
        """Stop following, then take a last look: what the trainer wrote as it ended counts."""
        self._stop.set()
        self._thread.join()
        self._look()
        self._read_events()

    def _follow(self) -> None:
        started = time.monotonic()
        next_look = started
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_look:
                self._look()
                pause = max(next_scan_delay(now - started), WALK_PAUSE_FACTOR * self.last_scan_seconds)
                next_look = time.monotonic() + pause
            self._read_events()
            wait = TAIL_INTERVAL_S if self._tails else max(0.0, next_look - time.monotonic())
            self._stop.wait(wait)

    def _look(self) -> None:
        with self._lock:
            began = time.perf_counter()
            try:
                result = self.scan.scan()
            except Exception as exc:  # noqa: BLE001 (the run goes on without it)
                print(f"workbench supervisor: cannot walk {self.work_dir}: {exc}", file=sys.stderr, flush=True)
                return
            self.last_scan_seconds = time.perf_counter() - began
            self.scans += 1
            self.scan_seconds += self.last_scan_seconds
            if result.truncated and not self._said_truncated:
                self._said_truncated = True
                self.say(f"the project folder has more than {self.scan.max_entries} files and folders; TensorBoard "
                         "event files and model files past them are not looked for")
            for path in result.event_files:
                from workbench.training.tb_events import EventFileTail

                self._tails.append(EventFileTail(path))
                self.event_files.append(_relative(path, self.work_dir))
            if result.products:
                try:
                    record_products(self.folder.path, self.work_dir, result.products)
                except OSError as exc:
                    print(f"workbench supervisor: cannot record the run's products: {exc}", file=sys.stderr,
                          flush=True)

    def _read_events(self) -> None:
        with self._lock:
            for tail in self._tails:
                if tail.path in self._broken:
                    continue
                try:
                    records = tail.read_new()
                except Exception as exc:  # noqa: BLE001 (a missing package, a file gone)
                    self._broken.add(tail.path)
                    self.say(f"cannot read the TensorBoard event file {_relative(tail.path, self.work_dir)}: {exc}")
                    continue
                for record in records:
                    self.writer.write(TENSORBOARD_SOURCE, record)


def _relative(path: Path, root: Path) -> str:
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return str(path)

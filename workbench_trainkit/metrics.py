"""Metrics as JSON lines in the run folder, one record a line, for curves and comparisons.

    {"step": 120, "time": 1764490000.12, "loss": 0.41, "acc": 0.88, "lr": 0.002}
    {"step": 240, "epoch": 2, "time": 1764490003.5, "val_loss": 0.3, "val_acc": 0.9}

Standard names: loss, acc, lr, val_loss, val_acc, test_loss, test_acc; any other name is
allowed. Each line is flushed as it is written, so a reader tailing the file sees it at once.
A value that is not a finite number (a NaN loss) is written as null, so every line stays JSON.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

METRICS_FILE = "metrics.jsonl"


class MetricsWriter:
    """Appends metric records to ``<run_dir>/metrics.jsonl``; only the main process writes.

    The file is created at once, even before the first record, so a supervisor reading the
    script's output knows the script writes its own metrics. ``enabled`` defaults to "this is
    rank 0" (the ``RANK`` variable torchrun sets); other ranks get a writer that writes nothing.
    """

    def __init__(self, run_dir: str | Path, enabled: bool | None = None):
        self.path = Path(run_dir) / METRICS_FILE
        self.enabled = int(os.environ.get("RANK", "0")) == 0 if enabled is None else enabled
        self._file = None
        if self.enabled:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Appending: a resumed run continues the same curves.
            self._file = open(self.path, "a", encoding="utf-8", buffering=1)

    def write(self, step: int | None = None, **values) -> dict | None:
        """Append one record of ``values`` at ``step``, stamped with the time; returns it."""
        if self._file is None:
            return None
        record: dict = {}
        if step is not None:
            record["step"] = int(step)
        if "epoch" in values:
            record["epoch"] = _plain(values.pop("epoch"))
        record["time"] = round(time.time(), 3)
        record.update((name, _plain(value)) for name, value in values.items())
        self._file.write(json.dumps(record, allow_nan=False) + "\n")
        self._file.flush()
        return record

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> "MetricsWriter":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def _plain(value):
    """A JSON-ready number: tensors and NumPy scalars as Python numbers, NaN and inf as None."""
    if hasattr(value, "item"):  # a one-element tensor or a NumPy scalar
        value = value.item()
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    value = float(value)
    return value if math.isfinite(value) else None


_run_writer: MetricsWriter | None = None
_run_writer_dir: str | None = None


def log(step: int | None = None, **metrics) -> dict | None:
    """Record ``metrics`` at ``step`` as curves of the Workbench run this script is: one line
    for a script of one's own, with no session (``log(step=i, loss=loss, acc=acc)``; tensors
    and NumPy numbers are taken as their values). Outside a Workbench run (no
    ``WORKBENCH_RUN_DIR``) it does nothing, so the script runs the same in a terminal.

    Once a script writes its records this way, Workbench takes its metrics from them (and from
    TensorBoard event files) rather than from its printed lines. Returns the record written."""
    global _run_writer, _run_writer_dir
    run_dir = os.environ.get("WORKBENCH_RUN_DIR")
    if not run_dir:
        return None
    if _run_writer is None or _run_writer_dir != run_dir:
        if _run_writer is not None:
            _run_writer.close()
        _run_writer, _run_writer_dir = MetricsWriter(run_dir), run_dir
    return _run_writer.write(step, **metrics)

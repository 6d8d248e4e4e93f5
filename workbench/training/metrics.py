"""Training metrics: ``metrics.jsonl`` (one JSON object a line) and ``name=value`` log lines.

A record is ``{"step": 120, "time": 1764490000.12, "loss": 0.41, "acc": 0.88}``; evaluation
records carry ``epoch`` and ``val_*`` names. A script that does not write the file prints lines
such as ``step=10 loss=0.52 acc=0.91`` and the supervisor turns them into the same records.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from pathlib import Path
from typing import Iterable

STANDARD_NAMES = ("loss", "acc", "lr", "val_loss", "val_acc", "test_loss", "test_acc")
# Names that place a record (on the x axis) rather than measure something.
POSITION_NAMES = frozenset({"step", "epoch", "time"})

_NAME = r"[A-Za-z_][\w./-]*"
_NUMBER = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf|infinity)"
_PAIR = re.compile(rf"({_NAME})\s*=\s*({_NUMBER})(?![\w.])", re.IGNORECASE)
# What may stand between pairs: spaces, and the commas, bars and semicolons people print.
_FILLER = re.compile(r"[\s,;|]*")


def parse_metric_line(line: str) -> dict | None:
    """The record in a ``step=10 loss=0.52 acc=0.91`` line; None for any other line.

    The whole line must be ``name=number`` pairs (separated by spaces, commas, ``|`` or ``;``)
    and name at least one metric besides step and epoch, so that ordinary log lines that
    happen to hold an ``=`` are not mistaken for metrics. ``step`` and ``epoch`` are ints.
    """
    if "=" not in line:
        return None
    record: dict = {}
    position = _FILLER.match(line).end()
    end = len(line)
    while position < end:
        pair = _PAIR.match(line, position)
        if pair is None:
            return None
        name, text = pair.group(1), pair.group(2)
        value = float(text)
        if name in ("step", "epoch"):
            if not value.is_integer():
                return None
            value = int(value)
        record[name] = value
        position = _FILLER.match(line, pair.end()).end()
    if not any(name not in POSITION_NAMES for name in record):
        return None
    return record


class MetricsTail:
    """Reads the records added to a metrics file since the last call.

    Only complete lines are returned: a line the trainer is still writing is read the next
    time. The file may not exist yet. When it is replaced or cut short (a resume keeps only the
    records up to the checkpoint), reading starts again from the top and ``restarted`` is set
    until the next call, so a curve drawn from earlier records can be cleared first.
    """

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.restarted = False
        self._offset = 0
        self._identity: tuple[int, int] | None = None
        self._pending = b""

    def read_new(self) -> list[dict]:
        """The records of the complete lines written since the last call."""
        self.restarted = False
        try:
            handle = open(self.path, "rb")
        except FileNotFoundError:
            if self._identity is not None:
                self._start_over()
            return []
        with handle:
            status = os.fstat(handle.fileno())
            identity = (status.st_dev, status.st_ino)
            if self._identity is None:
                self._identity = identity
            elif identity != self._identity or status.st_size < self._offset:
                self._start_over()
                self._identity = identity
            if status.st_size == self._offset:
                return []
            handle.seek(self._offset)
            data = handle.read(status.st_size - self._offset)
        self._offset += len(data)
        data = self._pending + data
        cut = data.rfind(b"\n") + 1
        self._pending = data[cut:]
        return parse_records(data[:cut])

    def _start_over(self) -> None:
        self._offset = 0
        self._pending = b""
        self._identity = None
        self.restarted = True


def parse_records(data: bytes | str) -> list[dict]:
    """The records in JSON-lines text; lines that are not JSON objects are skipped."""
    if isinstance(data, bytes):
        data = data.decode("utf-8", errors="replace")
    records = []
    for line in data.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line cut by a crash or a disk that filled up: the rest still counts
        if isinstance(record, dict):
            records.append(record)
    return records


def read_metrics(path: Path | str) -> list[dict]:
    """Every record of a metrics file (complete lines only); [] when there is no file."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return []
    return parse_records(data[: data.rfind(b"\n") + 1])


def final_metrics(source: Path | str | Iterable[dict]) -> dict:
    """The last value of each metric name (and the last step and epoch), from a metrics file or
    from records. ``time`` is left out."""
    records = read_metrics(source) if isinstance(source, (str, Path)) else source
    final: dict = {}
    for record in records:
        for name, value in record.items():
            if name != "time" and _is_number(value):
                final[name] = value
    return final


def update_final(final: dict, records: Iterable[dict]) -> dict:
    """``final`` with the values of ``records`` applied, as :func:`final_metrics` would."""
    return final_metrics([final, *records])


def shown_metric_names(finals: Iterable[dict], preferred: tuple[str, ...], count: int) -> list[str]:
    """The ``count`` metric names a list of runs shows (its few metric columns): the
    ``preferred`` names some run has, then the others by how many runs have them (a project of
    one's own logs ``train_loss`` or ``test_accuracy``, not the template's names), then unused
    preferred names to fill the columns; in ``preferred``'s order first."""
    runs_with: dict[str, int] = {}
    for final in finals:
        for name in final:
            if name not in POSITION_NAMES:
                runs_with[name] = runs_with.get(name, 0) + 1
    names = [name for name in preferred if name in runs_with]
    names += sorted((name for name in runs_with if name not in names), key=lambda name: -runs_with[name])
    names += [name for name in preferred if name not in names]
    return names[:count]


def format_record(record: dict) -> str:
    """One metrics.jsonl line (with its newline); NaN and infinities are written as null."""
    clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()}
    return json.dumps(clean, separators=(",", ":")) + "\n"


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def last_step(path: Path | str):
    """The step of the last record of a metrics file that has one; None when none has."""
    steps = [r["step"] for r in read_metrics(path) if isinstance(r.get("step"), (int, float))]
    return steps[-1] if steps else None


class PrintedMetrics:
    """Makes the records of metrics.jsonl from the metric lines a trainer printed (for the local
    supervisor and a cluster run's mirror alike): step and epoch first, then the time it was
    read, then the values. A line without a step belongs to the step of the line before it."""

    def __init__(self, previous_step=None):
        self.previous_step = previous_step

    def record(self, parsed: dict) -> dict:
        """The record of ``parsed`` (what ``parse_metric_line`` found), stamped now."""
        parsed = dict(parsed)
        if "step" in parsed:
            self.previous_step = parsed["step"]
        elif self.previous_step is not None:
            parsed["step"] = self.previous_step
        ordered = {name: parsed.pop(name) for name in ("step", "epoch") if name in parsed}
        ordered["time"] = round(time.time(), 3)
        ordered.update(parsed)
        return ordered


def keep_metrics_up_to(path: Path, step: int, into: Path | None = None) -> None:
    """Keep the lines of the metrics file ``path`` at or before ``step`` (written to ``into``, or
    back to ``path``); records after the checkpoint would be trained again.

    A line without a step belongs to the step before it. The lines are kept byte for byte."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        data = b""
    kept, last = [], None
    for line in data.splitlines(keepends=True):
        if not line.endswith(b"\n"):
            break  # cut off by a crash: not a record
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("step"), (int, float)):
            last = record["step"]
        if last is None or last <= step:
            kept.append(line)
    target = into or path
    if kept or target.exists():
        from workbench.platform.atomic_files import write_atomically

        write_atomically(target, b"".join(kept))

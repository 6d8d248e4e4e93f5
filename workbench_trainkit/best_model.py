"""The best model of a run by one metric: ``outputs/best.pt`` and ``outputs/best.json``.

Whenever an evaluation logs a value of the chosen metric that beats the best so far, the
model's weights (a state_dict) are written to ``best.pt`` and the record to ``best.json``::

    {"metric": "val_acc", "mode": "max", "value": 0.97, "epoch": 3, "step": 120}

The metric is, first found: ``WORKBENCH_BEST_METRIC`` (``NAME`` or ``NAME:max|min``), the
``[registry] metric`` and ``mode`` of the project's ``workbench.toml``, else ``val_acc`` (max)
when the run logs it, else ``val_loss`` (min). A metric named with "loss" or "error" is lower
for better unless a mode says otherwise; any other, higher.
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from workbench_trainkit.errors import TrainkitError
from workbench_trainkit.hparams import read_project_registry_settings

BEST_METRIC_VARIABLE = "WORKBENCH_BEST_METRIC"
BEST_WEIGHTS_FILE = "best.pt"
BEST_RECORD_FILE = "best.json"
MODES = ("max", "min")
# Without a choice: the first of these a run logs, with its mode.
FALLBACK_METRICS = (("val_acc", "max"), ("val_loss", "min"))


@dataclass(frozen=True)
class BestMetric:
    """Which logged value chooses the best model, and whether higher (max) or lower wins."""

    name: str
    mode: str

    def beats(self, value: float, best: float | None) -> bool:
        if math.isnan(value):
            return False
        if best is None:
            return True
        return value > best if self.mode == "max" else value < best


def default_mode(name: str) -> str:
    """``min`` for a metric whose name says it is a loss or an error, else ``max``."""
    lowered = name.lower()
    return "min" if "loss" in lowered or "error" in lowered else "max"


def chosen_best_metric(project_dir: str | Path | None) -> BestMetric | None:
    """The metric the environment or the project chooses; None leaves it to the fallbacks."""
    chosen = os.environ.get(BEST_METRIC_VARIABLE, "").strip()
    if chosen:
        name, _, mode = (part.strip() for part in chosen.partition(":"))
        return _metric(name, mode, f"{BEST_METRIC_VARIABLE}={chosen}",
                       "write NAME or NAME:max or NAME:min, e.g. val_acc:max")
    settings = read_project_registry_settings(project_dir)
    name = str(settings.get("metric") or "").strip()
    if not name:
        return None
    return _metric(name, str(settings.get("mode") or "").strip(), "[registry] mode of "
                   "workbench.toml", 'set mode = "max" or mode = "min"')


def _metric(name: str, mode: str, where: str, what_to_do: str) -> BestMetric:
    if not name:
        raise TrainkitError(f"{where} names no metric; {what_to_do}")
    if mode and mode not in MODES:
        raise TrainkitError(f"{where}: the mode {mode!r} is neither max nor min; {what_to_do}")
    return BestMetric(name, mode or default_mode(name))


class BestModelKeeper:
    """Keeps ``best.pt`` and ``best.json`` in ``outputs_dir`` for one run (rank 0 only)."""

    def __init__(self, outputs_dir: str | Path, chosen: BestMetric | None):
        self.outputs_dir = Path(outputs_dir)
        self.chosen = chosen
        self.metric: BestMetric | None = chosen
        self.best: float | None = None

    def restore(self) -> None:
        """Take the best so far from ``best.json`` (a resumed run goes on from it)."""
        try:
            record = json.loads((self.outputs_dir / BEST_RECORD_FILE).read_text("utf-8"))
            metric = BestMetric(str(record["metric"]), str(record["mode"]))
            value = float(record["value"])
        except (OSError, ValueError, KeyError, TypeError):
            return  # none yet, or unreadable: the resumed run starts a new record
        if self.chosen is None or self.chosen == metric:
            self.metric, self.best = metric, value

    def offer(self, values: dict[str, float], model, epoch: int, step: int) -> bool:
        """Save ``model`` as the best when ``values`` hold a better value of the metric."""
        if self.metric is None:
            self.metric = next((BestMetric(name, mode) for name, mode in FALLBACK_METRICS
                                if name in values), None)
            if self.metric is None:
                return False
        value = values.get(self.metric.name)
        if value is None or not self.metric.beats(float(value), self.best):
            return False
        return self._write(model, float(value), epoch, step)

    def _write(self, model, value: float, epoch: int, step: int) -> bool:
        import torch

        from workbench_trainkit import checkpoint as checkpoints

        state = checkpoints.unwrap_model(model).state_dict()
        record = {"metric": self.metric.name, "mode": self.metric.mode, "value": value,
                  "epoch": int(epoch), "step": int(step)}
        try:
            # The weights first: best.json never names a value whose weights are not saved.
            checkpoints.write_file_atomically(self.outputs_dir / BEST_WEIGHTS_FILE,
                                              lambda file: torch.save(state, file))
            checkpoints.write_file_atomically(
                self.outputs_dir / BEST_RECORD_FILE,
                lambda file: file.write((json.dumps(record) + "\n").encode("utf-8")))
        except checkpoints.WriteFailed as failure:
            # The best model is a by-product: the run (and its checkpoints) go on without it,
            # and a later value as good tries again.
            print(f"warning: could not save the best model to {self.outputs_dir}: "
                  f"{failure.reason}; the run goes on", file=sys.stderr, flush=True)
            return False
        self.best = value
        return True

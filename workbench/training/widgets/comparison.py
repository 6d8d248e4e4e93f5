"""What a comparison of runs shows: the hyper-parameters that differ and the final metrics.

Qt-free; the compare view only lays these rows out.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

# Standard metric names first, in this order; any other name follows alphabetically.
METRIC_ORDER = ("loss", "acc", "val_loss", "val_acc", "test_loss", "test_acc", "lr")
_MISSING = object()


def differing_hparams(hparams: Sequence[dict]) -> list[tuple[str, list[Any]]]:
    """(key, value in each run) for every key whose value is not the same in all runs; a key a
    run lacks has None there. Keys in alphabetical order."""
    keys = sorted(set().union(*(h.keys() for h in hparams))) if hparams else []
    rows = []
    for key in keys:
        values = [h.get(key, _MISSING) for h in hparams]
        if any(v != values[0] for v in values[1:]):
            rows.append((key, [None if v is _MISSING else v for v in values]))
    return rows


def metric_names(metrics: Iterable[dict]) -> list[str]:
    """The metric names found in any of ``metrics``, standard ones first."""
    names = set()
    for one in metrics:
        names.update(k for k in one if k not in ("step", "epoch", "time"))
    standard = [n for n in METRIC_ORDER if n in names]
    return standard + sorted(names - set(standard))


def format_value(value: Any) -> str:
    """A table cell: floats with 4 significant digits, lists comma-separated, None as "—"."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(format_value(v) for v in value)
    return str(value)

"""TensorBoard event files as metric records: the scalars a script logs with
``torch.utils.tensorboard.SummaryWriter`` (or any TensorBoard writer) become metrics.jsonl records.

The files are read with the ``tensorboard`` package's own incremental loader (EventFileLoader),
which keeps its place in the file and reads a record cut off at the end of a file still being
written again on the next call. Each scalar ``add_scalar(tag, value, global_step)`` becomes
``{"step": global_step, "time": wall time, <name>: value}``; scalars of the same step in a row
share a record.

A tag's name is made to read like the other metrics, so curves and comparisons group it:
lower case, ``/`` and spaces become ``_``, and a part naming a split becomes the prefix the
curves know (``Loss/train`` → ``loss``, ``Loss/test`` → ``test_loss``, ``val/acc`` →
``val_acc``, ``train/lr`` → ``lr``).

tensorboard is imported only when a first event file is read: it costs about half a second,
and most runs write none.
"""

from __future__ import annotations

from pathlib import Path

# The split a tag part names, as the prefix of the metric name the curves group by.
SPLIT_PREFIXES = {"train": "", "training": "", "val": "val_", "valid": "val_", "validation": "val_",
                  "eval": "val_", "test": "test_"}
# Names the records use to place values: a tag with one of them is kept apart.
RESERVED_NAMES = {"step": "tb_step", "time": "tb_time"}


class TensorBoardMissing(Exception):
    """The tensorboard package cannot be imported."""


def metric_name(tag: str) -> str:
    """The metrics.jsonl name of the TensorBoard tag ``tag``."""
    parts = [part.strip().replace(" ", "_").lower() for part in tag.split("/")]
    parts = [part for part in parts if part]
    if not parts:
        return "value"
    splits = [index for index, part in enumerate(parts) if part in SPLIT_PREFIXES]
    if len(parts) > 1 and len(splits) == 1:
        prefix = SPLIT_PREFIXES[parts[splits[0]]]
        name = prefix + "_".join(part for index, part in enumerate(parts) if index != splits[0])
    else:
        name = "_".join(parts)
    return RESERVED_NAMES.get(name, name)


def event_file_loader(path: Path | str):
    """tensorboard's EventFileLoader on ``path``; TensorBoardMissing without the package."""
    try:
        # Leave this import here: see the module docstring.
        from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    except ImportError as exc:
        raise TensorBoardMissing(
            f"the tensorboard package cannot be imported ({exc}); install it in Workbench's environment "
            "(pip install tensorboard) to see the scalars of TensorBoard event files as curves") from None
    return EventFileLoader(str(path))


class EventFileTail:
    """The scalars added to one event file since the last call."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self._loader = None

    def read_new(self) -> list[dict]:
        """Records of the scalars written since the last call (a record cut off at the end of
        the file is read on a later call, once it is whole)."""
        if self._loader is None:
            self._loader = event_file_loader(self.path)
        records: list[dict] = []
        for event in self._loader.Load():
            if not event.HasField("summary"):
                continue
            for value in event.summary.value:
                number = _scalar(value)
                if number is None:
                    continue
                name = metric_name(value.tag)
                last = records[-1] if records else None
                if last is None or last["step"] != event.step or name in last:
                    last = {"step": int(event.step), "time": round(event.wall_time, 3)}
                    records.append(last)
                last[name] = int(number) if name == "epoch" and float(number).is_integer() else number
        return records


def _scalar(value) -> float | None:
    """The number of a scalar summary value; None for images, histograms, text and the rest."""
    import numpy

    if value.HasField("simple_value"):
        return _shortest(numpy.float32(value.simple_value))
    if value.HasField("tensor") and value.metadata.plugin_data.plugin_name == "scalars":
        from tensorboard.util import tensor_util

        array = tensor_util.make_ndarray(value.tensor)
        if array.size == 1:
            return _shortest(array.reshape(-1)[0])
    return None


def _shortest(number) -> float:
    """The number as its own type prints it: a float32 0.1 is 0.1, not 0.10000000149011612."""
    return float(str(number)) if hasattr(number, "dtype") and number.dtype.kind == "f" else float(number)

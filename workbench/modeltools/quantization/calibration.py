"""Calibration data for static quantization, fed to onnxruntime one batch at a time so progress
shows and Cancel works while the calibrator runs."""

from __future__ import annotations

from typing import Callable

import numpy as np

# Samples per calibration run: big enough to keep onnxruntime busy, small enough that the
# calibrator (which keeps every intermediate tensor of a chunk) stays within memory. A CNN's
# activations are some tens of times its input, so a batch holds about a million input values.
CALIBRATION_BATCH = 16
INPUT_VALUES_PER_BATCH = 1_000_000


def batch_size(sample_shape: tuple, most: int = CALIBRATION_BATCH) -> int:
    """Samples per run for inputs of ``sample_shape``: ``most`` for small inputs, fewer (down
    to one) for large images."""
    values = int(np.prod(sample_shape)) if len(sample_shape) else 1
    return max(1, min(most, INPUT_VALUES_PER_BATCH // max(1, values)))


class CalibrationReader:
    """An onnxruntime CalibrationDataReader over the arrays ``x`` (N, ...).

    Each ``get_next`` hands out one batch ``{input_name: batch}`` and reports the fraction done
    through ``on_progress`` (which raises ToolCancelled when the user cancelled, stopping the
    calibrator); ``on_finished`` is called once every batch was handed out. ``__len__`` and
    ``set_range`` let onnxruntime calibrate chunk by chunk (its ``CalibStridedMinMax`` option),
    so only one batch of intermediate tensors is held at a time.
    """

    def __init__(self, input_name: str, x: np.ndarray, batch: int,
                 on_progress: Callable[[float], None] = lambda fraction: None,
                 on_finished: Callable[[], None] = lambda: None):
        self.input_name = input_name
        self.batches = [np.ascontiguousarray(x[i:i + batch], dtype=np.float32)
                        for i in range(0, len(x), batch)]
        self.on_progress = on_progress
        self.on_finished = on_finished
        self._next = 0
        self._end = len(self.batches)
        self._served = 0
        self._finished = False

    def __len__(self) -> int:
        return len(self.batches)

    def set_range(self, start_index: int, end_index: int) -> None:
        self._next, self._end = start_index, min(end_index, len(self.batches))

    def rewind(self) -> None:
        self.set_range(0, len(self.batches))

    def get_next(self) -> dict | None:
        if self._next >= self._end:
            if self._served >= len(self.batches) and not self._finished:
                self._finished = True
                self.on_finished()
            return None
        batch = self.batches[self._next]
        self._next += 1
        self._served += 1
        self.on_progress(self._served / max(1, len(self.batches)))
        return {self.input_name: batch}

    def __iter__(self):
        return self

    def __next__(self) -> dict:
        item = self.get_next()
        if item is None:
            raise StopIteration
        return item

"""Evaluation and calibration data: a project's dataset split, or a ``.npz`` file with arrays
``x`` (inputs) and optionally ``y`` (labels) for a model outside any project."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.modeltools.errors import ModelToolError

if TYPE_CHECKING:
    import numpy as np

SPLITS = ("test", "val", "train")


@dataclass
class EvaluationData:
    """Inputs ``x`` (N, ...) as float32, labels ``y`` (N,) or None, and where they came from."""

    x: np.ndarray
    y: np.ndarray | None
    source: str

    def __len__(self) -> int:
        return len(self.x)

    def take(self, count: int | None) -> "EvaluationData":
        if count is None or count >= len(self.x):
            return self
        return EvaluationData(self.x[:count], None if self.y is None else self.y[:count], self.source)

    def batches(self, size: int):
        for start in range(0, len(self.x), size):
            yield self.x[start:start + size]

    def check_fits(self, input_shape: list, model_path: Path | str) -> None:
        """ModelToolError when a sample's shape does not fit the model's input (dimensions given
        as names or None are free)."""
        sample = tuple(self.x.shape[1:])
        wanted = tuple(input_shape[1:])
        fits = len(sample) == len(wanted) and all(
            not isinstance(w, int) or w <= 0 or w == s for w, s in zip(wanted, sample))
        if not fits:
            shown = ", ".join(str(w) if isinstance(w, int) and w > 0 else "?" for w in wanted)
            raise ModelToolError(
                f"the data from {self.source} has samples of shape {sample}, but {model_path} "
                f"takes ({shown}); give data shaped for this model")


def load_npz(path: Path) -> EvaluationData:
    """The arrays ``x`` and optional ``y`` of an ``.npz`` file; ModelToolError when they are
    missing or do not agree."""
    # Leave this import here: the tools' declarations import SPLITS from this module, and a
    # tool window (which only shows the form and the report) has no use for NumPy.
    import numpy as np

    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except FileNotFoundError:
        raise ModelToolError(f"{path} does not exist") from None
    except Exception as exc:
        raise ModelToolError(
            f"{path} is not a NumPy .npz file ({type(exc).__name__}); save one with "
            "numpy.savez(path, x=inputs, y=labels)") from None
    if "x" not in arrays:
        raise ModelToolError(f"{path} has no array named 'x' (it has {', '.join(arrays) or 'none'}); "
                             "save the inputs as x=..., the labels as y=...")
    x = np.ascontiguousarray(arrays["x"], dtype=np.float32)
    y = arrays.get("y")
    if x.ndim < 2 or len(x) == 0:
        raise ModelToolError(f"{path}: x must hold at least one sample, shaped (N, ...)")
    if y is not None:
        y = np.asarray(y).reshape(-1).astype(np.int64)
        if len(y) != len(x):
            raise ModelToolError(f"{path}: x has {len(x)} samples but y has {len(y)} labels")
    return EvaluationData(x, y, str(path))


def from_project(project: Any, split: str = "test", hparams: Any = None,
                 limit: int | None = None) -> EvaluationData:
    """The samples of one split of the project's dataset (``project`` is a ProjectCode).

    The dataset factory must return an object with ``train`` / ``val`` / ``test`` attributes
    (or keys), each a sequence of ``(input, label)`` pairs, as the digits template's does.
    """
    import numpy as np

    if split not in SPLITS:
        raise ModelToolError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
    hparams = hparams if hparams is not None else project.hparams()
    splits = project.dataset_splits(hparams)
    part = splits.get(split) if isinstance(splits, dict) else getattr(splits, split, None)
    if part is None:
        raise ModelToolError(
            f"the dataset {hparams.get('dataset_name')!r} of {project.root} has no {split!r} "
            "split (its factory should return train / val / test); give a .npz file instead")
    xs, ys = [], []
    for index in range(len(part) if limit is None else min(limit, len(part))):
        sample = part[index]
        image, label = sample[0], sample[1] if len(sample) > 1 else None
        xs.append(np.asarray(image, dtype=np.float32))
        ys.append(None if label is None else int(label))
    if not xs:
        raise ModelToolError(f"the {split} split of {project.root}'s dataset is empty")
    y = None if any(v is None for v in ys) else np.asarray(ys, dtype=np.int64)
    return EvaluationData(np.stack(xs), y, f"{project.root.name}: {split} split")

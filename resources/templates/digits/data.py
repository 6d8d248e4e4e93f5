"""The digits dataset: 1,797 8x8 grey images of handwritten digits, bundled with scikit-learn.

Nothing is downloaded. Pixels are scaled to [0, 1], and the split into train, validation and
test sets is stratified (every digit in the same proportion in each) and fixed by a seed.
Registered as the dataset ``digits``: ``dataset_name=digits`` in the hyper-parameters picks it.

Each image has a sample id, ``digits/0042`` (its index in scikit-learn's dataset);
``sample_ids`` lists them per split, so Workbench can cut dataset versions (workbench.toml's
``[data] samples``), and a run on a version trains on that version's images only.
"""

from dataclasses import dataclass

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch.utils.data import Dataset, TensorDataset
from workbench_trainkit import active_dataset_version, datasets, select_samples

# The raw pixels are integers from 0 (white) to 16 (black).
MAX_PIXEL = 16.0


@dataclass
class DigitsSplits:
    train: Dataset  # a TensorDataset, or a Subset of it on a dataset version
    val: TensorDataset
    test: TensorDataset


def load_images_and_labels() -> tuple[np.ndarray, np.ndarray]:
    """All images as float32 (N, 1, 8, 8) in [0, 1], and their labels as int64 (N,)."""
    digits = load_digits()
    images = (digits.images / MAX_PIXEL).astype(np.float32)[:, None, :, :]
    return images, digits.target.astype(np.int64)


def split_indices(labels: np.ndarray, seed: int, val_fraction: float = 0.15,
                  test_fraction: float = 0.15) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The indices of the (train, val, test) images, stratified by label, fixed by ``seed``."""
    everything = np.arange(len(labels))
    rest, test, rest_y, _ = train_test_split(
        everything, labels, test_size=test_fraction, stratify=labels, random_state=seed)
    # val_fraction is of the whole dataset, so rescale it to what is left after the test split.
    train, val = train_test_split(
        rest, test_size=val_fraction / (1.0 - test_fraction), stratify=rest_y,
        random_state=seed)
    return train, val, test


def sample_id(index: int) -> str:
    """The id of the image at ``index`` of scikit-learn's dataset: ``digits/0042``."""
    return f"digits/{index:04d}"


def sample_ids(hp) -> dict[str, list[str]]:
    """The ids of the training and validation images, in the order ``digits`` gives them."""
    train, val, _ = split_indices(load_digits().target, seed=hp.get("seed", 0))
    return {"train": [sample_id(i) for i in train], "val": [sample_id(i) for i in val]}


@datasets.register("digits")
def digits(hp) -> DigitsSplits:
    """The three splits as datasets of (image, label); chosen by ``dataset_name=digits``.

    On a dataset version (Workbench's --dataset-version) the training set holds only that
    version's images; validation and test stay whole, so runs on versions compare fairly.
    """
    images, labels = load_images_and_labels()
    train, val, test = split_indices(labels, seed=hp.get("seed", 0))

    def dataset(indices) -> TensorDataset:
        return TensorDataset(torch.from_numpy(images[indices]), torch.from_numpy(labels[indices]))

    train_set = select_samples(dataset(train), [sample_id(i) for i in train],
                               active_dataset_version())
    return DigitsSplits(train=train_set, val=dataset(val), test=dataset(test))


if __name__ == "__main__":
    splits = digits({"seed": 0})
    for name in ("train", "val", "test"):
        print(f"{name}: {len(getattr(splits, name))} images")

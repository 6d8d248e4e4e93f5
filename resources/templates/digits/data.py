"""The digits dataset: 1,797 8x8 grey images of handwritten digits, bundled with scikit-learn.

Nothing is downloaded. Pixels are scaled to [0, 1], and the split into train, validation and
test sets is stratified (every digit in the same proportion in each) and fixed by a seed.
Registered as the dataset ``digits``: ``dataset_name=digits`` in the hyper-parameters picks it.
"""

from dataclasses import dataclass

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch.utils.data import TensorDataset
from workbench_trainkit import datasets

# The raw pixels are integers from 0 (white) to 16 (black).
MAX_PIXEL = 16.0


@dataclass
class DigitsSplits:
    train: TensorDataset
    val: TensorDataset
    test: TensorDataset


def load_images_and_labels() -> tuple[np.ndarray, np.ndarray]:
    """All images as float32 (N, 1, 8, 8) in [0, 1], and their labels as int64 (N,)."""
    digits = load_digits()
    images = (digits.images / MAX_PIXEL).astype(np.float32)[:, None, :, :]
    return images, digits.target.astype(np.int64)


def split(images: np.ndarray, labels: np.ndarray, seed: int,
          val_fraction: float = 0.15, test_fraction: float = 0.15):
    """Split into (train, val, test) pairs of (images, labels), stratified by label."""
    rest_x, test_x, rest_y, test_y = train_test_split(
        images, labels, test_size=test_fraction, stratify=labels, random_state=seed)
    # val_fraction is of the whole dataset, so rescale it to what is left after the test split.
    train_x, val_x, train_y, val_y = train_test_split(
        rest_x, rest_y, test_size=val_fraction / (1.0 - test_fraction), stratify=rest_y,
        random_state=seed)
    return (train_x, train_y), (val_x, val_y), (test_x, test_y)


@datasets.register("digits")
def digits(hp) -> DigitsSplits:
    """The three splits as datasets of (image, label); chosen by ``dataset_name=digits``."""
    train, val, test = split(*load_images_and_labels(), seed=hp.get("seed", 0))

    def dataset(pair) -> TensorDataset:
        return TensorDataset(torch.from_numpy(pair[0]), torch.from_numpy(pair[1]))

    return DigitsSplits(train=dataset(train), val=dataset(val), test=dataset(test))


if __name__ == "__main__":
    splits = digits({"seed": 0})
    for name in ("train", "val", "test"):
        print(f"{name}: {len(getattr(splits, name))} images")

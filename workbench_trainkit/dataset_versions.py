"""Dataset versions: train on exactly the samples a version of the dataset names.

Workbench starts a training script on a version with three environment variables:
``WORKBENCH_DATASET_MANIFEST`` (the version's ``train_NNNN.txt``), ``WORKBENCH_DATASET_VERSION``
(``0003``) and ``WORKBENCH_VAL_MANIFEST`` (``val.txt``). A manifest is UTF-8 text: lines that
start with ``#`` are comments, every other non-empty line is one sample, its key optionally
followed by a TAB, its size in bytes, a TAB and its sha256::

    # dataset version 0003
    images/cat/001.png\t48213\t9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
    digits/0042

The key is a file's path in the project (``/`` separators) or, for a dataset built by code, the
sample id the project's ``[data] samples`` function gives. A script keeps the version's samples::

    version = active_dataset_version()          # None when not training on a version
    train_set = select_samples(train_set, ids, version)   # ids[i] is the id of train_set[i]
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from workbench_trainkit.errors import TrainkitError

DATASET_MANIFEST_VARIABLE = "WORKBENCH_DATASET_MANIFEST"
DATASET_VERSION_VARIABLE = "WORKBENCH_DATASET_VERSION"
VAL_MANIFEST_VARIABLE = "WORKBENCH_VAL_MANIFEST"
SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")
MANIFEST_NUMBER = re.compile(r"(\d+)")
SHOWN_MISSING = 5


@dataclass(frozen=True)
class DatasetVersion:
    """One version's training samples: its number (``0003``), manifest file and keys in order.
    ``val_manifest`` is the validation manifest Workbench gave with it, if any."""

    number: str
    manifest: Path
    keys: list[str]
    val_manifest: Path | None = None


def read_manifest(path: str | Path) -> list[str]:
    """The sample keys of a manifest file, in file order; TrainkitError naming the file and
    line of anything damaged."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise TrainkitError(f"the dataset manifest {path} does not exist; cut the dataset "
                            "version again") from None
    except UnicodeDecodeError:
        raise TrainkitError(f"the dataset manifest {path} is not UTF-8 text; it is damaged: "
                            "cut the dataset version again") from None
    except OSError as exc:
        raise TrainkitError(f"cannot read the dataset manifest {path}: "
                            f"{exc.strerror or exc}") from None
    keys: list[str] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip() or line.startswith("#"):
            continue
        key, problem = _manifest_key(line)
        if problem is None and key in first_line:
            problem = f"the sample {key!r} is listed again (first on line {first_line[key]})"
        if problem is not None:
            raise TrainkitError(f"{path}:{number}: {problem}; the manifest is damaged: cut the "
                                "dataset version again, or mend that line")
        first_line[key] = number
        keys.append(key)
    return keys


def _manifest_key(line: str) -> tuple[str, str | None]:
    """The key of one sample line, and what is wrong with the line (None when nothing)."""
    fields = line.split("\t")
    key = fields[0]
    if not key.strip():
        return key, "the line has no sample key before its first TAB"
    if len(fields) == 1:
        return key, None
    if len(fields) != 3:
        return key, (f"a sample line is KEY or KEY<TAB>SIZE<TAB>SHA256, but this one has "
                     f"{len(fields)} TAB-separated fields")
    size, digest = fields[1].strip(), fields[2].strip()
    if not size.isdigit():
        return key, f"the size {size!r} is not a whole number of bytes"
    if not SHA256.match(digest):
        return key, f"{digest!r} is not a sha256 (64 hexadecimal digits)"
    return key, None


def active_dataset_version() -> DatasetVersion | None:
    """The dataset version this run trains on, from the environment Workbench sets; None when
    the run trains on the whole dataset."""
    manifest = os.environ.get(DATASET_MANIFEST_VARIABLE, "").strip()
    if not manifest:
        return None
    path = Path(manifest)
    number = os.environ.get(DATASET_VERSION_VARIABLE, "").strip()
    if not number:
        found = MANIFEST_NUMBER.findall(path.stem)
        number = found[-1] if found else path.stem
    if not path.is_file():
        raise TrainkitError(f"dataset version {number}: its manifest {path} is missing; cut "
                            "the version again, or train without --dataset-version")
    val_manifest = os.environ.get(VAL_MANIFEST_VARIABLE, "").strip()
    return DatasetVersion(number=number, manifest=path, keys=read_manifest(path),
                          val_manifest=Path(val_manifest) if val_manifest else None)


def select_samples(dataset, sample_ids: Sequence[str], version: DatasetVersion | None):
    """The items of ``dataset`` whose ids are in ``version``, in dataset order, as a
    ``torch.utils.data.Subset``; ``dataset`` itself when ``version`` is None.

    ``sample_ids[i]`` is the id of ``dataset[i]``. A version naming ids the dataset does not
    have is a TrainkitError (the data changed since the version was cut).
    """
    if version is None:
        return dataset
    from torch.utils.data import Subset  # here: reading a manifest should not import torch

    if len(sample_ids) != len(dataset):
        raise TrainkitError(f"{len(sample_ids)} sample ids were given for a dataset of "
                            f"{len(dataset)} items; give one id per item, in the dataset's order")
    known = set(sample_ids)
    missing = [key for key in version.keys if key not in known]
    if missing:
        shown = ", ".join(missing[:SHOWN_MISSING]) + (", ..." if len(missing) > SHOWN_MISSING
                                                      else "")
        raise TrainkitError(
            f"dataset version {version.number} names {len(missing)} "
            f"{'sample' if len(missing) == 1 else 'samples'} the dataset does not have ({shown}); the data changed since the version was cut: cut a new "
            "version, or train without --dataset-version")
    wanted = set(version.keys)
    return Subset(dataset, [index for index, sample_id in enumerate(sample_ids)
                            if sample_id in wanted])


__all__ = ["DATASET_MANIFEST_VARIABLE", "DATASET_VERSION_VARIABLE", "VAL_MANIFEST_VARIABLE",
           "DatasetVersion", "read_manifest", "active_dataset_version", "select_samples"]

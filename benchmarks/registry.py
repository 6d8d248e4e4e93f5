"""What versions cost, printed as one JSON object.

- ``dataset_version_ratio``: cutting a dataset version of a [data] train folder of 100,000 small
  files (16 KB each, a small JPEG or a second of 8 kHz audio), 1 % of them changed since the last
  cut (which filled the hash cache), over hashing every one of those files again (``hash_file``
  on each), timed in the same run. Goal: at most 0.1 — the cache means a cut reads only what
  changed. ``dataset_version_ratio_tiny`` is the same with 256-byte files, where hashing a file
  costs about what looking at its size and time does: it shows the floor (a cut must stat every
  file to see which changed).
- ``register_s``: registering a 50 MB model version from a run folder (hard links, so the time
  is hashing the file and writing the record).
- ``retention_ok``: 50 model versions, some pinned, some aliased, some with weights identical to
  an earlier version's; after a gc with version_max = 5 exactly the files an independent count
  (written here, not plan_retention) says must stay are in the models folder.

Run: python benchmarks/registry.py [--files N] [--model-mb N]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from workbench.platform.file_hashes import hash_file
from workbench.registry import open_versions

VERSIONS = 50
VERSION_MAX = 5
PINNED = {3, 17, 30}
ALIASED = {"production": 12, "staging": 44, "canary": 3}
# Versions whose weights are the same bytes as an earlier version's (a run that did not improve
# on its starting point): each links the first one's file under its own name, no second copy.
SAME_WEIGHTS_AS = {9: 2, 13: 12, 20: 2, 46: 12, 47: 40, 48: 3, 49: 41}


def make_data(root: Path, files: int, file_bytes: int) -> list[Path]:
    paths = []
    for index in range(files):
        folder = root / "data" / "train" / f"shard_{index // 1000:03d}"
        if index % 1000 == 0:
            folder.mkdir(parents=True)
        path = folder / f"sample_{index:06d}.bin"
        path.write_bytes(index.to_bytes(4, "little") * (file_bytes // 4))
        paths.append(path)
    return paths


def time_dataset_versions(root: Path, files: int, file_bytes: int) -> dict:
    paths = make_data(root, files, file_bytes)
    datasets = open_versions(root, {"data": {"train": "data/train"}}, python=sys.executable).datasets
    datasets.cut(reason="first")                       # fills the hash cache
    changed = paths[::100]                             # 1 %
    for path in changed:
        path.write_bytes(path.read_bytes() + b"changed")
    began = time.perf_counter()
    result = datasets.cut(reason="1 % changed")
    cut_s = time.perf_counter() - began
    began = time.perf_counter()
    for path in paths:
        hash_file(path)
    rehash_s = time.perf_counter() - began
    assert result.hashed == len(changed) and len(result.changes.changed) == len(changed), result.hashed
    return {"files": files, "file_bytes": file_bytes, "changed": len(changed), "hashed": result.hashed,
            "cut_s": round(cut_s, 3), "full_rehash_s": round(rehash_s, 3),
            "dataset_version_ratio": round(cut_s / rehash_s, 3)}


def time_registration(root: Path, megabytes: int) -> dict:
    run = root / "runs" / "big"
    run.mkdir(parents=True)
    weights = run / "best.pt"
    with open(weights, "wb") as out:
        for _ in range(megabytes):
            out.write(os.urandom(1 << 20))
    models = open_versions(root, {"registry": {"folder": "big-registry"}}, python=sys.executable).models
    began = time.perf_counter()
    version = models.register([(weights, "best weights")], {"run": "big"}, run_folder=run).version
    register_s = time.perf_counter() - began
    linked = os.stat(models.folder / version.files[0].name).st_ino == os.stat(weights).st_ino
    return {"model_mb": megabytes, "register_s": round(register_s, 3), "register_hard_linked": linked}


def expected_after_gc() -> set[str]:
    """The files that must stay, counted from the rules: the newest VERSION_MAX, pinned and
    aliased versions stay, each with its own files (weights identical to an earlier version's
    are a link under the later version's name)."""
    staying = set(range(VERSIONS - VERSION_MAX, VERSIONS)) | PINNED | set(ALIASED.values())
    names = {".gitignore"}
    for number in staying:
        names.add(f"bestmodel_{number:04d}.pt")
        names.add(f"bestmodel_{number:04d}.onnx")
        names.add(f"neural_net_info_{number:04d}.yaml")
    return names


def weights_whole(folder: Path) -> bool:
    """Every staying version's weights are the bytes its run wrote (a shared file outlives the
    removal of the version it came from)."""
    for path in folder.glob("bestmodel_*.pt"):
        number = int(path.name[len("bestmodel_"):].split(".")[0])
        expected = f"weights of version {SAME_WEIGHTS_AS.get(number, number)}".encode() * 100
        if path.read_bytes() != expected:
            return False
    return True


def check_retention(root: Path) -> dict:
    settings = {"registry": {"folder": "retention-registry", "version_max": VERSIONS}}
    models = open_versions(root, settings, python=sys.executable).models
    for number in range(VERSIONS):
        run = root / "runs" / f"run-{number:02d}"
        run.mkdir(parents=True)
        (run / "best.pt").write_bytes(f"weights of version {SAME_WEIGHTS_AS.get(number, number)}".encode() * 100)
        (run / "model.onnx").write_bytes(f"graph of version {number}".encode())
        version = models.register([(run / "best.pt", "best weights"), (run / "model.onnx", "onnx")],
                                  {"run": run.name}, run_folder=run).version
        assert version.number == number, version.number
    for number in PINNED:
        models.pin(number)
    for alias, number in ALIASED.items():
        models.set_alias(alias, number)
    settings["registry"]["version_max"] = VERSION_MAX
    report = open_versions(root, settings, python=sys.executable).models.gc()
    present = {path.name for path in models.folder.iterdir()}
    expected = expected_after_gc()
    return {"retention_ok": present == expected and weights_whole(models.folder),
            "retention_versions_removed": len(report.plan.remove),
            "retention_files_removed": len(report.plan.files_removed),
            "retention_unexpected": sorted(present - expected), "retention_missing": sorted(expected - present)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000, help="sample files in the train folder")
    parser.add_argument("--file-kb", type=int, default=16, help="size of each sample file")
    parser.add_argument("--model-mb", type=int, default=50, help="size of the model registered")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wb-registry-") as folder:
        root = Path(folder)
        report = time_dataset_versions(root / "samples", args.files, args.file_kb * 1024)
        tiny = time_dataset_versions(root / "tiny", args.files, 256)
        report.update({"dataset_version_ratio_tiny": tiny["dataset_version_ratio"], "cut_tiny_s": tiny["cut_s"],
                       "full_rehash_tiny_s": tiny["full_rehash_s"]})
        report.update(time_registration(root, args.model_mb))
        report.update(check_retention(root))
    print(json.dumps(report))


if __name__ == "__main__":
    main()

"""A project folder with files data (data/train, data/val) and a run folder with model files,
all real files in tmp_path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from workbench.registry import open_versions


def write_sample(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def make_project(root: Path, train: int = 20, val: int = 5, registry: dict | None = None) -> dict:
    """Files in data/train and data/val; the parsed workbench.toml the registry reads."""
    for index in range(train):
        write_sample(root / "data" / "train" / f"class_{index % 3}" / f"sample_{index:03d}.txt", f"train {index}\n")
    for index in range(val):
        write_sample(root / "data" / "val" / f"sample_{index:03d}.txt", f"val {index}\n")
    return {"data": {"train": "data/train", "val": "data/val"}, "registry": dict(registry or {})}


def open_project(root: Path, settings: dict):
    return open_versions(root, settings, python=sys.executable)


@pytest.fixture
def project(tmp_path):
    """(project folder, its settings); open it with open_project."""
    root = tmp_path / "project"
    root.mkdir()
    return root, make_project(root)


def make_run(root: Path, name: str, payload: bytes, extra: dict[str, bytes] | None = None) -> tuple[Path, list]:
    """A run folder with best.pt (``payload``) and any ``extra`` files; the file list register takes."""
    run = root / "runs" / name
    run.mkdir(parents=True)
    (run / "best.pt").write_bytes(payload)
    files = [(run / "best.pt", "best weights (val_acc)")]
    for file_name, data in (extra or {}).items():
        (run / file_name).write_bytes(data)
        files.append((run / file_name, file_name.split(".", 1)[1]))
    return run, files


def register_run(models, root: Path, name: str, payload: bytes, extra: dict[str, bytes] | None = None, **info):
    run, files = make_run(root, name, payload, extra)
    return models.register(files, {"run": name, "metrics": {"val_acc": 0.5}, **info}, run_folder=run)

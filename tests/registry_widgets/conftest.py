"""A project whose model registry the service built from real run folders (four versions with
metrics, a dataset version, an ONNX export, a pin, two aliases and device verifications), and
the Registry panel shown over it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.dock_panels import finish, screenshot, show_panel  # noqa: F401 (show_panel: a fixture)
from tests.modeltools_widgets.conftest import make_onnx

TIMEOUT_MS = 30_000
PROJECT_FILE = '[project]\nname = "versions"\n\n[registry]\nmetric = "val_acc"\nversion_max = 5\n'
# (val_acc, val_loss, dataset version) of versions 0000..0003
METRICS = ((0.71, 0.90, "0000"), (0.78, 0.70, "0000"), (0.83, 0.55, "0001"), (0.80, 0.60, "0001"))


def open_models(root: Path):
    """The project's model registry, as the command line and training open it."""
    from workbench.registry import open_versions

    return open_versions(root, python=sys.executable).models


def register(root: Path, name: str, val_acc: float, val_loss: float, dataset: str, onnx: bool = False,
             in_run: bool = True):
    """Register run ``name``'s best.pt (and an ONNX export) as the next version."""
    run = root / "runs" / name
    run.mkdir(parents=True)
    (run / "best.pt").write_bytes(f"weights of {name}".encode() * 500)
    files = [(run / "best.pt", "best weights (val_acc)")]
    if onnx:
        files.append((make_onnx(run / "model.onnx"), "onnx export"))
    info = {"metrics": {"val_acc": val_acc, "val_loss": val_loss, "step": 300}, "dataset_version": dataset,
            "run": {"id": name, "folder": str(run)}}
    return open_models(root).register(files, info, run_folder=run if in_run else None).version


@pytest.fixture
def registry_project(tmp_path) -> Path:
    root = tmp_path / "versions"
    root.mkdir()
    (root / "workbench.toml").write_text(PROJECT_FILE, encoding="utf-8")
    for index, (val_acc, val_loss, dataset) in enumerate(METRICS):
        # The first is a copy (registered from outside its run folder), so removing it frees space.
        register(root, f"run-{index}", val_acc, val_loss, dataset, onnx=index == 2, in_run=index != 0)
    models = open_models(root)
    models.pin(1)
    models.set_alias("production", 2, "passed QA")
    models.set_alias("staging", 3, "candidate")
    models.record_verification(2, {"device": "pixel-7", "passed": True, "latency_ms": 4.1})
    models.record_verification(2, {"device": "rpi4", "passed": False})
    return root


@pytest.fixture
def make_panel(show_panel):
    """``make_panel(root) -> (panel, errors)``: a shown Registry panel over ``root`` with a
    command registry of its own; ``errors`` collects what it showed as errors."""
    from workbench.project import load_project
    from workbench.registry.widgets.registry_panel import RegistryPanel
    from workbench.ui.commands import CommandRegistry

    def make(root: Path):
        errors: list[str] = []
        panel = show_panel(lambda tasks: RegistryPanel(root, lambda: load_project(root).settings, tasks,
                                                       CommandRegistry(), errors.append), (1100, 420))
        return panel, errors

    return make

"""A project with a [pipeline] declaration and iteration records written by the pipeline's own
record classes (no training): 0000 done, 0001 done, 0002 failed at its gate by an amount, and the
Pipeline panel shown over it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.dock_panels import finish, screenshot, show_panel  # noqa: F401 (show_panel: a fixture)

TIMEOUT_MS = 20_000
PROJECT_FILE = ('[project]\nname = "loop"\n\n[registry]\nmetric = "val_acc"\n\n'
                '[[pipeline.steps]]\ntool = "gate"\nmin_accuracy = 50\n')
# (val_acc, samples, gate passed) of iterations 0000..0002
HISTORY = ((0.81, 900, True), (0.88, 1200, True), (0.86, 1500, False))


def iteration_record(version: str, val_acc: float, samples: int, passed: bool, start: float):
    """An iteration of dataset → train → convert → gate → deploy as the service records it."""
    from workbench.pipeline.iterations import Iteration, StepState

    def step(index, tool, state, outputs=None, error="", params=None):
        return StepState(index, tool, params or {}, state, start + index * 10, start + index * 10 + 8,
                         outputs or {}, error)

    gate = {"gate": "max_size_mb", "value": 2.3 if not passed else 1.2, "limit": 2.0, "passed": passed,
            "by": None if passed else 0.3,
            "text": "max_size_mb: size of model.onnx 2.300 MB is over the 2 MB allowed, by 0.300 MB" if not passed
            else "max_size_mb: size of model.onnx 1.200 MB, at most 2 MB allowed"}
    steps = [step(0, "dataset", "done", {"dataset_version": version, "samples": samples}),
             step(1, "train", "done", {"run_id": f"run-{version}", "model_version": version,
                                       "metrics": {"val_acc": val_acc, "val_loss": 1 - val_acc, "step": 300}},
                  params={"epochs": 1}),
             step(2, "convert", "done", {"files": [f"/p/registry/models/bestmodel_{version}.onnx"],
                                         "model_file": f"/p/registry/models/bestmodel_{version}.onnx"}),
             step(3, "gate", "done" if passed else "failed", {"results": [gate]},
                  "" if passed else f"gate {gate['text']}", params={"max_size_mb": 2}),
             step(4, "deploy", "done" if passed else "skipped",
                  {"alias": "production", "model_version": version} if passed else {})]
    if not passed:
        steps[4].started_at = steps[4].ended_at = None
    return Iteration(version, steps, "done" if passed else "failed", start, start, start + 50,
                     "" if passed else f"step 4 (gate) failed: gate {gate['text']}", None if passed else 3)


def write_iteration(root: Path, iteration) -> None:
    from workbench.pipeline.iterations import IterationStore

    IterationStore(root / "registry").write(iteration)


@pytest.fixture
def pipeline_project(tmp_path) -> Path:
    root = tmp_path / "loop"
    root.mkdir()
    (root / "workbench.toml").write_text(PROJECT_FILE, encoding="utf-8")
    start = time.time() - 3600
    for index, (val_acc, samples, passed) in enumerate(HISTORY):
        write_iteration(root, iteration_record(f"{index:04d}", val_acc, samples, passed, start + index * 100))
    run = root / "runs" / "run-0001"
    run.mkdir(parents=True)
    (run / "stdout.log").write_text("epoch 1/1 val_acc=0.88\ntraining done\n", encoding="utf-8")
    return root


class LaunchedCommands:
    """Stands where the detached process is started: keeps what it was asked to run."""

    def __init__(self):
        self.asked: list[tuple[str, list, Path, Path]] = []

    def __call__(self, module, args, log, cwd) -> None:
        self.asked.append((module, list(args), Path(log), Path(cwd)))


@pytest.fixture
def make_panel(show_panel):
    """``make_panel(root, launcher=None) -> (panel, errors)``: a shown Pipeline panel over
    ``root``; ``errors`` collects what it showed as errors."""
    from workbench.pipeline.widgets.pipeline_panel import PipelinePanel

    def make(root: Path, launcher=None):
        errors: list[str] = []
        options = {"launcher": launcher} if launcher is not None else {}
        panel = show_panel(lambda tasks: PipelinePanel(root, tasks, errors.append, **options), (1100, 560))
        return panel, errors

    return make

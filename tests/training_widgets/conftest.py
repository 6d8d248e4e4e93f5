"""Fixtures of the Runs panel tests: a small project whose training script is a real child
process (it prints metric lines, checkpoints on SIGTERM and can fail on purpose), and project
windows over it with their capabilities installed."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from tests.project_windows import ProjectWindows

TIMEOUT_MS = 30_000

TOY_SCRIPT = textwrap.dedent('''\
    """A training script that does not use workbench_trainkit: it prints its metrics."""
    import json, math, os, signal, sys, time
    from pathlib import Path

    def read_hparams(argv):
        values = {"num_epochs": "3", "learning_rate": "0.01", "step_seconds": "0.02", "fail": "false"}
        if "--hparams" in argv:
            for line in Path(argv[argv.index("--hparams") + 1]).read_text().splitlines():
                line = line.split("#", 1)[0].strip()
                if "=" in line:
                    key, value = line.split("=", 1)
                    values[key.strip()] = value.strip()
        return values

    def explode():
        raise RuntimeError("the model diverged")

    hp = read_hparams(sys.argv)
    run_dir = Path(os.environ.get("WORKBENCH_RUN_DIR", "."))
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    step = 0
    resume = os.environ.get("WORKBENCH_RESUME_FROM")
    if resume:
        step = json.loads(Path(resume).read_text())["step"]
        print(f"resumed at step {step}", flush=True)
    lr = float(hp["learning_rate"])
    total = int(hp["num_epochs"]) * 10
    while step < total:
        step += 1
        print(f"step={step} loss={2 * math.exp(-step * lr * 10):.5f} acc={1 - math.exp(-step / 8):.4f} lr={lr}",
              flush=True)
        if step % 10 == 0:
            print(f"epoch={step // 10} val_loss={2 * math.exp(-step * lr * 10) + 0.1:.5f} "
                  f"val_acc={0.9 - math.exp(-step / 8):.4f}", flush=True)
        if hp["fail"] == "true" and step == 3:
            explode()
        if stopping:
            break
        time.sleep(float(hp["step_seconds"]))
    if stopping:
        checkpoints = run_dir / "checkpoints"
        checkpoints.mkdir(exist_ok=True)
        name = f"step-{step:08d}.pt"
        (checkpoints / name).write_text(json.dumps({"step": step}))
        (checkpoints / "latest.json").write_text(json.dumps({"file": name, "step": step, "epoch": step // 10}))
        print(f"stopped at step {step}", flush=True)
''')

TOY_SETTINGS = textwrap.dedent('''\
    [project]
    name = "toy"
    main = "train.py"

    [training]
    script = "train.py"
    hparams = "toy.hparams"

    [training.keys]
    step_seconds = { type = "float", default = 0.02, min = 0, help = "how long a step takes" }
    fail = { type = "bool", default = false, help = "raise an exception at step 3" }
''')


def explode_line() -> int:
    """The line of ``raise`` in the toy script (what a traceback link must open)."""
    return next(i for i, line in enumerate(TOY_SCRIPT.splitlines(), 1) if "raise RuntimeError" in line)


@pytest.fixture
def toy_project(tmp_path) -> Path:
    root = tmp_path / "toy"
    root.mkdir()
    (root / "workbench.toml").write_text(TOY_SETTINGS)
    (root / "train.py").write_text(TOY_SCRIPT)
    (root / "toy.hparams").write_text("# a toy run\nnum_epochs=3\nlearning_rate=0.01\n")
    return root


@pytest.fixture
def open_window(qtbot):
    """``open_window(root) -> window``: a window on ``root`` whose Runs panel has listed the runs.
    Runs still active at the end of the test are terminated (they outlive windows)."""
    windows = ProjectWindows(qtbot, TIMEOUT_MS)
    yield windows.open

    def end_run(service, info) -> None:
        from workbench.training import TrainingError

        try:
            service.terminate(info.id)
        except TrainingError:
            if service.get(info.id).is_active:  # else it ended by itself since it was listed
                raise
        service.wait(info.id, timeout=10)

    windows.close(end_run)


def wait_for(qtbot, predicate, timeout: int = TIMEOUT_MS) -> None:
    qtbot.waitUntil(lambda: bool(predicate()), timeout=timeout)


def finish(qtbot, operation):
    """Wait for an ``Operation`` a command returned; its error fails the test."""
    assert operation is not None
    wait_for(qtbot, lambda: operation.finished)
    assert operation.error is None, str(operation.error)
    return operation.result


def run_state(window, run_id: str) -> str | None:
    from workbench.training.widgets import session_of

    row = session_of(window).row(run_id)
    return row.info.state if row is not None else None


os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

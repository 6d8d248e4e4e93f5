"""Helpers for the training-helper tests: hyper-parameters, a tiny project, running its script.

The scripts run as real child processes (the way Workbench runs them) with one OpenMP thread,
so they are quick and repeatable on a busy machine.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from workbench_trainkit.hparams import HParams
from workbench_trainkit.schema import FASTNN_SCHEMA

REPO = Path(__file__).resolve().parents[2]
TINY_SCRIPT = Path(__file__).with_name("tiny_train.py")

TINY_HPARAMS = """\
# A schedule with warm-up and decay and an optimizer with state, so resuming has work to do.
optimizer=momentum
learning_rate=0.1
warmup_steps=3
learning_rate_decay_type=exponential
learning_rate_decay_factor=0.5
decay_scheme=luong5
num_epochs=3
batch_size=16
log_loss_every_n_iters=1
seed=7
"""

TINY_PROJECT_FILE = """\
[project]
name = "tiny"

[training]
script = "train.py"
hparams = "hparams/tiny.hparams"

[training.keys]
seed = { type = "int", default = 0, min = 0 }
"""


def make_hparams(**values) -> HParams:
    """FastNN's defaults with ``values`` on top, as load_hparams would give them."""
    return HParams({**FASTNN_SCHEMA.defaults(), **values})


@pytest.fixture
def tiny_project(tmp_path) -> Path:
    """A project folder with the tiny training script as train.py and its hparams file."""
    project = tmp_path / "tiny"
    (project / "hparams").mkdir(parents=True)
    shutil.copy(TINY_SCRIPT, project / "train.py")
    (project / "workbench.toml").write_text(TINY_PROJECT_FILE)
    (project / "hparams" / "tiny.hparams").write_text(TINY_HPARAMS)
    return project


def child_environment(**variables) -> dict:
    """os.environ without any run of our own, plus ``variables``; the helpers importable."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("WORKBENCH_RUN") and name != "WORKBENCH_RESUME_FROM"}
    env.update(PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    env.update({name: str(value) for name, value in variables.items()})
    return env


def run_script(project: Path, *args: str, env: dict | None = None, script: str = "train.py",
               timeout: float = 90) -> subprocess.CompletedProcess:
    """Run ``script`` in ``project`` with the venv's Python, as Workbench would."""
    return subprocess.run([sys.executable, script, *args], cwd=project,
                          env=child_environment(**(env or {})), capture_output=True, text=True,
                          timeout=timeout)


def torchrun_command(nproc: int, script: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc_per_node={nproc}", script, *args]


def read_metrics(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def losses_by_step(records: list[dict]) -> dict[int, float]:
    return {record["step"]: record["loss"] for record in records if "loss" in record}


@pytest.fixture
def small_disk():
    """A 1 MB tmpfs, mounted for the test (needs root, as CI has)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root (CI runs as root)")
    mount_point = Path(tempfile.mkdtemp(prefix="wb-full-"))
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount_point)],
                             capture_output=True)
    if mounted.returncode != 0:
        mount_point.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)
        mount_point.rmdir()

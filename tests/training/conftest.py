"""Projects with a small trainer (no torch) for run tests, in real git repositories."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest

from tests.git.conftest import GIT_ENV, git, git_identity, make_repo  # noqa: F401  (fixtures)
from tests.waiting import wait_until as wait_for  # noqa: F401  (the training tests' name for it)

HERE = Path(__file__).resolve().parent

PROJECT_TOML = """\
[project]
name = "tiny"

[training]
script = "train.py"
hparams = "hparams/tiny.hparams"

[training.keys]
step_seconds = { type = "float", default = 0.02, min = 0, help = "sleep per step" }
fail_at_step = { type = "int", default = 0, min = 0 }
ignore_sigterm = { type = "bool", default = false }
spawn_child = { type = "bool", default = false }
write_metrics_file = { type = "bool", default = false }
startup_seconds = { type = "float", default = 0, min = 0, help = "sleep before catching SIGTERM" }
fail_message = { type = "str", default = "", help = "at fail_at_step: print this (no newline), exit 2" }
"""


def make_project(root: Path, hparams: str = "stop_at_step=20\n") -> Path:
    """A training project at ``root`` (created if needed) whose script is fake_trainer.py."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "workbench.toml").write_text(PROJECT_TOML)
    shutil.copyfile(HERE / "fake_trainer.py", root / "train.py")
    (root / "hparams").mkdir(exist_ok=True)
    (root / "hparams" / "tiny.hparams").write_text(hparams)
    return root


@pytest.fixture
def project(tmp_path) -> Path:
    return make_project(tmp_path / "tiny")


@pytest.fixture
def service(project):
    from workbench.training import RunService

    svc = RunService(project)
    yield svc
    # No run outlives its test: kill what is left of every run's process group.
    for info in svc.list_runs():
        if info.is_active:
            try:
                svc.terminate(info.id)
            except Exception:
                pass


def process_alive(pid: int) -> bool:
    from workbench.platform.processes import process_start

    return process_start(pid) is not None


def kill_quietly(pid: int, sig=signal.SIGKILL) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass

"""Every test runs offscreen, with its own runtime folder (hub socket, locks) and config folder,
so tests never meet a hub or a recent-projects list of the person running them."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# Real services as session fixtures, requested by name (sshd_server, slurm_cluster, slurm_over_ssh, …).
pytest_plugins = ["tests.services.sshd", "tests.services.slurm"]


@pytest.fixture(autouse=True)
def private_workbench_folders(monkeypatch, tmp_path):
    # Unix socket paths are limited to 107 bytes: pytest's tmp_path can be longer.
    runtime = tempfile.mkdtemp(prefix="wb-", dir="/tmp")
    monkeypatch.setenv("WORKBENCH_RUNTIME_DIR", runtime)
    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(tmp_path / "config"))
    yield
    shutil.rmtree(runtime, ignore_errors=True)


# pytest-qt waits 5 s unless told otherwise: short on a loaded two-core CI machine, where what a
# test waits for often starts a process first (git, a kernel, a language server, a window). A
# wait ends as soon as its condition holds, so a longer limit costs a passing test nothing.
PATIENT_WAIT_MS = 30_000


@pytest.fixture
def qtbot(qtbot):
    """pytest-qt's qtbot, whose waits give up after PATIENT_WAIT_MS unless a test says otherwise."""
    for name in ("waitUntil", "waitSignal", "waitSignals", "waitCallback"):
        setattr(qtbot, name, functools.partial(getattr(qtbot, name), timeout=PATIENT_WAIT_MS))
    return qtbot

"""What the device tests share: real agents (``python -m workbench_device.agent``) started as child
processes on free ports, each with its own data folder (``tests.services.device_agent``); the
in-memory keyring of the cluster tests for this process (and a file-backed twin of it for the
``workbench device`` commands run as child processes); Workbench's config and data folders
private to each test; mDNS kept on loopback; and the trained digits model of the model tools'
tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# The in-memory keyring for every test here (autouse), and the digits fixtures.
from tests.cluster.conftest import private_keyring_and_agent  # noqa: F401
from tests.device.keyring_file import KEYRING_FILE_ENV
from tests.modeltools.conftest import (  # noqa: F401
    RUN_ID,
    digits_npz,
    digits_onnx,
    digits_project,
    trained_digits_project,
)
from tests.services.device_agent import AgentProcess, free_port  # noqa: F401

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def private_device_folders(monkeypatch, tmp_path):
    """Workbench's data folder in the test's temporary folder (the root conftest does the
    config folder), mDNS on loopback only, and the keyring file child processes share."""
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("WORKBENCH_MDNS_INTERFACES", "127.0.0.1")
    monkeypatch.setenv(KEYRING_FILE_ENV, str(tmp_path / "test-keyring.json"))
    yield
    from workbench.device.serve_local import stop_local

    stop_local()  # an agent `serve-local` started in this test


@pytest.fixture
def start_agent(tmp_path):
    """``start_agent(name="Phone", mdns=False) -> AgentProcess``: a running agent on a free
    loopback port with its own data folder; stopped after the test."""
    started: list[AgentProcess] = []

    def start(name: str | None = None, mdns: bool = False, *args: str) -> AgentProcess:
        agent = AgentProcess(tmp_path / "agents" / f"agent{len(started)}",
                             name or f"Test Phone {len(started) + 1}", mdns, *args)
        started.append(agent)
        return agent

    yield start
    for agent in started:
        agent.stop()


def cli_env(**extra: str) -> dict:
    """The environment of a ``workbench device`` child process: this test's folders and a
    keyring shared with the test's other child processes."""
    env = dict(os.environ)
    env["PYTHON_KEYRING_BACKEND"] = "tests.device.keyring_file.FileKeyring"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


def run_cli(*args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    """``workbench device ARGS…`` in a new process."""
    return subprocess.run([sys.executable, "-m", "workbench", "device", *args],
                          capture_output=True, text=True, timeout=timeout, env=cli_env(**env),
                          stdin=subprocess.DEVNULL)


def run_cli_json(*args: str, timeout: float = 120) -> dict:
    done = run_cli(*args, "--json", timeout=timeout)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)

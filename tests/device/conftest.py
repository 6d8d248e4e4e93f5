"""What the device tests share: real agents (``python -m workbench_device.agent``) started as child
processes on free ports, each with its own data folder; the in-memory keyring of the cluster
tests for this process (and a file-backed twin of it for the ``workbench device`` commands run
as child processes); Workbench's config and data folders private to each test; mDNS kept on
loopback; and the trained digits model of the model tools' tests."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
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


class AgentProcess:
    """An agent in a process of its own, its stdout read as it comes: ``port``, ``code`` (the
    latest pairing code), ``device_id``, ``name``."""

    def __init__(self, data_dir: Path, name: str, mdns: bool = False, *args: str):
        data_dir.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "workbench_device.agent", "--port", "0", "--data-dir",
                   str(data_dir), "--json", "--name", name, *args]
        if not mdns:
            command.append("--no-mdns")
        self.data_dir = data_dir
        self._stderr = open(data_dir.parent / f"{data_dir.name}.stderr", "w")
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self._stderr,
                                        stdin=subprocess.DEVNULL, text=True)
        self.lines: "queue.Queue[str]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        listening = self._next_event("listening")
        self.port = int(listening["port"])
        self.device_id = listening["device_id"]
        self.name = listening["name"]
        self._code = listening["pairing_code"]

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def _next_event(self, event: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"the agent printed no {event!r} line; stderr: "
                                     f"{Path(self._stderr.name).read_text()[-2000:]}") from None
            if line.startswith("{"):
                data = json.loads(line)
                if data.get("event") == event:
                    return data

    @property
    def code(self) -> str:
        """The pairing code the agent printed last."""
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                return self._code
            if line.startswith("{"):
                data = json.loads(line)
                if data.get("event") == "pairing_code":
                    self._code = data["pairing_code"]

    def wrong_code(self) -> str:
        return f"{(int(self.code) + 1) % 1_000_000:06d}"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self._stderr.close()


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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]

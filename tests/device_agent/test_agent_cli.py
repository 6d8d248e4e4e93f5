"""The agent as a user starts it: ``workbench-device-agent`` in a process of its own, its code
and address on standard output, mDNS, and the agent package's independence from Workbench."""

from __future__ import annotations

import ast
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from workbench_device.client import DeviceClient

from workbench_device.tls import short_fingerprint

from .conftest import HOST_ID, host_identity, tiny_onnx_bytes

SDK = Path(__file__).resolve().parents[2] / "device_sdk"


class AgentProcess:
    """``python -m workbench_device`` with its stdout lines readable as they come."""

    def __init__(self, *args: str):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "workbench_device", *args], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        self.lines: "queue.Queue[str]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def line(self, timeout: float = 30) -> str:
        return self.lines.get(timeout=timeout)

    def line_starting(self, prefix: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while True:
            line = self.line(max(0.1, deadline - time.monotonic()))
            if line.startswith(prefix):
                return line

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


@pytest.fixture
def run_agent():
    started = []

    def run(*args: str) -> AgentProcess:
        process = AgentProcess(*args)
        started.append(process)
        return process

    yield run
    for process in started:
        process.stop()


def test_the_agent_prints_its_code_and_address_and_pairs_with_that_code(run_agent, tmp_path):
    agent = run_agent("--port", "0", "--data-dir", str(tmp_path / "d"), "--no-mdns", "--json",
                      "--name", "Bench Phone")
    announced = json.loads(agent.line())
    code = agent.line_starting("Pairing code: ").split(": ")[1]
    certificate = agent.line_starting("Certificate: ").split(": ")[1]
    address = agent.line_starting("Listening on ").split(" ")[-1]
    host, port = address.rsplit(":", 1)
    assert announced["pairing_code"] == code and announced["port"] == int(port)
    assert host == "127.0.0.1" and announced["name"] == "Bench Phone"
    assert certificate == short_fingerprint(announced["cert_fingerprint"])
    identity = host_identity(tmp_path / "host")
    with DeviceClient.for_pairing(host, int(port), identity) as client:
        assert client.hello(HOST_ID)["name"] == "Bench Phone"
        # The pin is the certificate the agent printed: what a careful user compares.
        assert client.pair(HOST_ID, "test", code) == announced["cert_fingerprint"]
        client.open_session()
        sha = client.push_model(tiny_onnx_bytes()).sha256
        assert client.load_model(sha)["model"] == "m1"
    rotated = json.loads(agent.line_starting('{"event": "pairing_code"'))["pairing_code"]
    assert agent.line_starting("Pairing code: ") == f"Pairing code: {rotated}"
    assert rotated != code
    assert agent.stop() == 0
    assert (tmp_path / "d" / "models" / sha).is_file()
    assert "paired with host" in (tmp_path / "d" / "agent.log").read_text()


def test_listening_everywhere_has_to_be_asked_for(tmp_path):
    done = subprocess.run([sys.executable, "-m", "workbench_device", "--host", "0.0.0.0",
                           "--port", "0", "--data-dir", str(tmp_path), "--no-mdns"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "--all-interfaces" in done.stderr


def test_a_negative_push_memory_is_refused_with_what_to_give(tmp_path):
    done = subprocess.run([sys.executable, "-m", "workbench_device", "--push-memory-mb", "-1",
                           "--port", "0", "--data-dir", str(tmp_path), "--no-mdns"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--push-memory-mb cannot be negative" in done.stderr


def test_an_agent_without_push_memory_stores_pushes_all_the_same(run_agent, tmp_path):
    agent = run_agent("--port", "0", "--data-dir", str(tmp_path / "d"), "--no-mdns", "--json",
                      "--push-memory-mb", "0")
    announced = json.loads(agent.line())
    data = os.urandom(3 * 1024 * 1024)
    identity = host_identity(tmp_path / "host")
    with DeviceClient.for_pairing("127.0.0.1", announced["port"], identity) as client:
        client.hello(HOST_ID)
        client.pair(HOST_ID, "test", announced["pairing_code"])
        sha = client.push_model(data).sha256
    assert (tmp_path / "d" / "models" / sha).read_bytes() == data


def test_a_taken_port_is_a_clear_error(run_agent, tmp_path):
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    done = subprocess.run([sys.executable, "-m", "workbench_device", "--port", str(port),
                           "--data-dir", str(tmp_path), "--no-mdns"],
                          capture_output=True, text=True, timeout=60)
    taken.close()
    assert done.returncode == 1 and f"127.0.0.1:{port}" in done.stderr


def test_the_agent_is_announced_by_mdns(start_agent):
    pytest.importorskip("zeroconf")
    from zeroconf import IPVersion, ServiceBrowser, ServiceListener, Zeroconf

    from workbench_device.protocol import SERVICE_TYPE

    agent = start_agent(mdns=True, name="Announced Phone")
    found: "queue.Queue[dict]" = queue.Queue()

    class Listener(ServiceListener):
        def add_service(self, zc, type_, name):
            info = zc.get_service_info(type_, name, 3000)
            if info is not None:
                found.put({k.decode(): v.decode() for k, v in info.properties.items()}
                          | {"port": info.port})

        def update_service(self, zc, type_, name):
            pass

        def remove_service(self, zc, type_, name):
            pass

    zc = Zeroconf(interfaces=["127.0.0.1"], ip_version=IPVersion.V4Only)
    try:
        ServiceBrowser(zc, SERVICE_TYPE, Listener())
        deadline = time.monotonic() + 30
        while True:
            record = found.get(timeout=max(0.1, deadline - time.monotonic()))
            if record["device_id"] == agent.device_id:
                break
        assert record == {"name": "Announced Phone", "device_id": agent.device_id,
                          "protocol": "4", "port": agent.port}
    finally:
        zc.close()


def _imports(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"), feature_version=(3, 9))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def test_the_agent_package_stands_alone_and_parses_as_python_3_9():
    offenders = []
    for path in (SDK / "workbench_device").rglob("*.py"):
        for name in _imports(path):  # parsing with feature_version 3.9 also checks the syntax
            top = name.split(".")[0]
            if top in ("workbench", "torch", "PySide6", "workbench_trainkit") or \
                    name.startswith("MNN.tools") or name == "_tools":
                offenders.append(f"{path.name} imports {name}")
    assert offenders == []


def test_importing_the_agent_loads_no_runtime_until_a_session_needs_one():
    code = ("import sys, workbench_device.agent, workbench_device.client; "
            "print(sorted(m for m in ('onnxruntime', 'MNN', 'torch', 'workbench', 'zeroconf') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_two_agents_cannot_share_a_data_folder(start_agent, tmp_path):
    from workbench_device.agent import AgentError

    first = start_agent(data_dir=tmp_path / "shared")
    with pytest.raises(AgentError) as error:
        start_agent(data_dir=tmp_path / "shared")
    assert "--data-dir" in str(error.value)
    first.stop()
    assert start_agent(data_dir=tmp_path / "shared").port

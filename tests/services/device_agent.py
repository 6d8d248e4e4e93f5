"""A real device agent (``python -m workbench_device.agent``) in a process of its own, on a free
loopback port with its own data folder: what the device tests and the device benchmarks
(``benchmarks/fleet.py``, ``hot_swap.py``, ``device_link.py``) start.

The agent is run from ``device_sdk/`` so that it is the agent of this checkout whether or not
it is installed. Its standard output is read as it comes (``--json`` lines): ``port``,
``device_id``, ``name``, ``inference_port`` and ``fingerprint`` from its ``listening`` line,
``code`` the pairing code it printed last. Its standard error goes to ``<data_dir>.stderr``
beside the data folder.
"""

from __future__ import annotations

import json
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, Optional

DEVICE_SDK = Path(__file__).resolve().parents[2] / "device_sdk"
START_TIMEOUT_S = 60.0
START_ATTEMPTS = 3


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class AgentProcess:
    """``python -m workbench_device.agent --port 0 --data-dir DATA_DIR --json --name NAME
    [--no-mdns] ARGS…``, started at once; with ``wait`` (the default) the constructor returns
    once it listens (else call ``wait_listening``, e.g. after starting many). With
    ``inference_port`` it also serves its inference endpoint on a free port (``--inference-port``
    takes no 0 for "any": a port found free can be taken before the agent binds it, so the agent
    is started again on another one, up to ``START_ATTEMPTS`` times)."""

    def __init__(self, data_dir: Path, name: str = "Test Phone", mdns: bool = False,
                 *args: str, wait: bool = True, inference_port: bool = False):
        self.data_dir = Path(data_dir).resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._command = [sys.executable, "-m", "workbench_device.agent", "--port", "0",
                         "--data-dir", str(self.data_dir), "--json", "--name", name, *args]
        if not mdns:
            self._command.append("--no-mdns")
        self._with_inference = inference_port
        self.stderr_path = self.data_dir.parent / f"{self.data_dir.name}.stderr"
        self._stderr = open(self.stderr_path, "w")
        self.announced: Dict[str, Any] = {}
        self.port = 0
        self.inference_port: Optional[int] = None
        self.device_id = ""
        self.name = name
        self.fingerprint = ""
        self._code = ""
        self._launch()
        if wait:
            self.wait_listening()

    def _launch(self) -> None:
        command = list(self._command)
        if self._with_inference:
            command += ["--inference-port", str(free_port())]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self._stderr,
                                        stdin=subprocess.DEVNULL, text=True,
                                        cwd=str(DEVICE_SDK))
        self.lines: "queue.Queue[str]" = queue.Queue()
        threading.Thread(target=self._read, args=(self.process, self.lines),
                         daemon=True).start()

    @staticmethod
    def _read(process: subprocess.Popen, lines: "queue.Queue[str]") -> None:
        for line in process.stdout:
            lines.put(line.rstrip("\n"))

    def wait_listening(self, timeout: float = START_TIMEOUT_S) -> "AgentProcess":
        """Wait for the agent's ``listening`` line and take its address and pairing code."""
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                listening = self._next_event("listening", timeout)
                break
            except AssertionError:
                taken = "cannot listen" in self.stderr_path.read_text()
                if not (self._with_inference and taken and self.process.poll() is not None
                        and attempt < START_ATTEMPTS):
                    raise
                self._stderr.seek(0)
                self._stderr.truncate()
                self._launch()
        self.announced = listening
        self.port = int(listening["port"])
        self.inference_port = listening.get("inference_port")
        self.device_id = listening["device_id"]
        self.name = listening["name"]
        self.fingerprint = listening.get("cert_fingerprint", "")
        self._code = listening["pairing_code"]
        return self

    def _next_event(self, event: str, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                if self.process.poll() is None and time.monotonic() < deadline:
                    continue
                self._stderr.flush()
                raise AssertionError(f"the agent printed no {event!r} line; stderr: "
                                     f"{self.stderr_path.read_text()[-2000:]}") from None
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
        """SIGTERM, then SIGKILL after 20 s."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self._stderr.close()

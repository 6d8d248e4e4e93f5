"""Real hub and window processes, started through the real ``workbench`` command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waiting import wait_until  # noqa: F401  (the app tests import it from here)
from workbench.ipc.client import HubClient
from workbench.ipc.endpoint import hub_lock


def processes_with_env(name: str, value: str) -> list[int]:
    """Pids of processes started with ``name=value`` in their environment."""
    needle = f"{name}={value}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def is_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != b"Z"


class Workbench:
    """Drives the real command and talks to the real hub of one test."""

    def __init__(self, runtime: str):
        self.runtime = runtime

    def run(self, *args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        result = subprocess.run([sys.executable, "-m", "workbench", *args], capture_output=True, text=True,
                                timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(f"workbench {' '.join(args)} failed ({result.returncode}): {result.stderr}")
        return result

    # The hub answers on its event loop, which may be busy starting a window on a loaded machine:
    # these limits are for a hub that hangs, not one that is slow.
    def hub(self) -> HubClient:
        return HubClient.connect(timeout=30.0)

    def call(self, method: str, params: dict | None = None, timeout: float = 30.0):
        with self.hub() as hub:
            return hub.call(method, params or {}, timeout=timeout)

    def windows(self, include_spares: bool = False) -> list[dict]:
        return json.loads(self.run("windows", "--json", *(["--all"] if include_spares else [])).stdout)

    def hub_pid(self) -> int | None:
        return hub_lock().holder_pid()

    def command(self, window_id: str, command: str, **args):
        return self.call("hub.window_command", {"window_id": window_id, "command": command, "args": args})["result"]

    def wait_for_project(self, project: Path, state: str = "ready", timeout: float = 30.0) -> dict:
        def ready():
            try:
                windows = self.windows()
            except AssertionError:
                return None
            for entry in windows:
                if entry["project"] == str(project.resolve()) and entry["state"] == state:
                    return entry
            return None

        return wait_until(ready, timeout, 0.1, f"{project.name} to be {state}")


@pytest.fixture
def workbench():
    runtime = os.environ["WORKBENCH_RUNTIME_DIR"]
    bench = Workbench(runtime)
    yield bench
    for pid in processes_with_env("WORKBENCH_RUNTIME_DIR", runtime):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

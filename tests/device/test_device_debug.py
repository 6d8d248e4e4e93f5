"""Debugging a project's script on a real agent process through the paired link: a breakpoint on
the project's file stops the script on the device, and a link cut in the middle of debugging is
a clear error on this side and leaves nothing running on the device."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from tests.device_agent.dap import DapClient, attach_and_stop_at
from tests.waiting import pid_alive
from workbench.device.device_debug import TunnelClosed, start_device_debug
from workbench.device.errors import DeviceError
from workbench.device.link import DeviceLink, pair_device

SCRIPT = """import os
scores = [0.25, 0.5, 0.75]
best = max(scores)
print("best", best, flush=True)
for index, score in enumerate(scores):
    ratio = score / best
    print(index, ratio)
print("done")
"""
LOOP_LINE = 6


class CuttableForward:
    """A TCP forwarder to the agent (as a Wi-Fi hop or ``adb forward``) whose connections can be
    cut at once, as a link that drops."""

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                near, _ = self.listener.accept()
            except OSError:
                return
            far = socket.create_connection(self.target)
            self.sockets += [near, far]
            threading.Thread(target=self._pump, args=(near, far), daemon=True).start()
            threading.Thread(target=self._pump, args=(far, near), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass

    def cut(self) -> None:
        self.listener.close()
        for sock in self.sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            except OSError:
                pass


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "project"
    (root / "checks").mkdir(parents=True)
    (root / "workbench.toml").write_text('[project]\nname = "debugging"\n')
    (root / "checks" / "verify.py").write_text(SCRIPT)
    return root


@pytest.fixture
def phone(start_agent):
    agent = start_agent(name="Debug Phone")
    pair_device(agent.address, agent.code)
    return agent


def test_a_breakpoint_in_the_project_stops_the_script_on_the_device(phone, project):
    script = project / "checks" / "verify.py"
    run = start_device_debug(phone.address, script, project_root=project)
    try:
        assert run.path == "checks/verify.py" and run.local_root == project.resolve()
        assert run.program == f"{run.sandbox}/checks/verify.py"
        assert run.path_mappings == [(run.sandbox, str(project.resolve()))]
        dap = DapClient(run.open_tunnel())
        stopped = attach_and_stop_at(dap, str(script.resolve()), LOOP_LINE, run.dap_path_mappings())
        thread = stopped["body"]["threadId"]
        frame = dap.call("stackTrace", threadId=thread)["body"]["stackFrames"][0]
        assert (frame["source"]["path"], frame["line"]) == (str(script.resolve()), LOOP_LINE)
        scopes = dap.call("scopes", frameId=frame["id"])["body"]["scopes"]
        names = {v["name"]: v["value"] for v in dap.call(
            "variables", variablesReference=scopes[0]["variablesReference"])["body"]["variables"]}
        assert names["best"] == "0.75" and names["score"] == "0.25"
        dap.call("continue", threadId=thread)
        again = dap.event("stopped")  # the loop's next turn
        frame = dap.call("stackTrace", threadId=thread)["body"]["stackFrames"][0]
        assert again["body"]["reason"] == "breakpoint" and frame["line"] == LOOP_LINE
        dap.call("setBreakpoints", source={"path": str(script.resolve())}, breakpoints=[])
        dap.call("continue", threadId=thread)
        dap.event("terminated")
        outputs = "".join(e["body"].get("output", "") for e in dap.kept_events("output"))
        assert "best 0.75" in outputs  # its output came through the tunnel too
        dap.call("disconnect")
        assert run.wait_exit(30) == 0
    finally:
        run.close()


def test_a_link_cut_mid_debug_is_a_clear_error_and_stops_the_script(phone, project):
    forward = CuttableForward(("127.0.0.1", phone.port))
    script = project / "checks" / "verify.py"
    run = start_device_debug(forward.address, script, project_root=project)
    try:
        tunnel = run.open_tunnel()
        dap = DapClient(tunnel)
        attach_and_stop_at(dap, str(script.resolve()), LOOP_LINE, run.dap_path_mappings())
        assert pid_alive(run.pid)
        forward.cut()
        with pytest.raises(TunnelClosed) as dropped:
            while True:
                dap.read()
        message = str(dropped.value)
        assert "Debug Phone" in message and "dropped during debugging" in message
        assert "the script on the device was stopped" in message
        assert isinstance(dropped.value, ConnectionError)  # a DAP client ends on OSError
        deadline = time.monotonic() + 30
        while pid_alive(run.pid):
            assert time.monotonic() < deadline, "the script outlived the link"
            time.sleep(0.05)
    finally:
        run.close()
        forward.cut()
    # The device serves on, directly.
    with DeviceLink.open(phone.address) as link:
        assert link.info()["debug"]["debugpy"]


def test_an_agent_without_debugging_says_what_to_install(project, tmp_path, start_agent,
                                                       monkeypatch):
    # The agent's Python cannot import debugpy (sys.modules holds None for it at start-up).
    blocker = tmp_path / "no-debugpy"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['debugpy'] = None\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        filter(None, [str(blocker), os.environ.get("PYTHONPATH")])))
    plain = start_agent("Plain Phone")
    pair_device(plain.address, plain.code)
    with DeviceLink.open(plain.address) as link:
        assert "debug" not in link.info()
    with pytest.raises(DeviceError) as error:
        start_device_debug(plain.address, project / "checks" / "verify.py", project_root=project)
    assert "debugpy is not installed on the device" in str(error.value)
    assert "pip install debugpy" in str(error.value)


def test_the_projects_debugger_attaches_through_the_tunnel(phone, project):
    """What Run ▸ Debug on a device does: workbench.debug's session over the tunnel."""
    from workbench.debug import AttachConfig, Breakpoint, DebugSession

    script = project / "checks" / "verify.py"
    forward = CuttableForward(("127.0.0.1", phone.port))
    run = start_device_debug(forward.address, script, project_root=project)
    session = DebugSession(AttachConfig(run.open_tunnel, name=run.name,
                                        path_mappings=run.path_mappings),
                           [Breakpoint(str(script.resolve()), LOOP_LINE)])
    try:
        session.start(timeout=60)
        stop = session.next_stop(60)
        assert (stop.top.path, stop.top.line) == (str(script.resolve()), LOOP_LINE)
        forward.cut()  # the link drops while the script is stopped on the device
        end = session.wait_ended(60)
        assert end is not None and end.error
        assert "dropped during debugging" in end.message and "Debug Phone" in end.message
        deadline = time.monotonic() + 30
        while pid_alive(run.pid):
            assert time.monotonic() < deadline, "the script outlived the link"
            time.sleep(0.05)
    finally:
        session.close()
        run.close()
        forward.cut()

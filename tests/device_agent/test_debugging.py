"""Debugging a script on the device (protocol version 3): a real debugpy runs it in the session's
folder, and a real DAP conversation goes through the tunnel to a breakpoint."""

from __future__ import annotations

import os
import socket
import ssl
import sys
import time
from importlib.metadata import version

import pytest

from workbench_device.client import DeviceClient
from workbench_device.protocol import Err, Msg, ProtocolError, RemoteError

from .conftest import connect
from .dap import DapClient, attach_and_stop_at

SCRIPT = b"""import os
numbers = [1, 2, 3]
total = sum(numbers)
print("total", total, flush=True)
open("pid", "w").write(str(os.getpid()))
result = total * 2
print("result", result)
"""
# Line 6 runs after the script wrote its pid: the test can look the process up when it stops.
BREAK_LINE = 6
LOCAL_ROOT = "/home/someone/project"


def _tunnel(agent, credential, debug_id: str):
    """A new connection (protocol 3) switched into the tunnel of ``debug_id``: its client and
    the byte stream."""
    client = DeviceClient("127.0.0.1", agent.port, identity=credential.identity,
                          pin=credential.pin)
    client.hello(credential.host_id)
    return client, client.open_tunnel(debug_id)


def _stopped_at_breakpoint(agent, credential, device):
    device.put_file("checks/verify.py", SCRIPT)
    run = device.start_debug("checks/verify.py")
    client, stream = _tunnel(agent, credential, run["debug_id"])
    dap = DapClient(stream)
    mappings = [{"localRoot": LOCAL_ROOT, "remoteRoot": run["sandbox"]}]
    stopped = attach_and_stop_at(dap, f"{LOCAL_ROOT}/checks/verify.py", BREAK_LINE, mappings)
    return run, client, dap, stopped


def test_info_says_which_debugpy_the_device_has(device):
    assert device.info()["debug"] == {"debugpy": version("debugpy")}


def test_info_says_nothing_of_debugging_without_debugpy(device, monkeypatch):
    monkeypatch.setitem(sys.modules, "debugpy", None)  # not importable by the agent's Python
    assert "debug" not in device.info()
    device.put_file("s.py", b"print(1)\n")
    with pytest.raises(RemoteError) as error:
        device.start_debug("s.py")
    assert error.value.code == Err.RUNTIME and "pip install debugpy" in error.value.message


def test_a_breakpoint_stops_the_script_on_the_device_with_its_project_path(agent, credential,
                                                                           device):
    run, client, dap, stopped = _stopped_at_breakpoint(agent, credential, device)
    try:
        assert stopped["body"]["reason"] == "breakpoint"
        assert run["program"] == os.path.join(run["sandbox"], "checks", "verify.py")
        thread = stopped["body"]["threadId"]
        frame = dap.call("stackTrace", threadId=thread)["body"]["stackFrames"][0]
        # The device's path came back as the project's file.
        assert frame["source"]["path"] == f"{LOCAL_ROOT}/checks/verify.py"
        assert frame["line"] == BREAK_LINE
        value = dap.call("evaluate", expression="total", frameId=frame["id"], context="watch")
        assert value["body"]["result"] == "6"
        assert int((agent.data_dir / "sessions" / device.session_id / "pid").read_text()) == run["pid"]
        dap.send("continue", threadId=thread)
        dap.event("terminated")
        dap.call("disconnect")
        with pytest.raises(EOFError):  # the device closed the tunnel in order: no error
            while True:
                dap.read()
    finally:
        client.close()
    exited = _next(device, Msg.DEBUG_EXITED)
    assert exited == {"type": Msg.DEBUG_EXITED, "debug_id": run["debug_id"], "exit_code": 0,
                      "timed_out": False, "seconds": exited["seconds"]}


def _next(client: DeviceClient, kind: str, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        event = client.next_event(1.0)
        if event is not None and event.get("type") == kind:
            return event
    raise AssertionError(f"no {kind} event came")


def test_the_debugged_scripts_output_can_be_streamed_on_its_connection(agent, credential,
                                                                      device):
    device.put_file("s.py", b"import sys\nprint('out')\nprint('err', file=sys.stderr)\n")
    run = device.start_debug("s.py", wait=False, stream=True)
    seen = []
    device.on_event[Msg.SCRIPT_OUTPUT] = seen.append
    exited = _next(device, Msg.DEBUG_EXITED)
    assert exited["exit_code"] == 0
    assert "".join(e["text"] for e in seen if e["stream"] == "stdout") == "out\n"
    assert "".join(e["text"] for e in seen if e["stream"] == "stderr") == "err\n"
    assert {e["debug_id"] for e in seen} == {run["debug_id"]}


def test_a_dropped_tunnel_stops_the_script_and_leaves_no_debugpy(agent, credential, device):
    run, client, dap, _stopped = _stopped_at_breakpoint(agent, credential, device)
    port = agent.debug_runs.find(run["debug_id"], credential.host_id).port
    # The host vanishes: its end of the tunnel is cut without TLS's goodbye.
    socket.socket.shutdown(client.fs.sock.tls, socket.SHUT_RDWR)
    client.fs.sock.tls.close()
    assert _gone(run["pid"]), "the debugged script outlived its tunnel"
    assert _closed(port), "debugpy's adapter still listens after the run ended"
    assert _next(device, Msg.DEBUG_EXITED)["debug_id"] == run["debug_id"]


def test_the_tunnel_end_of_a_host_whose_device_vanished_raises(agent, credential, device):
    run, client, dap, _stopped = _stopped_at_breakpoint(agent, credential, device)
    for connection in list(agent._connections):
        connection.fs.shutdown()  # the agent's side of every connection drops, as in a crash
    with pytest.raises((ssl.SSLEOFError, ConnectionResetError, BrokenPipeError)):
        while True:
            dap.read()
    assert _gone(run["pid"])
    client.close()


def test_a_script_that_ends_before_the_debugger_attaches_says_so(agent, credential, device):
    device.put_file("quick.py", b"import sys\nprint('bye', file=sys.stderr)\nsys.exit(4)\n")
    run = device.start_debug("quick.py", wait=False)
    assert _next(device, Msg.DEBUG_EXITED)["exit_code"] == 4
    client = DeviceClient("127.0.0.1", agent.port, identity=credential.identity,
                          pin=credential.pin)
    client.hello(credential.host_id)
    with pytest.raises(RemoteError) as error:
        client.open_tunnel(run["debug_id"])
    assert error.value.code == Err.SCRIPT_EXITED
    assert error.value.extra["exit_code"] == 4 and "bye" in error.value.extra["stderr"]
    assert client.info()["name"] == agent.name  # the connection goes on in frames
    client.close()


def test_debug_messages_need_protocol_3(agent, credential):
    old = DeviceClient("127.0.0.1", agent.port, identity=credential.identity, pin=credential.pin)
    old.request(Msg.HELLO, versions=[2])
    old.open_session()
    old.put_file("s.py", b"print(1)\n")
    for kind, fields in ((Msg.DEBUG_START, {"path": "s.py"}), (Msg.DEBUG_STOP, {"debug_id": "x"}),
                         (Msg.DEBUG_TUNNEL, {"debug_id": "x"})):
        with pytest.raises(RemoteError) as error:
            old.request(kind, **fields)
        assert error.value.code == Err.UNKNOWN_TYPE and "3" in error.value.message
    with pytest.raises(ProtocolError) as refused:  # the client knows before it asks
        old.start_debug("s.py")
    assert refused.value.code == Err.UNSUPPORTED_VERSION
    assert old.run_script("s.py")["stdout"] == "1\n"  # version 2 goes on as before
    old.close()


def test_a_tunnel_is_for_its_host_once_and_on_a_connection_of_its_own(agent, credential, device):
    from .conftest import pair

    device.put_file("s.py", b"print(1)\n")
    run = device.start_debug("s.py")
    with pytest.raises(RemoteError) as error:
        device.open_tunnel(run["debug_id"])  # this connection has the session
    assert error.value.code == Err.BAD_REQUEST
    other = pair(agent, "another-host")
    stranger = connect(agent, other, session=False)
    with pytest.raises(RemoteError) as error:
        stranger.open_tunnel(run["debug_id"])
    assert error.value.code == Err.NOT_FOUND
    stranger.close()
    first, _stream = _tunnel(agent, credential, run["debug_id"])
    second = DeviceClient("127.0.0.1", agent.port, identity=credential.identity,
                          pin=credential.pin)
    second.hello(credential.host_id)
    with pytest.raises(RemoteError) as error:
        second.open_tunnel(run["debug_id"])
    assert error.value.code == Err.BUSY
    with pytest.raises(RemoteError) as error:
        second.open_tunnel("0123456789abcdef")
    assert error.value.code == Err.NOT_FOUND
    second.close()
    first.close()
    assert _gone(run["pid"])


def test_closing_the_session_stops_its_debugged_scripts(agent, credential):
    client = connect(agent, credential)
    client.put_file("s.py", b"print(1)\n")
    run = client.start_debug("s.py")  # waits for a debugger that never comes
    client.close()
    assert _gone(run["pid"])


def _gone(pid: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def _closed(port: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return True
        time.sleep(0.1)
    return False

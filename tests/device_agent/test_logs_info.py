"""What the device says about itself, and its log streamed to hosts that follow it."""

from __future__ import annotations

import platform

import pytest

from workbench_device.protocol import Err, RemoteError

from .conftest import connect, raw_connection


def test_info_describes_the_device_its_runtimes_and_sessions(device, agent):
    info = device.info()
    assert info["name"] == agent.name and info["device_id"] == agent.device_id
    assert info["model"] and info["os"]
    assert info["cpu"]["cores"] >= 1 and info["cpu"]["arch"] == platform.machine()
    assert info["memory_bytes"] > 100 * 1024 * 1024
    runtimes = {r["name"]: r["version"] for r in info["runtimes"]}
    import onnxruntime

    assert runtimes["onnxruntime"] == onnxruntime.__version__
    assert info["python"] == platform.python_version()
    assert info["sessions"] == 1 and info["session_id"] == device.session_id
    assert info["agent_version"]


def test_a_subscriber_gets_the_devices_log_lines_as_they_happen(agent, credential, tiny_model):
    follower = connect(agent, credential, session=False)
    follower.subscribe_logs("info")
    worker = connect(agent, credential)
    try:
        worker.load_model(worker.push_model(tiny_model, name="tiny.onnx").sha256, name="tiny.onnx")
        messages = []
        while not any("loaded tiny.onnx" in m for m in messages):
            line = follower.next_log(timeout=10)
            assert line is not None, messages
            assert line["type"] == "log" and line["level"] in ("info", "warning", "error")
            assert isinstance(line["time"], float)
            messages.append(line["message"])
        assert any(f"session {worker.session_id} opened" in m for m in messages)
        # Requests still work on a connection that follows the log.
        assert follower.info()["sessions"] == 1
    finally:
        worker.close()
        follower.close()


def test_a_warning_subscriber_only_gets_warnings(agent, credential):
    follower = connect(agent, credential, session=False)
    follower.subscribe_logs("warning")
    other = connect(agent, credential)  # logs an info line: not for this follower
    bad = raw_connection(agent)
    bad.sendall(b"garbage frame bytes!!")  # inside TLS: logs a warning about a bad frame
    line = follower.next_log(timeout=10)
    assert line is not None and line["level"] == "warning" and "bad frame" in line["message"]
    bad.close()
    other.close()
    follower.close()
    with pytest.raises(RemoteError) as error:
        connect(agent, credential, session=False).subscribe_logs("chatty")
    assert error.value.code == Err.BAD_REQUEST


def test_agents_sharing_a_process_stream_only_their_own_lines(start_agent):
    from .conftest import pair

    first, second = start_agent(), start_agent()
    first_credential, second_credential = pair(first), pair(second)
    follower = connect(first, first_credential, session=False)
    follower.subscribe_logs("info")
    connect(second, second_credential).close()
    marker = connect(first, first_credential)
    messages = []
    while not any(marker.session_id in m for m in messages):
        line = follower.next_log(timeout=10)
        assert line is not None
        messages.append(line["message"])
    assert not any("session" in m and "opened" in m and marker.session_id not in m
                   for m in messages)
    marker.close()
    follower.close()

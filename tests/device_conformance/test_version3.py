"""Version 3 (section 13) and the script.output event: a version-3 host gets version-3 frames
and can debug a script through a tunnel; a version-2 host sees none of it (sections 2, 6, 10)."""

from __future__ import annotations

import json
from typing import Any, Dict

import pytest

from .frames import VERSION, VERSION_3, AgentError, Link

SLOW_SCRIPT = b"""import sys, time
for i in range(3):
    print("line", i)
    print("warn", i, file=sys.stderr)
    time.sleep(0.05)
print('{"done": true}')
"""


def test_script_output_comes_as_events_before_the_reply_naming_its_request(connect):
    link = connect()  # a version-2 host: the event is version 2's too
    link.ok("file.put", SLOW_SCRIPT, path="slow.py")
    request_id = link.send("script.run", path="slow.py", stream=True, timeout_s=60)
    header, _ = link.reply(request_id)
    assert header["type"] == "script.run.ok" and header["exit_code"] == 0, header
    assert header["result"] == {"done": True}
    events = [e for e in link.events if e["type"] == "script.output"]
    assert events and all(e["request"] == request_id for e in events)
    assert all(len(e["text"].encode()) <= 8192 and "skipped" not in e for e in events)
    out = "".join(e["text"] for e in events if e["stream"] == "stdout")
    err = "".join(e["text"] for e in events if e["stream"] == "stderr")
    assert out == "line 0\nline 1\nline 2\n" + '{"done": true}\n' and out == header["stdout"]
    assert err == "warn 0\nwarn 1\nwarn 2\n" == header["stderr"]


def test_without_stream_a_script_sends_no_events(connect):
    link = connect()
    link.ok("file.put", SLOW_SCRIPT, path="slow.py")
    assert link.ok("script.run", path="slow.py")["exit_code"] == 0
    assert link.events == []


def test_a_version_3_host_gets_version_3_frames_after_hello(agent, host):
    link = agent.link(identity=host[1], pin=host[2])
    try:
        link.ok("info")  # authenticated from the first frame, before any hello
        assert link.read_version == 2
        reply = link.hello([2, 3])
        assert reply["protocol"] == VERSION_3 and {2, 3} <= set(reply["versions"])
        assert link.read_version == 2  # hello.ok in the version of its hello
        link.ok("info")
        assert link.read_version == VERSION_3  # every frame after it in the chosen one
    finally:
        link.close()


def test_a_version_2_host_sees_nothing_of_version_3(connect):
    link = connect()
    assert link.version == VERSION == 2
    link.ok("file.put", b"print(1)\n", path="s.py")
    for kind, fields in (("debug.start", {"path": "s.py"}), ("debug.stop", {"debug_id": "x"}),
                         ("debug.tunnel", {"debug_id": "x"})):
        assert link.error(kind, **fields)["code"] == "unknown_type", kind
        assert link.read_version == 2
    assert link.ok("script.run", path="s.py")["stdout"] == "1\n"


def _needs_debugpy(link: Link) -> str:
    debug = link.ok("info").get("debug")
    if debug is None:
        pytest.skip("the agent reports no debugpy (info.debug): nothing to debug with")
    assert isinstance(debug, dict) and isinstance(debug["debugpy"], str) and debug["debugpy"]
    return debug["debugpy"]


def test_info_says_which_debugpy_the_device_has(connect):
    _needs_debugpy(connect(versions=[2, 3]))


def _tunnel(agent, host, debug_id: str) -> Link:
    link = agent.link(identity=host[1], pin=host[2])
    link.hello([2, 3])
    assert link.ok("debug.tunnel", debug_id=debug_id) == {
        "type": "debug.tunnel.ok", "id": link.next_id - 1, "debug_id": debug_id}
    return link


def _dap_send(link: Link, message: Dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    link.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)


def _dap_read(link: Link) -> Dict[str, Any]:
    """The next DAP message on the tunnel. Two messages can come in one read (an event and the
    response just behind it): what follows this one is kept for the next call."""
    data = getattr(link, "dap_unread", b"")
    while b"\r\n\r\n" not in data:
        chunk = link.sock.recv(4096)
        assert chunk, "the tunnel closed before a DAP message came"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length")))
    while len(body) < length:
        chunk = link.sock.recv(length - len(body))
        assert chunk, "the tunnel closed inside a DAP message"
        body += chunk
    link.dap_unread = body[length:]
    return json.loads(body[:length])


def test_a_script_is_debugged_through_a_tunnel_of_its_own(agent, host, connect):
    control = connect(versions=[2, 3])
    debugpy_version = _needs_debugpy(control)
    control.ok("file.put", b"x = 1\nprint(x)\n", path="checks/verify.py")
    started = control.ok("debug.start", path="checks/verify.py")
    assert isinstance(started["debug_id"], str) and started["debug_id"]
    assert isinstance(started["pid"], int) and started["path"] == "checks/verify.py"
    assert started["program"].startswith(started["sandbox"])
    assert started["program"].endswith("verify.py") and started["debugpy"] == debugpy_version
    # A session's connection cannot become a tunnel; an unknown run has none.
    assert control.error("debug.tunnel", debug_id=started["debug_id"])["code"] == "bad_request"
    tunnel = _tunnel(agent, host, started["debug_id"])
    try:
        second = agent.link(identity=host[1], pin=host[2])
        second.hello([2, 3])
        assert second.error("debug.tunnel", debug_id=started["debug_id"])["code"] == "busy"
        assert second.error("debug.tunnel", debug_id="no-such-run")["code"] == "not_found"
        second.close()
        # From here on the connection is debugpy's: a DAP initialize gets its response.
        _dap_send(tunnel, {"seq": 1, "type": "request", "command": "initialize",
                           "arguments": {"adapterID": "debugpy", "clientID": "conformance",
                                         "linesStartAt1": True, "pathFormat": "path"}})
        response = _dap_read(tunnel)
        while response.get("type") != "response":
            response = _dap_read(tunnel)
        assert response["command"] == "initialize" and response["request_seq"] == 1
        assert response["success"] is True and response["body"]["supportsConfigurationDoneRequest"]
    finally:
        tunnel.close()
    # The tunnel closed with the script still waiting for its debugger: the run ends.
    exited = control.next_event()
    assert exited["type"] == "debug.exited" and exited["debug_id"] == started["debug_id"]
    assert exited["exit_code"] != 0 and exited["timed_out"] is False


def test_a_script_that_ends_before_a_debugger_attaches_is_script_exited(agent, host, connect):
    control = connect(versions=[2, 3])
    _needs_debugpy(control)
    control.ok("file.put", b"import sys\nsys.exit(5)\n", path="quick.py")
    started = control.ok("debug.start", path="quick.py", wait=False)
    exited = control.next_event()
    assert exited["type"] == "debug.exited" and exited["exit_code"] == 5
    late = agent.link(identity=host[1], pin=host[2])
    try:
        late.hello([2, 3])
        with pytest.raises(AgentError) as error:
            late.ok("debug.tunnel", debug_id=started["debug_id"])
        assert error.value.code == "script_exited" and error.value.header["exit_code"] == 5
        assert late.ok("info")["name"]  # still frames
    finally:
        late.close()


def test_debug_stop_ends_a_run(connect):
    control = connect(versions=[2, 3])
    _needs_debugpy(control)
    control.ok("file.put", b"print(1)\n", path="s.py")
    started = control.ok("debug.start", path="s.py")
    stopped = control.ok("debug.stop", debug_id=started["debug_id"])
    assert stopped["debug_id"] == started["debug_id"]
    assert control.next_event()["type"] == "debug.exited"
    assert control.error("debug.start", path="missing.py")["code"] == "not_found"

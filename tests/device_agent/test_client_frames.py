"""How the client sorts the frames an agent sends: the reply it waits for, log lines and other
events, late replies to requests it gave up, and replies that belong to no request at all.

A scripted agent (TLS, as every agent) answers each request with the frames a test gives it,
so the client meets exactly the misbehaviour under test."""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path
from typing import Callable, Dict, List

import pytest

from workbench_device.client import DeviceClient
from workbench_device.protocol import (
    Err,
    FrameError,
    Msg,
    ProtocolError,
    RemoteError,
    encode_prefix,
    frame_bytes,
)
from workbench_device.tls import load_or_make_identity, server_context

from .conftest import read_raw_frame

Script = Callable[[Dict], List[bytes]]


class ScriptedAgent:
    """A TLS server on 127.0.0.1 (its identity in ``folder``) that answers each request it
    reads with ``script(request)``: a list of whole frames (bytes) to send back."""

    def __init__(self, script: Script, folder: Path):
        self.script = script
        self.context = server_context(load_or_make_identity(folder, "scripted agent"), [])
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.requests: List[Dict] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        try:
            sock, _ = self.listener.accept()
        except OSError:
            return  # closed before a client came
        with sock:
            try:
                with self.context.wrap_socket(sock, server_side=True) as tls_sock:
                    self._answer(tls_sock)
            except (OSError, EOFError):  # ssl.SSLError is an OSError
                pass  # the client closed the connection, as tests that end early do

    def _answer(self, sock: ssl.SSLSocket) -> None:
        while True:
            frame = read_raw_frame(sock)
            if frame is None:
                return
            header, _ = frame
            self.requests.append(header)
            for data in self.script(header):
                sock.sendall(data)
            if header.get("type") == Msg.CLOSE:
                return

    def close(self) -> None:
        self.listener.close()
        self._thread.join(timeout=5)


def _reply(request: Dict, **fields) -> bytes:
    return frame_bytes({"type": request["type"] + ".ok", "id": request["id"], **fields})


@pytest.fixture
def scripted(tmp_path):
    agents: List[ScriptedAgent] = []

    def start(script: Script) -> DeviceClient:
        agent = ScriptedAgent(script, tmp_path / f"agent{len(agents)}")
        agents.append(agent)
        return DeviceClient("127.0.0.1", agent.port, timeout=10)

    yield start
    for agent in agents:
        agent.close()


def test_a_reply_to_a_request_never_sent_is_a_protocol_error_that_says_so(scripted):
    client = scripted(lambda request: [frame_bytes({"type": "info.ok", "id": 4242}),
                                       _reply(request, name="device")])
    with pytest.raises(ProtocolError) as error:
        client.info()
    assert not isinstance(error.value, RemoteError)
    assert "4242" in error.value.message and "out of step" in error.value.message
    client.fs.close()


def test_a_second_reply_to_an_answered_request_is_a_protocol_error(scripted):
    client = scripted(lambda request: [_reply(request, name="device")] * 2)
    assert client.info()["name"] == "device"
    with pytest.raises(ProtocolError) as error:
        client.info()  # meets the first request's second reply
    assert "request id 1" in error.value.message
    client.fs.close()


def test_a_reply_that_overtakes_an_earlier_one_is_a_protocol_error(scripted):
    # Replies come in the order of their requests: one for a later request first means the
    # agent skipped or reordered one.
    held: List[Dict] = []

    def script(request):
        held.append(request)
        if len(held) < 2:
            return []
        return [_reply(held[1]), _reply(held[0])]

    client = scripted(script)
    first = client.send(Msg.INFO)
    client.send(Msg.INFO)
    with pytest.raises(ProtocolError) as error:
        client.receive(first)
    assert "request id 2" in error.value.message
    client.fs.close()


def test_late_replies_to_requests_given_up_after_an_error_are_dropped(scripted):
    # The chunks pipelined after a failed one are still answered; the client gave up on them.
    def script(request):
        if request["type"] == Msg.PUSH_CHUNK and request["offset"] == 0:
            return [frame_bytes({"type": "error", "id": request["id"], "code": "bad_request",
                                 "message": "wrong offset", "offset": 0})]
        if request["type"] == Msg.PUSH_BEGIN:
            return [_reply(request, sha256=request["sha256"], offset=0, present=False)]
        if request["type"] == Msg.PUSH_CHUNK:
            return [frame_bytes({"type": "error", "id": request["id"], "code": "bad_request",
                                 "message": "no push", "offset": 0})]
        return [_reply(request, name="device")]

    client = scripted(script)
    with pytest.raises(RemoteError) as error:
        client.push_model(b"x" * 40, chunk_size=10, window=4)
    assert error.value.message == "wrong offset"
    assert client.info()["name"] == "device"  # three late errors dropped on the way
    client.fs.close()


def test_log_lines_and_unknown_events_between_replies(scripted):
    def script(request):
        return [frame_bytes({"type": "log", "level": "info", "message": "one"}),
                frame_bytes({"type": "thermal.throttle", "celsius": 80}),
                frame_bytes({"type": "log", "level": "info", "message": "two"}),
                _reply(request, name="device")]

    seen = []
    client = scripted(script)
    client.on_log = seen.append
    assert client.info()["name"] == "device"
    assert [line["message"] for line in seen] == ["one", "two"]
    assert [line["message"] for line in client.logs] == ["one", "two"]
    assert client.skipped_events == 1
    assert client.next_log(timeout=1)["message"] == "one"
    client.fs.close()


def test_next_log_delivers_lines_and_refuses_a_stray_reply(scripted):
    def script(request):
        return [_reply(request, level="info"),
                frame_bytes({"type": "log", "level": "info", "message": "after"}),
                frame_bytes({"type": "made.up", "value": 1}),
                frame_bytes({"type": "info.ok", "id": 77})]

    client = scripted(script)
    client.subscribe_logs()
    assert client.next_log(timeout=5)["message"] == "after"
    assert client.next_log(timeout=5) is None and client.skipped_events == 1
    with pytest.raises(ProtocolError) as error:
        client.next_log(timeout=5)
    assert "77" in error.value.message
    client.fs.close()


def test_an_error_about_the_connection_reaches_the_waiting_request(scripted):
    client = scripted(lambda request: [frame_bytes({"type": "error", "id": None, "code": "busy",
                                                    "message": "too many connections"})])
    with pytest.raises(RemoteError) as error:
        client.info()
    assert error.value.code == Err.BUSY
    client.fs.close()


@pytest.mark.parametrize("header", [
    b'{"type":"info.ok","id":1,"memory_bytes":NaN}',
    b'{"type":"info.ok","id":1,"name":"a","name":"b"}',
])
def test_the_client_refuses_headers_with_nan_or_a_key_given_twice(scripted, header):
    client = scripted(lambda request: [encode_prefix(len(header), 0) + header])
    with pytest.raises(FrameError) as error:
        client.info()
    assert error.value.code == Err.BAD_FRAME
    client.fs.close()


def test_the_client_offers_its_versions_and_refuses_a_version_it_did_not_offer(scripted):
    answers = iter([{"protocol": 2}, {"protocol": 1}])
    hellos = []
    client = scripted(lambda request: hellos.append(request) or [_reply(request, **next(answers))])
    assert client.hello("h")["protocol"] == 2 and client.protocol == 2
    assert hellos[0]["versions"] == [2, 3, 4] and hellos[0]["protocol"] == 4
    with pytest.raises(ProtocolError) as error:
        client.hello("h")
    assert error.value.code == Err.UNSUPPORTED_VERSION
    client.fs.close()

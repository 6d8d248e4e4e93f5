"""DAP framing and the client's request/response/event machinery, over a real socket pair with
a peer thread that speaks DAP as an adapter would."""

from __future__ import annotations

import json
import socket
import threading

import pytest

from workbench.debug.dap_client import DapClient
from workbench.debug.errors import DebugError
from workbench.debug.framing import FramingError, MessageReader, encode


def test_messages_split_anywhere_come_back_whole_and_in_order():
    data = encode({"seq": 1, "type": "event", "event": "a"}) + encode({"seq": 2, "type": "event", "event": "é"})
    reader = MessageReader()
    got = []
    for byte in data:  # one byte at a time, the worst split there is
        got += reader.feed(bytes([byte]))
    assert [m["event"] for m in got] == ["a", "é"]


def test_a_stream_that_is_not_dap_is_refused():
    with pytest.raises(FramingError):
        MessageReader().feed(b"HTTP/1.1 200 OK\r\nServer: x\r\n\r\n")
    with pytest.raises(FramingError):
        MessageReader().feed(b"x" * 5000)


class Peer:
    """The adapter's end of a socket pair: reads requests, answers as told."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.reader = MessageReader()
        self.requests: list[dict] = []

    def next_request(self) -> dict:
        while True:
            if self.requests:
                return self.requests.pop(0)
            data = self.sock.recv(4096)
            if not data:
                raise EOFError
            self.requests += self.reader.feed(data)

    def send(self, message: dict) -> None:
        self.sock.sendall(encode(message))


@pytest.fixture
def pair():
    ours, theirs = socket.socketpair()
    client = DapClient(ours, name="test adapter")
    peer = Peer(theirs)
    yield client, peer
    client.close()
    theirs.close()


def test_responses_find_their_requests_in_any_order_and_events_reach_handlers(pair):
    client, peer = pair
    events = []
    client.on_event("output", lambda body: events.append(body["output"]))
    client.start()
    first = client.send_request("threads")
    second = client.send_request("evaluate", {"expression": "1"})
    a, b = peer.next_request(), peer.next_request()
    assert (a["command"], b["command"]) == ("threads", "evaluate") and a["seq"] != b["seq"]
    peer.send({"seq": 1, "type": "event", "event": "output", "body": {"output": "hi"}})
    peer.send({"seq": 2, "type": "response", "request_seq": b["seq"], "success": True, "command": "evaluate",
               "body": {"result": "1"}})
    peer.send({"seq": 3, "type": "response", "request_seq": a["seq"], "success": False, "command": "threads",
               "message": "x", "body": {"error": {"format": "No thread {id}", "variables": {"id": "7"}}}})
    assert second.result(5) == {"result": "1"}
    with pytest.raises(DebugError, match="No thread 7") as failed:
        first.result(5)
    assert failed.value.command == "threads"
    assert events == ["hi"]


def test_reverse_requests_without_a_handler_are_refused(pair):
    client, peer = pair
    client.start()
    peer.send({"seq": 1, "type": "request", "command": "runInTerminal", "arguments": {}})
    answer = peer.next_request()
    assert answer["type"] == "response" and answer["request_seq"] == 1 and answer["success"] is False


def test_a_stream_that_ends_fails_waiting_requests_and_says_so_once(pair):
    client, peer = pair
    closed = []
    client.on_closed(closed.append)
    client.start()
    waiting = client.send_request("stackTrace", {"threadId": 1})
    peer.next_request()
    peer.sock.close()
    with pytest.raises(DebugError, match="closed"):
        waiting.result(5)
    client.close()
    assert closed == [""]
    with pytest.raises(DebugError, match="closed"):
        client.request("threads", timeout=1)


def test_a_request_from_an_event_handler_is_refused_instead_of_waiting_for_itself(pair):
    client, peer = pair
    outcome = []
    done = threading.Event()

    def handler(_body):
        try:
            client.request("threads", timeout=1)
        except RuntimeError as exc:
            outcome.append(str(exc))
        done.set()

    client.on_event("stopped", handler)
    client.start()
    peer.send({"seq": 1, "type": "event", "event": "stopped", "body": {}})
    assert done.wait(5)
    assert "send_request" in outcome[0]


def test_a_silent_adapter_times_out_with_the_request_named(pair):
    client, _peer = pair
    client.start()
    with pytest.raises(DebugError, match="did not answer 'threads'"):
        client.request("threads", timeout=0.2)


def test_messages_are_framed_with_their_byte_length():
    data = encode({"text": "é"})
    header, body = data.split(b"\r\n\r\n")
    assert header == b"Content-Length: %d" % len(body) and json.loads(body) == {"text": "é"}

"""Frames byte by byte (inside TLS), replies and their ids, what is served before
authentication, and bytes that are no frame: each closes its own connection and nothing else
(sections 2 to 4)."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from .frames import (
    BASE_CHUNK,
    BEFORE_AUTH_PAYLOAD,
    MAX_HEADER,
    VERSION,
    encode,
    prefix,
    raw_frame,
    tcp_connection,
)

# The hello frame of section 2, as printed there.
DOCUMENTED_HELLO = bytes.fromhex(
    "57 42 44 4c 02 00 00 00 00 00 00 3b 00 00 00 00"
    "00 00 00 00 7b 22 74 79 70 65 22 3a 22 68 65 6c"
    "6c 6f 22 2c 22 69 64 22 3a 31 2c 22 63 6c 69 65"
    "6e 74 22 3a 22 65 78 61 6d 70 6c 65 2f 31 2e 30"
    "22 2c 22 70 72 6f 74 6f 63 6f 6c 22 3a 32 7d")


def test_the_documented_hello_frame_is_what_the_encoding_rules_give():
    header = {"type": "hello", "id": 1, "client": "example/1.0", "protocol": 2}
    assert encode(header) == DOCUMENTED_HELLO and len(DOCUMENTED_HELLO) == 79


def test_hello_is_served_before_authentication_with_every_field(agent):
    link = agent.link()  # no certificate: not authenticated
    try:
        link.send_raw(DOCUMENTED_HELLO)
        header, payload = link.reply(1)
        assert header["type"] == "hello.ok" and payload == b""
        assert isinstance(header["agent"], str) and header["agent"]
        # The documented hello speaks up to version 2; the agent speaks 2 and 3 (section 13).
        assert header["protocol"] == VERSION and {2, 3} <= set(header["versions"])
        assert isinstance(header["name"], str) and isinstance(header["device_id"], str)
        assert header["device_id"]
        assert header["paired"] is False and header["auth"] == "pairing"
        assert header["cert_fingerprint"] == link.agent_fingerprint
        assert "nonce" not in header  # version 1's challenge is gone
        again = link.hello()
        assert again["device_id"] == header["device_id"]
    finally:
        link.close()


def test_hello_on_a_pinned_certificate_says_paired(connect):
    link = connect(session=False)  # the fixture checked paired and auth "certificate"
    assert link.hello()["paired"] is True


@pytest.mark.parametrize("fields", [
    {"protocol": 2},
    {"protocol": 4},                   # speaks 1 to 4
    {"versions": [2]},
    {"versions": [5, 2, 3]},
    {"versions": [2], "protocol": 9},  # the list wins over 'protocol'
])
def test_hello_answers_a_version_both_ends_speak(agent, fields):
    link = agent.link()
    try:
        reply = link.ok("hello", **fields)
        offered = fields.get("versions") or range(1, fields["protocol"] + 1)
        assert VERSION in reply["versions"]
        assert reply["protocol"] == max(set(offered) & set(reply["versions"]))
    finally:
        link.close()


@pytest.mark.parametrize("fields", [
    {},                    # a host from before versions were negotiated: version 1
    {"protocol": 1},
    {"versions": [1]},
    {"client": "from-the-future/9", "versions": [7, 8]},
])
def test_a_hello_with_no_version_in_common_gets_unsupported_version(agent, fields):
    link = agent.link()
    try:
        error = link.error("hello", **fields)
        assert error["code"] == "unsupported_version" and error["id"] == link.next_id - 1
        assert VERSION in error["versions"] and str(VERSION) in error["message"]
        for bad in ({"versions": []}, {"versions": ["2"]}, {"versions": 2},
                    {"protocol": 0}, {"protocol": "2"}):
            assert link.error("hello", **bad)["code"] == "bad_request", bad
        assert link.hello()["protocol"] == VERSION  # the connection goes on
    finally:
        link.close()


def test_replies_come_in_order_with_their_requests_ids(agent):
    link = agent.link()
    try:
        frames = b"".join(encode({"type": "hello", "id": i, "versions": [VERSION]})
                          for i in (17, 3, 2 ** 40))
        link.send_raw(frames + encode({"type": "hello", "versions": [VERSION]})
                      + encode({"type": "hello", "id": None, "versions": [VERSION]}))
        for expected in (17, 3, 2 ** 40, None, None):
            header, _ = link.reply(expected)
            assert header["type"] == "hello.ok"
    finally:
        link.close()


@pytest.mark.parametrize("kind,fields", [
    ("info", {}), ("session.open", {}), ("model.has", {"sha256": "ab" * 32}),
    ("push.begin", {"sha256": "ab" * 32, "size": 1}),
    ("push.chunk", {"sha256": "ab" * 32, "offset": 0}),
    ("push.end", {"sha256": "ab" * 32}), ("model.load", {"sha256": "ab" * 32}),
    ("model.run", {"model": "m1", "tensors": []}), ("model.bench", {"model": "m1"}),
    ("file.put", {"path": "x", "size": 0}), ("file.get", {"path": "x"}),
    ("script.run", {"path": "x.py"}), ("logs.subscribe", {}), ("no.such.message", {}),
    ("auth", {"host_id": "h", "host_nonce": "ab" * 32, "proof": "cd" * 32}),  # version 1's
    ("pair", {"host_id": "h", "code": "123456"}),
])
def test_only_hello_pairing_and_close_are_served_without_a_certificate(agent, kind, fields):
    link = agent.link()
    try:
        assert link.error(kind, b"tiny", **fields)["code"] == "not_authenticated"
        assert link.hello()["paired"] is False  # the connection goes on
        assert link.ok("close") is not None
        assert link.closed_by_agent()
    finally:
        link.close()


def test_version_1_handshake_messages_are_unknown_to_an_authenticated_connection(connect):
    link = connect(session=False)
    assert link.error("auth", host_id="h", host_nonce="ab" * 32,
                      proof="cd" * 32)["code"] == "unknown_type"
    assert link.error("pair", host_id="h", code="123456")["code"] == "unknown_type"
    assert link.ok("info")["device_id"]


def test_a_large_payload_before_authentication_closes_the_connection_unread(agent):
    link = agent.link()
    try:
        head = json.dumps({"type": "file.put", "id": 4, "path": "x"}).encode()
        size = BEFORE_AUTH_PAYLOAD * 16
        link.send_raw(prefix(len(head), size) + head + b"\0" * 1000)  # the rest never comes
        header, _ = link.reply(4)
        assert header["type"] == "error" and header["code"] == "not_authenticated"
        assert link.closed_by_agent()
    finally:
        link.close()


MALFORMED = {
    "bad magic": (b"NOPE" + DOCUMENTED_HELLO[4:], "bad_frame"),
    "version 1 inside TLS": (DOCUMENTED_HELLO[:4] + bytes([1]) + DOCUMENTED_HELLO[5:],
                             "bad_frame"),
    "version 5": (DOCUMENTED_HELLO[:4] + bytes([5]) + DOCUMENTED_HELLO[5:], "bad_frame"),
    "header over 64 KiB": (prefix(MAX_HEADER + 1, 0) + b"{" * 100, "too_large"),
    "payload over 1 GiB": (prefix(2, (1 << 30) + 1) + b"{}", "too_large"),
    "header not JSON": (prefix(9, 0) + b"not json!", "bad_frame"),
    "header a JSON array": (prefix(9, 0) + b'["hello"]', "bad_frame"),
    "header a JSON string": (prefix(7, 0) + b'"hello"', "bad_frame"),
    "header not UTF-8": (prefix(3, 0) + b"\xff\xfe\xfd", "bad_frame"),
    "an HTTP request": (b"GET / HTTP/1.1\r\nHost: device\r\n\r\n", "bad_frame"),
    "header with NaN": (raw_frame(b'{"type":"hello","id":1,"x":NaN}'), "bad_frame"),
    "header with Infinity": (raw_frame(b'{"type":"hello","id":1,"x":-Infinity}'), "bad_frame"),
    "header with a number beyond a double": (raw_frame(b'{"type":"hello","id":1,"x":1e999}'),
                                             "bad_frame"),
    "header with a key twice": (raw_frame(b'{"type":"hello","id":1,"type":"close"}'),
                                "bad_frame"),
    "header with a key twice, nested": (
        raw_frame(b'{"type":"hello","id":1,"x":{"a":1,"a":2}}'), "bad_frame"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_bytes_that_are_no_frame_close_only_their_connection(agent, connect, case):
    working = connect(session=False)
    assert working.ok("info")["device_id"]
    data, code = MALFORMED[case]
    bad = agent.link()
    try:
        bad.send_raw(data)
        header, _ = bad.reply(None)
        assert header["type"] == "error" and header["code"] == code and header["id"] is None
        assert isinstance(header["message"], str) and header["message"]
        assert bad.closed_by_agent()
    finally:
        bad.close()
    assert working.ok("info")["device_id"]  # the other connection never noticed


def test_a_header_without_a_type_or_with_a_bad_id_gets_bad_request(connect):
    link = connect(session=False)
    for header, expected_id, code in (({"id": 1}, 1, "bad_request"),
                                      ({"type": 5, "id": 2}, 2, "bad_request"),
                                      ({"type": "info", "id": "three"}, None, "bad_request"),
                                      ({"type": "info", "id": 4.5}, None, "bad_request"),
                                      ({"type": "info", "id": True}, None, "bad_request"),
                                      ({"type": "format.disk", "id": 6}, 6, "unknown_type")):
        link.send_raw(encode(header, b"a payload, read and dropped"))
        reply, _ = link.reply(expected_id)
        assert reply["type"] == "error" and reply["code"] == code, header
    assert link.ok("info")["device_id"]


def test_unknown_fields_are_ignored(connect):
    link = connect(session=False)
    assert link.ok("info", some_future_field={"x": [1, 2]})["device_id"]


def announced_chunk(agent) -> int:
    """The push.chunk limit the agent's hello.ok names (the base size when it names none)."""
    link = agent.link()
    try:
        return link.hello().get("max_chunk", BASE_CHUNK)
    finally:
        link.close()


def test_hello_announces_a_chunk_limit_of_at_least_the_base_size(agent):
    limit = announced_chunk(agent)
    assert isinstance(limit, int) and not isinstance(limit, bool) and limit >= BASE_CHUNK


def test_a_chunk_of_the_announced_size_is_taken(agent, connect):
    link = connect(session=False)
    limit = announced_chunk(agent)
    data = os.urandom(limit)
    sha = hashlib.sha256(data).hexdigest()
    link.ok("push.begin", sha256=sha, size=limit)
    assert link.ok("push.chunk", data, sha256=sha, offset=0)["received"] == limit


def test_an_oversize_push_chunk_closes_its_connection(agent, connect):
    working = connect(session=False)
    pusher = connect(session=False)
    limit = announced_chunk(agent)
    sha = "cd" * 32
    pusher.ok("push.begin", sha256=sha, size=10 * limit)
    head = json.dumps({"type": "push.chunk", "id": 99, "sha256": sha, "offset": 0}).encode()
    pusher.send_raw(prefix(len(head), limit + 1) + head + b"\0" * 1000)
    header, _ = pusher.reply(99)
    assert header["type"] == "error" and header["code"] == "too_large"
    assert pusher.closed_by_agent()
    assert working.ok("info")["device_id"]


def test_close_is_answered_and_then_the_connection_ends(connect):
    link = connect()
    header, payload = link.call("close")
    assert header["type"] == "close.ok" and payload == b""
    assert link.closed_by_agent()


def test_many_garbage_connections_leave_the_agent_serving(agent, connect):
    working = connect()
    for number in range(20):
        if number % 2:  # garbage where the TLS handshake should be
            bad = tcp_connection(agent.port)
            bad.sendall(b"\x00" * 64)
        else:  # garbage inside TLS
            bad = agent.link()
            bad.send_raw(b"\x00" * 64)
        bad.close()
    assert working.ok("info")["session_id"]
    fresh = connect()
    assert fresh.ok("info")["session_id"]

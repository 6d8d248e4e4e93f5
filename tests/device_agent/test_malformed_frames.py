"""Bytes that are no frame (inside TLS) get one error and close that connection only: another
host's connection, mid-session, keeps working before, during and after. Bytes that are no TLS
are in test_tls_attacks.py."""

from __future__ import annotations

import socket
import time

import numpy as np
import pytest

from workbench_device.protocol import (
    MAX_CHUNK,
    MAX_HEADER,
    PREFIX_SIZE,
    Err,
    RemoteError,
    encode_header,
    encode_prefix,
    frame_bytes,
)

from .conftest import (
    closed_by_peer,
    connect,
    raw_connection,
    read_raw_frame,
    reference,
    tcp_connection,
)

HELLO = frame_bytes({"type": "hello", "id": 1})


def _raw_frame(header: bytes) -> bytes:
    return encode_prefix(len(header), 0) + header


MALFORMED = {
    "bad magic": (b"NOPE" + HELLO[4:], Err.BAD_FRAME),
    "bad version": (HELLO[:4] + bytes([9]) + HELLO[5:], Err.BAD_FRAME),
    "a version 1 frame inside TLS": (HELLO[:4] + bytes([1]) + HELLO[5:], Err.BAD_FRAME),
    "oversized header": (encode_prefix(MAX_HEADER + 1, 0) + b"{" * 100, Err.TOO_LARGE),
    "oversized payload": (encode_prefix(2, (1 << 30) + 1) + b"{}", Err.TOO_LARGE),
    "payload over the agent's run limit": (encode_prefix(2, 300 * 1024 * 1024) + b"{}",
                                           Err.TOO_LARGE),
    "header not json": (encode_prefix(9, 0) + b"not json!", Err.BAD_FRAME),
    "header json but not an object": (encode_prefix(9, 0) + b'["hello"]', Err.BAD_FRAME),
    "header not utf-8": (encode_prefix(3, 0) + b"\xff\xfe\xfd", Err.BAD_FRAME),
    "http request": (b"GET / HTTP/1.1\r\nHost: device\r\n\r\n", Err.BAD_FRAME),
    "header with NaN": (_raw_frame(b'{"type":"hello","id":1,"x":NaN}'), Err.BAD_FRAME),
    "header with a key twice": (_raw_frame(b'{"type":"hello","id":1,"type":"close"}'),
                                Err.BAD_FRAME),
}


def _check_still_working(client, handle):
    x = np.ones((1, 4), np.float32)
    outputs, _ = client.run(handle, {"x": x})
    np.testing.assert_allclose(outputs["y"], reference(x), rtol=1e-6)


@pytest.fixture
def working(agent, credential, tiny_model):
    """Another host's connection with a model loaded, and that model's handle."""
    client = connect(agent, credential)
    handle = client.load_model(client.push_model(tiny_model).sha256)["model"]
    yield client, handle
    client.close()


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_frame_closes_only_its_connection(agent, working, case):
    client, handle = working
    data, code = MALFORMED[case]
    bad = raw_connection(agent)
    try:
        bad.sendall(data)
        _check_still_working(client, handle)
        header, _ = read_raw_frame(bad)
        assert header["type"] == "error" and header["code"] == code and header["id"] is None
        assert header["message"]
        assert closed_by_peer(bad)
    finally:
        bad.close()
    _check_still_working(client, handle)


def test_a_frame_cut_off_by_the_client_leaves_the_others_running(agent, working):
    client, handle = working
    for cut in (3, PREFIX_SIZE, PREFIX_SIZE + 5, len(HELLO) - 1):
        bad = raw_connection(agent)
        bad.sendall(frame_bytes({"type": "hello", "id": 1}, b"x" * 100)[:cut])
        bad.close()
    # And a client that sends half a frame and then says nothing at all.
    silent = raw_connection(agent)
    silent.sendall(HELLO[:PREFIX_SIZE + 2])
    _check_still_working(client, handle)
    silent.close()
    _check_still_working(client, handle)


def test_a_stalled_frame_times_out_on_the_agent(start_agent):
    agent = start_agent(frame_timeout_s=0.3)
    stalled = raw_connection(agent)
    stalled.sendall(HELLO[:PREFIX_SIZE + 2])
    stalled.settimeout(10)
    assert closed_by_peer(stalled)
    stalled.close()


def test_an_oversized_push_chunk_closes_that_connection(agent, credential, working):
    client, handle = working
    pusher = connect(agent, credential, session=False)
    sha = "ab" * 32
    pusher.request("push.begin", sha256=sha, size=10 * MAX_CHUNK)
    header = encode_header({"type": "push.chunk", "id": 99, "sha256": sha, "offset": 0})
    # The agent answers from the prefix alone, without reading the 4 MiB first.
    pusher.fs.sock.sendall(encode_prefix(len(header), MAX_CHUNK + 1) + header + b"\0" * 1000)
    with pytest.raises(RemoteError) as error:
        pusher.receive(99)
    assert error.value.code == Err.TOO_LARGE
    assert closed_by_peer(pusher.fs.sock)
    pusher.fs.close()
    _check_still_working(client, handle)


def test_requests_with_bad_fields_get_an_error_and_the_connection_goes_on(device):
    sock = device.fs.sock
    for header, code in (({"id": 1}, Err.BAD_REQUEST),
                         ({"type": 5, "id": 2}, Err.BAD_REQUEST),
                         ({"type": "hello", "id": "three"}, Err.BAD_REQUEST),
                         ({"type": "format.disk", "id": 4}, Err.UNKNOWN_TYPE),
                         ({"type": "push.begin", "id": 5, "sha256": "zz"}, Err.BAD_REQUEST),
                         ({"type": "model.run", "id": 6, "model": "m1"}, Err.NOT_FOUND)):
        sock.sendall(frame_bytes(header, b"some payload"))
        reply, _ = read_raw_frame(sock)
        assert reply["type"] == "error" and reply["code"] == code, header
    assert device.info()["name"]


def test_the_agent_serves_on_after_many_bad_connections(agent, working):
    client, handle = working
    for n in range(30):
        # Zeros inside TLS, and zeros where the TLS handshake should start.
        bad = raw_connection(agent) if n % 2 else tcp_connection(agent)
        bad.sendall(b"\x00" * 64)
        bad.close()
    deadline = time.monotonic() + 10
    while agent.connection_count() > 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert agent.connection_count() == 1
    _check_still_working(client, handle)
    socket.create_connection(("127.0.0.1", agent.port), timeout=5).close()

"""TLS 1.3 from the first byte, certificates pinned at pairing, and what hosts that speak
something else get (sections 1 and 13)."""

from __future__ import annotations

import socket
import ssl

import pytest

from .frames import (
    CLEAR_TEXT_VERSION,
    VERSION,
    encode,
    read_clear_frame,
    tcp_connection,
    tls_context,
)

# Section 13: the clear-text hello of a version-1 host.
VERSION_1_HELLO = encode({"type": "hello", "id": 1, "client": "example/1.0", "protocol": 1},
                         version=CLEAR_TEXT_VERSION)
# Section 1: the alerts that say "this certificate is not one I pin".
CERTIFICATE_ALERTS = ("BAD_CERTIFICATE", "UNSUPPORTED_CERTIFICATE", "CERTIFICATE_UNKNOWN",
                      "UNKNOWN_CA", "ACCESS_DENIED")


def _closed(sock: socket.socket) -> bool:
    """True when the peer closed ``sock`` (or ended the connection with a TLS alert)."""
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, ssl.SSLError):
        return True


def _closed_unanswered(sock: socket.socket) -> bytes:
    """What the peer sent before it closed ``sock``: nothing, or TLS alert records (content
    type 21) for bytes that are a broken TLS record; never a frame."""
    data = b""
    while True:
        try:
            chunk = sock.recv(4096)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    assert data == b"" or data[0] == 21, data[:40]
    return data


def test_the_agent_speaks_tls_1_3_and_nothing_older(agent):
    raw = tcp_connection(agent.port)
    try:
        with pytest.raises((ssl.SSLError, ConnectionResetError)):
            tls_context(version=ssl.TLSVersion.TLSv1_2).wrap_socket(raw).recv(1)
    finally:
        raw.close()
    link = agent.link()  # TLS 1.3 (the Link checks it)
    try:
        assert link.hello()["protocol"] == VERSION
    finally:
        link.close()


def test_a_clear_text_version_1_hello_is_told_to_update_then_closed(agent):
    sock = tcp_connection(agent.port)
    try:
        sock.sendall(VERSION_1_HELLO)
        frame = read_clear_frame(sock)
        assert frame is not None, "the agent closed without the unsupported_version frame"
        header, _ = frame
        assert header["type"] == "error" and header["id"] is None
        assert header["code"] == "unsupported_version" and {2, 3} <= set(header["versions"])
        assert isinstance(header["message"], str) and header["message"]
        assert _closed(sock)
    finally:
        sock.close()


def test_bytes_that_are_no_tls_handshake_are_closed_unanswered(agent, connect):
    working = connect(session=False)
    for garbage in (b"GET / HTTP/1.1\r\nHost: device\r\n\r\n", b"\x00" * 64,
                    b"\x16\x03\x01\x00\x05hello"):
        sock = tcp_connection(agent.port)
        try:
            sock.sendall(garbage)
            _closed_unanswered(sock)
        finally:
            sock.close()
    assert working.ok("info")["device_id"]


def test_clear_text_after_the_handshake_ends_that_connection_only(agent, connect):
    working = connect(session=False)
    for requests_first in (False, True):
        bad = agent.link()
        try:
            if requests_first:
                bad.hello()
            bad.send_clear(encode({"type": "hello", "id": 9, "versions": [VERSION]}))
            assert _closed(bad.sock)  # an alert (bad record) or the end, never a reply
        finally:
            bad.close()
    assert working.ok("info")["device_id"]
    assert connect(session=False).ok("info")["device_id"]


def test_a_certificate_the_agent_does_not_pin_fails_the_handshake(agent, make_host, connect):
    working = connect(session=False)
    stranger = agent.link(identity=make_host("stranger"))
    try:
        try:
            stranger.send_raw(encode({"type": "hello", "id": 1, "versions": [VERSION]}))
        except (ssl.SSLError, OSError):
            pass  # the alert may arrive before the request is written
        alert = stranger.refused_by_agent()
        assert any(name in str(alert) for name in CERTIFICATE_ALERTS), alert
    finally:
        stranger.close()
    assert working.ok("info")["device_id"]


def test_the_agent_prints_and_announces_its_certificate(agent):
    link = agent.link()
    try:
        fingerprint = link.agent_fingerprint
        assert link.hello()["cert_fingerprint"] == fingerprint
    finally:
        link.close()
    assert agent.certificate_line == "SHA256:" + ":".join(
        fingerprint[i:i + 4] for i in range(0, 32, 4))


def test_the_certificate_and_the_pins_last_across_a_restart(start_agent, make_host):
    agent = start_agent()
    identity = make_host("restarted")
    pin = agent.pair(identity, "host-across-restarts")
    printed = agent.certificate_line
    agent.restart()
    assert agent.certificate_line == printed
    link = agent.link(identity=identity, pin=pin)  # the agent's certificate is the pinned one
    try:
        hello = link.hello()
        assert hello["paired"] is True and hello["auth"] == "certificate"  # no code needed
        assert link.ok("info")["device_id"] == hello["device_id"]
    finally:
        link.close()

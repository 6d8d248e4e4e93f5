"""What an attacker on the network can try against the link, and what each gets: a replayed
pairing, a relay that terminates TLS, a device that does not know the code, a certificate
nobody paired, a changed agent certificate, clear text and broken TLS records. Each attack
ends its own connection only; the agent serves its paired hosts on."""

from __future__ import annotations

import json
import logging
import os
import socket
import ssl
import threading

import pytest

from workbench_device.agent import Agent, AgentError
from workbench_device.client import CertificateChanged, DeviceClient, RelayDetected
from workbench_device.pake import PairingExchange
from workbench_device.protocol import (
    PREFIX,
    PREFIX_SIZE,
    Err,
    ProtocolError,
    RemoteError,
    decode_frame,
    frame_bytes,
)
from workbench_device.tls import fingerprint, make_identity, server_context

from .conftest import (
    HOST_ID,
    connect,
    host_identity,
    new_host_identity,
    pair,
    read_raw_frame,
    tcp_connection,
)
from .links import HandPairing, HandTLS, TLSRelay, read_until_closed, wait_until

MAX_TLS13_RECORD = 2 ** 14 + 256


def _hosts_file(agent):
    return agent.data_dir / "paired_hosts.json"


def _serves_on(agent, credential) -> None:
    """The agent still serves a paired host, on a new connection."""
    with connect(agent, credential, session=False) as client:
        assert client.info()["device_id"] == agent.device_id


# --- pairing ---------------------------------------------------------------------------------

def test_a_replayed_pairing_transcript_is_a_wrong_code_and_pins_nothing(agent):
    identity = new_host_identity(agent)
    with HandPairing(agent.port, identity) as hand:
        assert hand.pair(agent.pairing.code)["type"] == "pair.finish.ok"
        begin, finish = hand.sent
    code, hosts = agent.pairing.code, _hosts_file(agent).read_bytes()
    with HandPairing(agent.port, identity) as replay:
        reply = replay.request(begin)
        assert reply["type"] == "pair.begin.ok"
        reply = replay.request(finish)
    assert reply["code"] == Err.BAD_CODE and reply["attempts_left"] == 4  # one wrong code
    assert _hosts_file(agent).read_bytes() == hosts and agent.pairing.code == code


def test_a_confirmation_kept_from_the_agent_does_not_fit_a_new_exchange(agent):
    # A relay holds back the host's pair.finish and sends it later on a connection of its own:
    # the code is still the same, but the agent's PAKE message is a fresh one.
    code = agent.pairing.code
    identity = new_host_identity(agent)
    with HandPairing(agent.port, identity) as hand:
        first = hand.begin(code)
        begin, confirmation = hand.sent[0], hand.confirmation()
    with HandPairing(agent.port, identity) as replay:
        again = replay.request(begin)
        assert again["pake"] != first["pake"]
        reply = replay.request({"type": "pair.finish", "confirm": confirmation})
    assert reply["code"] == Err.BAD_CODE and reply["attempts_left"] == 4
    assert not _hosts_file(agent).exists() and agent.pairing.code == code


@pytest.fixture
def relay_identity(tmp_path):
    return host_identity(tmp_path / "relay", "relay")


def test_a_relay_with_its_own_certificate_is_detected_and_nothing_is_pinned(agent,
                                                                            relay_identity):
    code = agent.pairing.code
    identity = new_host_identity(agent)
    relay = TLSRelay(agent.port, relay_identity)
    try:
        with DeviceClient.for_pairing("127.0.0.1", relay.port, identity) as client:
            client.hello(HOST_ID)
            with pytest.raises(RelayDetected) as error:
                client.pair(HOST_ID, "laptop", code)
            assert client.peer_fingerprint == relay_identity.fingerprint
    finally:
        relay.close()
    assert error.value.code == Err.CERTIFICATE_CHANGED and "intercepted" in error.value.message
    assert "pair.begin" in relay.relayed and "pair.finish" not in relay.relayed
    assert not _hosts_file(agent).exists() and len(agent.paired_hosts) == 0
    assert agent.pairing.code == code
    with HandPairing(agent.port, identity) as hand:  # and no guess was spent
        assert hand.pair(f"{(int(code) + 1) % 1000000:06d}")["attempts_left"] == 4


def test_a_relay_that_passes_its_certificate_off_as_the_agents_fails_the_confirmation(
        agent, relay_identity):
    def claim_own_certificate(header):
        if header.get("type") == "pair.begin.ok":
            return dict(header, cert_fingerprint=relay_identity.fingerprint)
        return header

    code = agent.pairing.code
    identity = new_host_identity(agent)
    relay = TLSRelay(agent.port, relay_identity, rewrite=claim_own_certificate)
    try:
        with DeviceClient.for_pairing("127.0.0.1", relay.port, identity) as client:
            with pytest.raises(RemoteError) as error:
                client.pair(HOST_ID, "laptop", code)  # the right code
    finally:
        relay.close()
    assert "pair.finish" in relay.relayed
    assert error.value.code == Err.BAD_CODE and error.value.extra["attempts_left"] == 4
    assert not _hosts_file(agent).exists() and len(agent.paired_hosts) == 0
    assert agent.pairing.code == code
    with pytest.raises(ProtocolError) as error:  # the host's certificate is not pinned
        DeviceClient("127.0.0.1", agent.port, identity=identity,
                     pin=agent.identity.fingerprint).hello(HOST_ID)
    assert error.value.code == Err.NOT_PAIRED


class _FakeDevice:
    """A TLS server that plays the agent's side of pairing with the code it guesses, and
    answers any confirmation with its own."""

    def __init__(self, identity, guess: str):
        self.identity = identity
        self.guess = guess
        self.context = server_context(identity, [])
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        sock, _ = self.listener.accept()
        with self.context.wrap_socket(sock, server_side=True) as tls:
            exchange = PairingExchange("agent", self.guess)
            while (frame := read_raw_frame(tls)) is not None:
                header, fields = frame[0], {}
                if header["type"] == "pair.begin":
                    host_cert = bytes.fromhex(header["cert"])
                    exchange.finish(bytes.fromhex(header["pake"]), header["host_id"],
                                    self.identity.fingerprint, fingerprint(host_cert))
                    fields = {"pake": exchange.message.hex(),
                              "cert_fingerprint": self.identity.fingerprint}
                elif header["type"] == "pair.finish":
                    fields = {"confirm": exchange.confirmation()}
                tls.sendall(frame_bytes({"type": header["type"] + ".ok", "id": header["id"],
                                         **fields}))

    def close(self) -> None:
        self.listener.close()
        self.thread.join(timeout=5)


@pytest.mark.parametrize("guess,pairs", [("654321", False), ("123456", True)])
def test_a_device_that_does_not_know_the_code_is_not_pinned(tmp_path, guess, pairs):
    fake = _FakeDevice(host_identity(tmp_path / "fake", "fake device"), guess)
    identity = host_identity(tmp_path / "host")
    try:
        with DeviceClient.for_pairing("127.0.0.1", fake.port, identity) as client:
            if pairs:  # the device shows 123456 and knows it: the host pins it
                assert client.pair(HOST_ID, "laptop", "123456") == fake.identity.fingerprint
            else:
                with pytest.raises(ProtocolError) as error:
                    client.pair(HOST_ID, "laptop", "123456")
                assert error.value.code == Err.BAD_CODE
                assert "nothing was paired" in error.value.message
    finally:
        fake.close()


# --- certificates ----------------------------------------------------------------------------

def test_a_certificate_nobody_paired_is_refused_in_the_handshake(agent, credential, caplog):
    stranger = new_host_identity(agent, "stranger")
    with pytest.raises(ProtocolError) as error:
        with DeviceClient("127.0.0.1", agent.port, identity=stranger,
                          pin=agent.identity.fingerprint) as client:
            client.hello("stranger")
    assert error.value.code == Err.NOT_PAIRED and "pair again" in error.value.message
    assert wait_until(lambda: any("must pair again" in r.getMessage() for r in caplog.records))
    _serves_on(agent, credential)


def test_a_changed_agent_certificate_is_refused_before_any_frame(start_agent, tmp_path,
                                                                 caplog):
    data_dir = tmp_path / "device"
    agent = start_agent(data_dir=data_dir)
    credential = pair(agent)
    agent.stop()
    make_identity(data_dir / "link-cert.pem", data_dir / "link-key.pem", "another device")
    agent = start_agent(data_dir=data_dir)
    assert agent.identity.fingerprint != credential.pin
    caplog.set_level(logging.DEBUG, logger="workbench_device")
    caplog.clear()
    with pytest.raises(CertificateChanged) as error:
        connect(agent, credential, session=False)
    assert error.value.code == Err.CERTIFICATE_CHANGED
    assert error.value.pinned == credential.pin
    assert error.value.presented == agent.identity.fingerprint
    assert wait_until(lambda: agent.connection_count() == 0)
    assert not any("says hello" in r.getMessage() for r in caplog.records)
    # Pairing again pins the new certificate; that connection's hello does reach the agent.
    again = pair(agent)
    assert again.pin == agent.identity.fingerprint
    with connect(agent, again, session=False):
        assert wait_until(lambda: any("says hello" in r.getMessage() for r in caplog.records))


def test_the_agent_refuses_a_key_file_others_can_read(start_agent, tmp_path):
    data_dir = tmp_path / "device"
    start_agent(data_dir=data_dir).stop()
    key = data_dir / "link-key.pem"
    os.chmod(key, 0o644)
    with pytest.raises(AgentError) as error:
        Agent(data_dir, port=0, mdns=False)
    assert "chmod 600" in str(error.value) and str(key) in str(error.value)
    os.chmod(key, 0o600)
    assert start_agent(data_dir=data_dir).port  # and it let go of the data folder


def test_every_connection_is_tls_1_3(agent, credential):
    with connect(agent, credential, session=False) as client:
        assert client.fs.sock.tls.version() == "TLSv1.3"
    older = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    older.check_hostname, older.verify_mode = False, ssl.CERT_NONE
    older.maximum_version = ssl.TLSVersion.TLSv1_2
    with pytest.raises(ssl.SSLError):
        older.wrap_socket(tcp_connection(agent)).close()
    _serves_on(agent, credential)


# --- clear text and broken records -----------------------------------------------------------

def test_a_version_1_host_is_told_in_clear_text_to_update_workbench(agent):
    sock = tcp_connection(agent)
    sock.sendall(frame_bytes({"type": "hello", "id": 1, "protocol": 1, "host_id": HOST_ID},
                             version=1))
    data = read_until_closed(sock)
    sock.close()
    magic, version, _, _, header_len, payload_len = PREFIX.unpack(data[:PREFIX_SIZE])
    assert (magic, version, payload_len) == (b"WBDL", 1, 0)
    assert len(data) == PREFIX_SIZE + header_len  # one frame, then the agent closed
    header = json.loads(data[PREFIX_SIZE:])
    assert header["type"] == "error" and header["id"] is None
    assert header["code"] == Err.UNSUPPORTED_VERSION and header["versions"] == [2, 3, 4]
    assert "update Workbench" in header["message"]


def _broken_after_handshake(agent, credential, raw: bytes, close_after: bool = False) -> bytes:
    """Send a request under an authenticated TLS connection, then write ``raw`` under it; what
    the agent sent after that, decrypted, once it closed the connection."""
    hand = HandTLS(agent.port, credential.identity)
    try:
        assert hand.request({"type": "info", "id": 1})["type"] == "info.ok"
        hand.send_frame({"type": "hello", "id": 2, "versions": [2]})
        hand.send_plain(raw)
        if close_after:
            hand.sock.shutdown(socket.SHUT_WR)
        return hand.decrypt(read_until_closed(hand.sock))
    finally:
        hand.close()


@pytest.mark.parametrize("case,raw,close_after", [
    ("a clear-text frame", frame_bytes({"type": "info", "id": 2}), False),
    ("a record that does not decrypt", b"\x17\x03\x03\x00\x40" + os.urandom(64), False),
    ("a record over the TLS 1.3 limit",
     b"\x17\x03\x03" + (MAX_TLS13_RECORD + 1).to_bytes(2, "big") + b"\0" * 64, False),
    ("a 16 KiB record cut off", b"\x17\x03\x03\x40\x00" + os.urandom(100), True),
])
def test_bytes_that_break_tls_close_only_their_connection(agent, device, credential, case, raw,
                                                          close_after):
    after = _broken_after_handshake(agent, credential, raw, close_after)
    # The request sent before the broken bytes is answered; nothing comes after them.
    frame, used = decode_frame(after)
    assert frame.header["type"] == "hello.ok" and frame.header["id"] == 2, case
    assert after[used:] == b"", case
    assert device.info()["sessions"] == 1  # the session of another connection goes on
    assert wait_until(lambda: agent.connection_count() == 1)
    _serves_on(agent, credential)


@pytest.mark.parametrize("garbage", [
    b"garbage instead of a ClientHello" * 4,
    b"\x00" * 64,
    b"\x16\x03\x01\x00\x10" + b"\xff" * 16,    # a handshake record holding no ClientHello
    b"GET / HTTP/1.1\r\nHost: device\r\n\r\n",
])
def test_garbage_instead_of_a_client_hello_is_closed(agent, device, credential, garbage):
    sock = tcp_connection(agent)
    sock.sendall(garbage)
    read_until_closed(sock)
    sock.close()
    assert device.info()["sessions"] == 1
    _serves_on(agent, credential)


def test_a_handshake_that_stalls_is_given_up(start_agent):
    agent = start_agent(frame_timeout_s=0.5)
    sock = tcp_connection(agent)
    sock.sendall(b"\x16\x03\x01\x40\x00" + b"\x01" * 10)  # a 16 KiB ClientHello, begun
    read_until_closed(sock)
    sock.close()
    assert wait_until(lambda: agent.connection_count() == 0)

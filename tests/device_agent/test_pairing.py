"""Pairing with the printed code (SPAKE2 over TLS) pins each end's certificate; a paired host
is known by its certificate from the first frame, across restarts of either side; a connection
without one may only say hello and pair."""

from __future__ import annotations

import datetime
import json
import os
import stat

import pytest

from workbench_device.client import DeviceClient
from workbench_device.protocol import (
    Err,
    ProtocolError,
    RemoteError,
    encode_header,
    encode_prefix,
)
from workbench_device.tls import load_or_make_identity

from .conftest import (
    HOST_ID,
    Credential,
    connect,
    host_identity,
    new_host_identity,
    pair,
    raw_connection,
    read_raw_frame,
)
from .links import HandPairing


def _wrong(code: str) -> str:
    return f"{(int(code) + 1) % 1000000:06d}"


def _hosts_file(agent):
    return agent.data_dir / "paired_hosts.json"


def test_hello_tells_a_new_host_to_pair_and_a_paired_one_that_its_certificate_is_known(agent):
    identity = new_host_identity(agent)
    with DeviceClient.for_pairing("127.0.0.1", agent.port, identity) as client:
        hello = client.hello(HOST_ID)
        assert hello["protocol"] == 4 and hello["versions"] == [2, 3, 4]
        assert hello["paired"] is False and hello["auth"] == "pairing"
        assert hello["cert_fingerprint"] == agent.identity.fingerprint == client.peer_fingerprint
        assert hello["device_id"] == agent.device_id and hello["name"] == agent.name
        assert hello["agent"].startswith("workbench-device-agent/") and hello["max_chunk"] > 0
        assert "nonce" not in hello
        pin = client.pair(HOST_ID, "laptop", agent.pairing.code)
    with DeviceClient("127.0.0.1", agent.port, identity=identity, pin=pin) as client:
        hello = client.hello(HOST_ID)
        assert hello["paired"] is True and hello["auth"] == "certificate"
    # The same host without its certificate is a stranger again.
    with DeviceClient.for_pairing("127.0.0.1", agent.port, identity) as client:
        assert client.hello(HOST_ID)["paired"] is False


def test_the_right_code_pins_both_certificates_and_changes_the_code(start_agent):
    codes = []
    agent = start_agent(on_pairing_code=codes.append)
    code = agent.pairing.code
    assert len(code) == 6 and code.isdigit()
    identity = new_host_identity(agent)
    with DeviceClient.for_pairing("127.0.0.1", agent.port, identity) as client:
        client.hello(HOST_ID)
        pin = client.pair(HOST_ID, "laptop", code)
        assert pin == agent.identity.fingerprint
        assert client.info()["device_id"] == agent.device_id  # pairing authenticated it
    saved = json.loads(_hosts_file(agent).read_text())
    assert list(saved) == [HOST_ID]
    assert saved[HOST_ID]["cert"] == identity.cert_der.hex() and saved[HOST_ID]["name"] == "laptop"
    assert stat.S_IMODE(os.stat(_hosts_file(agent)).st_mode) == 0o600
    assert agent.paired_hosts.host_of(identity.cert_der) == HOST_ID
    assert codes == [agent.pairing.code] and agent.pairing.code != code
    # The old code pairs nobody any more; the new one does.
    other = new_host_identity(agent, "second-host")
    with DeviceClient.for_pairing("127.0.0.1", agent.port, other) as client:
        with pytest.raises(RemoteError) as error:
            client.pair("second-host", "other", code)
        assert error.value.code == Err.BAD_CODE
        assert client.pair("second-host", "other", agent.pairing.code) == pin
    assert sorted(json.loads(_hosts_file(agent).read_text())) == [HOST_ID, "second-host"]


def test_a_paired_host_is_authenticated_from_its_first_frame_with_no_code(agent, credential):
    code = agent.pairing.code
    with DeviceClient("127.0.0.1", agent.port, identity=credential.identity,
                      pin=credential.pin) as client:
        assert client.info()["device_id"] == agent.device_id  # no hello, no code
        assert client.open_session()
    assert agent.pairing.code == code  # connecting is no pairing
    second = pair(agent, "second-host")
    for paired in (credential, second):
        with connect(agent, paired, session=False) as client:
            assert client.info()["name"] == agent.name


def test_restarting_either_side_needs_no_new_pairing(start_agent, tmp_path):
    first = start_agent(data_dir=tmp_path / "device")
    credential = pair(first, identity=host_identity(tmp_path / "host"))
    device_id, hosts = first.device_id, _hosts_file(first).read_bytes()
    first.stop()
    # The host starts again too: its identity comes back from its folder.
    identity = load_or_make_identity(tmp_path / "host", "another name")
    assert identity.fingerprint == credential.identity.fingerprint
    second = start_agent(data_dir=tmp_path / "device")
    assert second.device_id == device_id
    assert second.identity.fingerprint == credential.pin  # the same certificate
    with connect(second, Credential(HOST_ID, identity, credential.pin)) as client:
        assert client.hello_reply["paired"] is True
        assert client.info()["sessions"] == 1
    assert _hosts_file(second).read_bytes() == hosts


def test_pair_finish_answers_only_the_pair_begin_before_it(agent):
    wrong = _wrong(agent.pairing.code)
    with HandPairing(agent.port, new_host_identity(agent)) as hand:
        reply = hand.request({"type": "pair.finish", "confirm": "00" * 32})
        assert reply["code"] == Err.BAD_REQUEST and "pair.begin first" in reply["message"]
        assert hand.begin(wrong)["type"] == "pair.begin.ok"
        reply = hand.finish()
        assert reply["code"] == Err.BAD_CODE and reply["attempts_left"] == 4
        # The same confirmation again: that begin is used up, so it is no second guess.
        assert hand.finish()["code"] == Err.BAD_REQUEST
        assert hand.pair(wrong)["attempts_left"] == 3
        assert hand.pair(agent.pairing.code)["type"] == "pair.finish.ok"
        # Nor does a successful pairing take a second finish.
        assert hand.finish()["code"] == Err.BAD_REQUEST
    assert list(json.loads(_hosts_file(agent).read_text())) == [HOST_ID]


def test_an_abandoned_pair_begin_costs_no_attempt(agent):
    code = agent.pairing.code
    identity = new_host_identity(agent)
    with HandPairing(agent.port, identity) as hand:
        for _ in range(8):  # begun again and again on one connection
            assert hand.begin(_wrong(code))["type"] == "pair.begin.ok"
    for _ in range(8):  # and on connections that close after it
        with HandPairing(agent.port, identity) as hand:
            assert hand.begin(code)["type"] == "pair.begin.ok"
    assert agent.pairing.code == code and not _hosts_file(agent).exists()
    with HandPairing(agent.port, identity) as hand:
        assert hand.pair(_wrong(code))["attempts_left"] == 4
        assert hand.pair(code)["type"] == "pair.finish.ok"


def test_a_malformed_pair_begin_is_a_bad_request_and_no_guess(agent):
    identity = new_host_identity(agent)
    with HandPairing(agent.port, identity) as hand:
        assert hand.begin(agent.pairing.code)["type"] == "pair.begin.ok"
        good = dict(hand.sent[-1])
        del good["id"]
        for change in ({"host_id": None}, {"host_id": ""}, {"host_id": "h" * 201},
                       {"cert": None}, {"cert": "not hex"}, {"cert": "30" * 40},
                       {"pake": None}, {"pake": "zz"}, {"pake": "00" * 33},
                       {"pake": "41" + "ff" * 32}, {"pake": "4101"}, {"pake": "41" + "ab" * 16}):
            reply = hand.request({**good, **change})
            assert reply["type"] == "error" and reply["code"] == Err.BAD_REQUEST, change
            # A refused begin leaves nothing to finish.
            assert hand.request({"type": "pair.finish", "confirm": "00" * 32})["code"] == \
                Err.BAD_REQUEST
        assert hand.pair(_wrong(agent.pairing.code))["attempts_left"] == 4


def _identity_valid(folder, not_before, not_after):
    """A host identity whose certificate is valid only from ``not_before`` to ``not_after``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "old laptop")])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(not_before).not_valid_after(not_after)
            .sign(key, hashes.SHA256()))
    folder.mkdir(parents=True)
    key_file, cert_file = folder / "link-key.pem", folder / "link-cert.pem"
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    os.chmod(key_file, 0o600)
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return load_or_make_identity(folder, "unused")


def test_a_pinned_certificate_is_not_judged_by_its_dates(agent, tmp_path):
    # A board's clock may say any year: the pin is what counts, not the validity period.
    expired = _identity_valid(tmp_path / "host", datetime.datetime(2001, 1, 1),
                              datetime.datetime(2002, 1, 1))
    credential = pair(agent, identity=expired)
    with connect(agent, credential, session=False) as client:
        assert client.hello_reply["paired"] is True and client.info()["name"] == agent.name


def test_a_paired_host_pairing_again_replaces_its_certificate(agent):
    old = pair(agent)
    new = pair(agent)  # the same host id, a new identity (its key was lost)
    assert old.identity.fingerprint != new.identity.fingerprint
    saved = json.loads(_hosts_file(agent).read_text())
    assert list(saved) == [HOST_ID] and saved[HOST_ID]["cert"] == new.identity.cert_der.hex()
    with connect(agent, new, session=False) as client:
        assert client.hello_reply["paired"] is True
    with pytest.raises(ProtocolError) as error:
        connect(agent, old, session=False)
    assert error.value.code == Err.NOT_PAIRED


@pytest.mark.parametrize("fields,chosen", [
    ({"protocol": 2}, 2), ({"versions": [2]}, 2), ({"versions": [2], "protocol": 9}, 2),
    ({"versions": [1, 2]}, 2), ({"protocol": 3}, 3), ({"versions": [3, 1, 2]}, 3),
    ({"protocol": 9}, 4), ({"versions": [2, 3, 4]}, 4), ({"versions": [2, 3]}, 3),
    ({"versions": [2, 3, 4, 5]}, 4),
])
def test_hello_answers_the_highest_version_both_speak(agent, fields, chosen):
    with raw_connection(agent) as sock:
        header = encode_header({"type": "hello", "id": 1, **fields})
        sock.sendall(encode_prefix(len(header), 0) + header)
        reply, _ = read_raw_frame(sock)
    assert reply["type"] == "hello.ok" and reply["protocol"] == chosen
    assert reply["versions"] == [2, 3, 4]


def test_a_hello_with_no_version_in_common_gets_unsupported_version_and_may_try_again(agent):
    with DeviceClient.for_pairing("127.0.0.1", agent.port, new_host_identity(agent)) as client:
        for fields in ({}, {"protocol": 1}, {"versions": [1]}, {"versions": [5, 6]}):
            with pytest.raises(RemoteError) as error:
                client.request("hello", **fields)
            assert error.value.code == Err.UNSUPPORTED_VERSION, fields
            assert error.value.extra["versions"] == [2, 3, 4]
            assert "2, 3, 4" in error.value.message
        for fields in ({"versions": []}, {"versions": [2.0]}, {"versions": "2"},
                       {"protocol": "2"}, {"protocol": 0}, {"versions": [True]}):
            with pytest.raises(RemoteError) as error:
                client.request("hello", **fields)
            assert error.value.code == Err.BAD_REQUEST, fields
        assert client.hello(HOST_ID)["protocol"] == 4  # the connection goes on


@pytest.mark.parametrize("request_type,fields", [
    ("info", {}), ("session.open", {"runtime": "onnxruntime"}),
    ("push.begin", {"sha256": "ab" * 32, "size": 10}), ("model.has", {"sha256": "ab" * 32}),
    ("file.get", {"path": "x"}), ("script.run", {"path": "x.py"}), ("logs.subscribe", {}),
    ("no.such.type", {}),
])
def test_a_connection_without_a_certificate_may_only_pair(agent, credential, request_type,
                                                          fields):
    # Even the identity of a paired host, when it does not offer its certificate.
    with DeviceClient.for_pairing("127.0.0.1", agent.port, credential.identity) as client:
        with pytest.raises(RemoteError) as error:
            client.request(request_type, **fields)
        assert error.value.code == Err.NOT_AUTHENTICATED
        assert "pair" in error.value.message
        assert client.hello(HOST_ID)["paired"] is False  # the connection goes on


def test_a_large_payload_before_pairing_closes_the_connection_unread(agent):
    client = DeviceClient.for_pairing("127.0.0.1", agent.port, new_host_identity(agent))
    header = encode_header({"type": "file.put", "id": 5, "path": "x", "size": 10 * 1024 * 1024})
    client.fs.sock.sendall(encode_prefix(len(header), 10 * 1024 * 1024) + header)
    with pytest.raises(RemoteError) as error:
        client.receive(5)
    assert error.value.code == Err.NOT_AUTHENTICATED
    assert client.fs.sock.recv(1) == b""
    client.fs.close()

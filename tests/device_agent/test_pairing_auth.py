"""Pairing with the printed code, the lock after wrong codes, and challenge-response auth."""

from __future__ import annotations

import json
import os
import stat
import time

import pytest

from workbench_device.client import DeviceClient
from workbench_device.protocol import Err, ProtocolError, RemoteError, hmac_proof, new_nonce

from .conftest import HOST_ID, pair


def _client(agent, host_id=HOST_ID) -> DeviceClient:
    client = DeviceClient("127.0.0.1", agent.port)
    client.hello(host_id)
    return client


def test_hello_tells_a_new_host_to_pair_and_a_paired_one_to_authenticate(agent):
    with DeviceClient("127.0.0.1", agent.port) as client:
        hello = client.hello(HOST_ID)
        assert hello["protocol"] == 1 and hello["paired"] is False and hello["auth"] == "pairing"
        assert hello["device_id"] == agent.device_id and hello["name"] == agent.name
        assert len(bytes.fromhex(hello["nonce"])) >= 16
        assert hello["agent"].startswith("workbench-device-agent/")
    pair(agent)
    with DeviceClient("127.0.0.1", agent.port) as client:
        hello = client.hello(HOST_ID)
        assert hello["paired"] is True and hello["auth"] == "challenge"
        assert client.hello(HOST_ID)["nonce"] != hello["nonce"]


def test_the_right_code_pairs_and_the_secret_is_kept_for_the_agents_user_only(agent):
    code = agent.pairing.code
    assert len(code) == 6 and code.isdigit()
    client = _client(agent)
    secret = client.pair(HOST_ID, "laptop", code)
    assert len(bytes.fromhex(secret)) == 32
    assert client.info()["device_id"] == agent.device_id  # pairing authenticates the connection
    client.close()
    path = agent.data_dir / "paired_hosts.json"
    assert json.loads(path.read_text()) == {HOST_ID: secret}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_the_code_changes_after_a_pairing_and_the_old_one_no_longer_pairs(start_agent):
    codes = []
    agent = start_agent(on_pairing_code=codes.append)
    old = agent.pairing.code
    pair(agent, "first-host")
    assert codes == [agent.pairing.code] and agent.pairing.code != old
    client = _client(agent, "second-host")
    with pytest.raises(RemoteError) as error:
        client.pair("second-host", "other", old)
    assert error.value.code == Err.BAD_CODE
    assert client.pair("second-host", "other", agent.pairing.code)
    client.close()


def test_wrong_codes_lock_pairing_for_everyone_until_the_lock_ends(start_agent):
    agent = start_agent(pairing_lock_s=1.0)
    wrong = f"{(int(agent.pairing.code) + 1) % 1000000:06d}"
    codes = []
    for attempt in range(5):
        # Each guess on a new connection: reconnecting does not reset the count.
        with DeviceClient("127.0.0.1", agent.port) as client:
            client.hello(HOST_ID)
            with pytest.raises(RemoteError) as error:
                client.pair(HOST_ID, "guesser", wrong)
            codes.append(error.value.code)
            if attempt < 4:
                assert error.value.extra["attempts_left"] == 4 - attempt
    assert codes == [Err.BAD_CODE] * 4 + [Err.PAIRING_LOCKED]
    client = _client(agent)
    with pytest.raises(RemoteError) as error:
        client.pair(HOST_ID, "owner", agent.pairing.code)  # even the right code, while locked
    assert error.value.code == Err.PAIRING_LOCKED and 0 < error.value.extra["seconds"] <= 1
    deadline = time.monotonic() + 20
    while agent.pairing.seconds_locked() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert client.pair(HOST_ID, "owner", agent.pairing.code)
    client.close()


def test_a_paired_host_authenticates_and_checks_the_agents_answer(agent):
    secret = pair(agent)
    client = _client(agent)
    client.authenticate(HOST_ID, secret)
    assert client.info()["sessions"] == 0
    client.close()


def test_a_wrong_proof_or_an_unknown_host_fails_auth(agent):
    secret = pair(agent)
    client = _client(agent)
    host_nonce = new_nonce()
    nonce = client.hello_reply["nonce"]
    for fields in ({"host_id": HOST_ID, "host_nonce": host_nonce,
                    "proof": hmac_proof("00" * 32, nonce, host_nonce)},
                   {"host_id": HOST_ID, "host_nonce": host_nonce, "proof": "nonsense"},
                   {"host_id": HOST_ID, "host_nonce": host_nonce,
                    "proof": hmac_proof(secret, new_nonce(), host_nonce)},
                   {"host_id": "stranger", "host_nonce": host_nonce,
                    "proof": hmac_proof(secret, nonce, host_nonce)}):
        with pytest.raises(RemoteError) as error:
            client.request("auth", **fields)
        assert error.value.code == Err.AUTH_FAILED
    with pytest.raises(RemoteError) as error:
        client.info()
    assert error.value.code == Err.NOT_AUTHENTICATED
    with pytest.raises(RemoteError) as error:
        client.request("auth", host_id=HOST_ID, host_nonce="ab", proof="00")
    assert error.value.code == Err.BAD_REQUEST
    client.authenticate(HOST_ID, secret)  # the same connection can still prove itself
    client.close()


def test_a_host_holding_the_wrong_secret_cannot_authenticate(agent):
    pair(agent)
    client = _client(agent)
    with pytest.raises(ProtocolError) as error:
        client.authenticate(HOST_ID, "11" * 32)
    assert error.value.code == Err.AUTH_FAILED
    client.close()


@pytest.mark.parametrize("request_type,fields", [
    ("info", {}), ("session.open", {"runtime": "onnxruntime"}),
    ("push.begin", {"sha256": "ab" * 32, "size": 10}), ("model.has", {"sha256": "ab" * 32}),
    ("file.get", {"path": "x"}), ("script.run", {"path": "x.py"}), ("logs.subscribe", {}),
    ("no.such.type", {}),
])
def test_requests_before_auth_are_refused(agent, request_type, fields):
    client = _client(agent)
    with pytest.raises(RemoteError) as error:
        client.request(request_type, **fields)
    assert error.value.code == Err.NOT_AUTHENTICATED
    assert client.hello(HOST_ID)["paired"] is False  # the connection goes on
    client.close()


def test_auth_needs_a_hello_first(agent):
    secret = pair(agent)
    with DeviceClient("127.0.0.1", agent.port) as client:
        host_nonce = new_nonce()
        with pytest.raises(RemoteError) as error:
            client.request("auth", host_id=HOST_ID, host_nonce=host_nonce,
                           proof=hmac_proof(secret, new_nonce(), host_nonce))
        assert error.value.code == Err.BAD_REQUEST


def test_a_large_payload_before_auth_closes_the_connection_unread(agent):
    client = _client(agent)
    header_only = {"type": "file.put", "id": 5, "path": "x", "size": 10 * 1024 * 1024}
    from workbench_device.protocol import encode_header, encode_prefix

    header = encode_header(header_only)
    client.fs.sock.sendall(encode_prefix(len(header), 10 * 1024 * 1024) + header)
    with pytest.raises(RemoteError) as error:
        client.receive(5)
    assert error.value.code == Err.NOT_AUTHENTICATED
    assert client.fs.sock.recv(1) == b""
    client.fs.close()


def test_pairings_survive_a_restart_of_the_agent(start_agent, tmp_path):
    first = start_agent(data_dir=tmp_path / "device")
    secret = pair(first)
    device_id = first.device_id
    first.stop()
    second = start_agent(data_dir=tmp_path / "device")
    assert second.device_id == device_id
    client = _client(second)
    client.authenticate(HOST_ID, secret)
    client.close()

"""Pairing with the printed code, the lock after wrong codes, and challenge-response auth."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time

import pytest

from workbench_device.auth import MAX_FAILED_AUTHS
from workbench_device.client import DeviceClient
from workbench_device.pairing import PairedHosts, Pairing, source_of
from workbench_device.protocol import (
    Err,
    ProtocolError,
    RemoteError,
    encode_header,
    encode_prefix,
    hmac_proof,
    new_nonce,
)

from .conftest import HOST_ID, closed_by_peer, pair, read_raw_frame

OTHER_ADDRESS = "127.0.0.2"


def _pair_from(address: str, port: int, code: str) -> dict:
    """The reply to a ``pair`` sent on a new connection from ``address`` (another loopback
    address: on Linux all of 127/8 is this machine); skips where the system has only
    127.0.0.1."""
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=10,
                                        source_address=(address, 0))
    except OSError as exc:
        pytest.skip(f"cannot connect from {address} here: {exc}")
    with sock:
        header = encode_header({"type": "pair", "id": 1, "host_id": HOST_ID,
                                "host_name": "guesser", "code": code})
        sock.sendall(encode_prefix(len(header), 0) + header)
        reply, _ = read_raw_frame(sock)
    return reply


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


def test_wrong_codes_lock_pairing_for_their_address_only_until_the_lock_ends(start_agent):
    agent = start_agent(pairing_lock_s=1.0)
    wrong = f"{(int(agent.pairing.code) + 1) % 1000000:06d}"
    # Each guess on a new connection: reconnecting does not reset the count.
    answers = [_pair_from(OTHER_ADDRESS, agent.port, wrong) for _ in range(5)]
    assert [a["code"] for a in answers] == [Err.BAD_CODE] * 4 + [Err.PAIRING_LOCKED]
    assert [a["attempts_left"] for a in answers[:4]] == [4, 3, 2, 1]
    locked = _pair_from(OTHER_ADDRESS, agent.port, agent.pairing.code)  # even the right code
    assert locked["code"] == Err.PAIRING_LOCKED and 0 < locked["seconds"] <= 1
    assert "wait" in locked["message"]
    # The owner, at another address, is not locked out by the guesser.
    owner = _client(agent, "owner-host")
    assert owner.pair("owner-host", "owner", agent.pairing.code)
    owner.close()
    deadline = time.monotonic() + 20
    while agent.pairing.seconds_locked(f"{OTHER_ADDRESS}:1") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _pair_from(OTHER_ADDRESS, agent.port, agent.pairing.code)["type"] == "pair.ok"


def test_each_wrong_code_is_logged_with_its_address_and_the_attempts_left(tmp_path):
    data_dir = tmp_path / "d"
    with open(tmp_path / "agent.stderr", "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "workbench_device", "--port", "0", "--data-dir", str(data_dir),
             "--no-mdns", "--json"], stdout=subprocess.PIPE, stderr=stderr, text=True)
    try:
        listening = json.loads(process.stdout.readline())
        code = listening["pairing_code"]
        wrong = f"{(int(code) + 1) % 1000000:06d}"
        client = DeviceClient("127.0.0.1", int(listening["port"]))
        client.hello(HOST_ID)
        for _ in range(2):
            with pytest.raises(RemoteError):
                client.pair(HOST_ID, "guesser", wrong)
        client.close()
        log_file = data_dir / "agent.log"
        deadline = time.monotonic() + 10
        while "3 attempts left" not in log_file.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        lines = [line for line in log_file.read_text().splitlines() if " WARNING " in line]
    finally:
        process.terminate()
        process.wait(timeout=20)
        process.stdout.close()
    assert len(lines) == 2 and all("wrong pairing code from 127.0.0.1" in line for line in lines)
    assert "4 attempts left" in lines[0] and "3 attempts left" in lines[1]
    assert not any(wrong in line or code in line for line in lines)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _wrong_code(pairing: Pairing) -> str:
    return f"{(int(pairing.code) + 1) % 1000000:06d}"


def _try(pairing: Pairing, source: str, code: str):
    try:
        pairing.pair("h", "h", code, source=source)
    except ProtocolError as exc:
        return exc
    return None


def test_many_addresses_guessing_lock_pairing_for_everyone(tmp_path):
    clock = _Clock()
    pairing = Pairing(PairedHosts(tmp_path / "hosts.json"), clock=clock,
                      global_wrong_codes_before_lock=8, global_window_seconds=60,
                      global_lock_seconds=600)
    wrong = _wrong_code(pairing)
    answers = [_try(pairing, f"10.0.0.{n // 2}:5000", wrong) for n in range(8)]  # 2 per address
    assert [a.code for a in answers] == [Err.BAD_CODE] * 7 + [Err.PAIRING_LOCKED]
    # attempts_left counts down to the lock that comes first: here the global one.
    assert [a.extra["attempts_left"] for a in answers[:7]] == [4, 3, 4, 3, 3, 2, 1]
    assert answers[7].extra["seconds"] == 600
    fresh = _try(pairing, "10.9.9.9:1", pairing.code)  # an address that never guessed
    assert fresh.code == Err.PAIRING_LOCKED and fresh.extra["seconds"] == 600
    assert "every host" in fresh.message
    clock.now += 600
    assert _try(pairing, "10.9.9.9:1", pairing.code) is None


def test_wrong_codes_spread_over_time_do_not_add_up_to_the_global_lock(tmp_path):
    clock = _Clock()
    pairing = Pairing(PairedHosts(tmp_path / "hosts.json"), clock=clock,
                      global_wrong_codes_before_lock=4, global_window_seconds=60)
    wrong = _wrong_code(pairing)
    for n in range(10):
        assert _try(pairing, f"10.0.1.{n}:1", wrong).code == Err.BAD_CODE
        clock.now += 30  # at most 2 in any minute


def test_a_right_code_resets_the_counts_but_not_a_lock_in_force(tmp_path):
    clock = _Clock()
    pairing = Pairing(PairedHosts(tmp_path / "hosts.json"), clock=clock)
    wrong = _wrong_code(pairing)
    for _ in range(5):
        _try(pairing, "10.0.0.1:1", wrong)
    for _ in range(4):
        _try(pairing, "10.0.0.2:1", wrong)
    assert _try(pairing, "10.0.0.3:1", pairing.code) is None
    assert _try(pairing, "10.0.0.1:1", pairing.code).code == Err.PAIRING_LOCKED
    wrong = _wrong_code(pairing)
    assert _try(pairing, "10.0.0.2:1", wrong).extra["attempts_left"] == 4


def test_an_ipv6_machine_counts_as_one_address_across_its_64(tmp_path):
    assert source_of("2001:db8:0:1::5:40000") == source_of("2001:db8:0:1:ffff::9:40001")
    assert source_of("2001:db8:0:1::5:40000") != source_of("2001:db8:0:2::5:40000")
    assert source_of("::ffff:192.0.2.7:80") == source_of("192.0.2.7:81") == "192.0.2.7"
    assert source_of("::1:7300") == "::1"
    clock = _Clock()
    pairing = Pairing(PairedHosts(tmp_path / "hosts.json"), clock=clock)
    wrong = _wrong_code(pairing)
    answers = [_try(pairing, f"2001:db8:0:1::{n + 1}:5000", wrong) for n in range(5)]
    assert answers[-1].code == Err.PAIRING_LOCKED


def test_a_paired_host_authenticates_and_checks_the_agents_answer(agent):
    secret = pair(agent)
    client = _client(agent)
    client.authenticate(HOST_ID, secret)
    assert client.info()["sessions"] == 0
    client.close()


def test_a_wrong_proof_or_an_unknown_host_fails_auth(agent):
    secret = pair(agent)
    host_nonce = new_nonce()
    for wrong in (lambda nonce: {"host_id": HOST_ID, "proof": hmac_proof("00" * 32, nonce,
                                                                        host_nonce)},
                  lambda nonce: {"host_id": HOST_ID, "proof": "nonsense"},
                  lambda nonce: {"host_id": HOST_ID,
                                 "proof": hmac_proof(secret, new_nonce(), host_nonce)},
                  lambda nonce: {"host_id": "stranger",
                                 "proof": hmac_proof(secret, nonce, host_nonce)}):
        client = _client(agent)  # a connection for each: a third failure would close it
        with pytest.raises(RemoteError) as error:
            client.request("auth", host_nonce=host_nonce, **wrong(client.hello_reply["nonce"]))
        assert error.value.code == Err.AUTH_FAILED
        with pytest.raises(RemoteError) as error:
            client.info()
        assert error.value.code == Err.NOT_AUTHENTICATED
        client.hello(HOST_ID)
        with pytest.raises(RemoteError) as error:
            client.request("auth", host_id=HOST_ID, host_nonce="ab", proof="00")
        assert error.value.code == Err.BAD_REQUEST
        client.authenticate(HOST_ID, secret)  # after a new hello the connection proves itself
        assert client.info()["device_id"] == agent.device_id
        client.close()


def test_a_nonce_serves_one_auth_whatever_its_outcome(agent):
    secret = pair(agent)
    client = _client(agent)
    nonce = client.hello_reply["nonce"]
    host_nonce = new_nonce()
    right = hmac_proof(secret, nonce, host_nonce)
    with pytest.raises(RemoteError) as error:
        client.request("auth", host_id=HOST_ID, host_nonce=host_nonce, proof="00" * 32)
    assert error.value.code == Err.AUTH_FAILED and "hello" in error.value.message
    # The right proof for that same nonce comes too late: the failure used the nonce up.
    with pytest.raises(RemoteError) as error:
        client.request("auth", host_id=HOST_ID, host_nonce=host_nonce, proof=right)
    assert error.value.code == Err.BAD_REQUEST and "hello" in error.value.message
    client.hello(HOST_ID)
    nonce = client.hello_reply["nonce"]
    client.request("auth", host_id=HOST_ID, host_nonce=host_nonce,
                   proof=hmac_proof(secret, nonce, host_nonce))
    # A successful auth uses its nonce up as well: replaying it is refused.
    with pytest.raises(RemoteError) as error:
        client.request("auth", host_id=HOST_ID, host_nonce=host_nonce,
                       proof=hmac_proof(secret, nonce, host_nonce))
    assert error.value.code == Err.BAD_REQUEST
    client.close()


def test_the_client_says_hello_again_when_its_nonce_was_used(agent):
    secret = pair(agent)
    client = _client(agent)
    with pytest.raises(ProtocolError):
        client.authenticate(HOST_ID, "11" * 32)
    first = client.hello_reply["nonce"]
    client.authenticate(HOST_ID, secret)
    assert client.hello_reply["nonce"] != first
    assert client.info()["device_id"] == agent.device_id
    client.close()


def test_repeated_failed_auths_close_the_connection(agent):
    secret = pair(agent)
    client = _client(agent)
    for attempt in range(MAX_FAILED_AUTHS):
        if attempt:
            client.hello(HOST_ID)
        host_nonce = new_nonce()
        with pytest.raises(RemoteError) as error:
            client.request("auth", host_id=HOST_ID, host_nonce=host_nonce,
                           proof=hmac_proof("22" * 32, client.hello_reply["nonce"], host_nonce))
        assert error.value.code == Err.AUTH_FAILED
    assert "closes" in error.value.message
    assert closed_by_peer(client.fs.sock)
    client.fs.close()
    client = _client(agent)  # other connections are not affected
    client.authenticate(HOST_ID, secret)
    client.close()


@pytest.mark.parametrize("fields,chosen", [
    ({}, 1),                                  # a host from before versions were negotiated
    ({"protocol": 1}, 1),
    ({"protocol": 3}, 1),                     # speaks 1 to 3
    ({"versions": [1]}, 1),
    ({"versions": [3, 1, 2]}, 1),
    ({"versions": [1], "protocol": 9}, 1),    # the list wins
])
def test_hello_answers_the_version_both_ends_speak(agent, fields, chosen):
    sock = socket.create_connection(("127.0.0.1", agent.port), timeout=10)
    header = encode_header({"type": "hello", "id": 1, **fields})
    sock.sendall(encode_prefix(len(header), 0) + header)
    reply, _ = read_raw_frame(sock)
    assert reply["type"] == "hello.ok" and reply["protocol"] == chosen
    assert reply["versions"] == [1] and reply["nonce"]
    sock.close()


def test_a_hello_with_no_version_in_common_gets_unsupported_version_and_may_try_again(agent):
    client = DeviceClient("127.0.0.1", agent.port)
    for fields in ({"versions": [2, 3]}, {"protocol": 0, "versions": [7]}):
        with pytest.raises(RemoteError) as error:
            client.request("hello", **fields)
        assert error.value.code == Err.UNSUPPORTED_VERSION
        assert error.value.extra["versions"] == [1] and "1" in error.value.message
    for fields in ({"versions": []}, {"versions": [1.0]}, {"versions": "1"}, {"protocol": "1"},
                   {"protocol": 0}, {"versions": [True]}):
        with pytest.raises(RemoteError) as error:
            client.request("hello", **fields)
        assert error.value.code == Err.BAD_REQUEST, fields
    # A failed hello leaves no nonce to answer.
    host_nonce = new_nonce()
    with pytest.raises(RemoteError) as error:
        client.request("auth", host_id=HOST_ID, host_nonce=host_nonce, proof="00" * 32)
    assert error.value.code == Err.BAD_REQUEST
    assert client.hello(HOST_ID)["protocol"] == 1  # the connection goes on
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

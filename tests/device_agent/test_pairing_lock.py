"""Wrong pairing codes: each is one guess (a host confirmation that does not match); five in a
row lock pairing for that address, twenty from all addresses within a minute lock it for
everyone, and the right code is refused while a lock holds."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from workbench_device.client import DeviceClient
from workbench_device.pairing import PairedHosts, Pairing, source_of
from workbench_device.pake import PairingExchange
from workbench_device.protocol import Err, ProtocolError, RemoteError
from workbench_device.tls import fingerprint

from .conftest import HOST_ID, host_identity, new_host_identity
from .links import HandPairing, wait_until

OTHER_ADDRESS = "127.0.0.2"


def _wrong(code: str) -> str:
    return f"{(int(code) + 1) % 1000000:06d}"


def _guess(agent, identity, source: str, code: str) -> dict:
    """The answer to one pairing with ``code`` on a new connection from ``source``."""
    with HandPairing(agent.port, identity, source=source) as hand:
        return hand.pair(code)


def test_wrong_codes_lock_pairing_for_their_address_only_until_the_lock_ends(start_agent):
    agent = start_agent(pairing_lock_s=1.0)
    guesser = new_host_identity(agent, "guesser")
    wrong = _wrong(agent.pairing.code)
    # Each guess on a new connection: reconnecting does not reset the count.
    answers = [_guess(agent, guesser, OTHER_ADDRESS, wrong) for _ in range(5)]
    assert [a["code"] for a in answers] == [Err.BAD_CODE] * 4 + [Err.PAIRING_LOCKED]
    assert [a["attempts_left"] for a in answers[:4]] == [4, 3, 2, 1]
    assert answers[4]["seconds"] == 1 and "locked" in answers[4]["message"]
    # Even the right code is refused from there while the lock holds (at pair.begin).
    with HandPairing(agent.port, guesser, source=OTHER_ADDRESS) as hand:
        locked = hand.begin(agent.pairing.code)
    assert locked["code"] == Err.PAIRING_LOCKED and 0 < locked["seconds"] <= 1
    assert "wait" in locked["message"]
    assert not (agent.data_dir / "paired_hosts.json").exists()
    # The owner, at another address, is not locked out by the guesser.
    owner = new_host_identity(agent, "owner")
    with DeviceClient.for_pairing("127.0.0.1", agent.port, owner) as client:
        assert client.pair("owner", "owner", agent.pairing.code) == agent.identity.fingerprint
    assert wait_until(lambda: not agent.pairing.seconds_locked(f"{OTHER_ADDRESS}:1"), 20)
    assert _guess(agent, guesser, OTHER_ADDRESS, agent.pairing.code)["type"] == \
        "pair.finish.ok"
    assert sorted(json.loads((agent.data_dir / "paired_hosts.json").read_text())) == \
        [HOST_ID, "owner"]


def test_wrong_codes_from_many_addresses_lock_pairing_for_everyone(agent):
    guesser = new_host_identity(agent, "guesser")
    wrong = _wrong(agent.pairing.code)
    sources = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]
    answers = {source: [_guess(agent, guesser, source, wrong) for _ in range(5)]
               for source in sources}
    for source in sources:
        assert [a["code"] for a in answers[source]] == [Err.BAD_CODE] * 4 + [Err.PAIRING_LOCKED]
        assert [a["attempts_left"] for a in answers[source][:4]] == [4, 3, 2, 1]
    # The twentieth wrong code within the minute locked everyone, for ten minutes.
    assert answers[sources[-1]][4]["seconds"] == 600
    assert "every host" in answers[sources[-1]][4]["message"]
    owner = new_host_identity(agent, "owner")
    with DeviceClient.for_pairing("127.0.0.1", agent.port, owner) as client:
        with pytest.raises(RemoteError) as error:
            client.pair("owner", "owner", agent.pairing.code)  # right code, never guessed here
    assert error.value.code == Err.PAIRING_LOCKED and "every host" in error.value.message
    assert 590 <= error.value.extra["seconds"] <= 600
    assert not (agent.data_dir / "paired_hosts.json").exists()


def test_each_wrong_code_is_logged_with_its_address_and_the_attempts_left(tmp_path):
    data_dir = tmp_path / "d"
    with open(tmp_path / "agent.stderr", "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "workbench_device", "--port", "0", "--data-dir", str(data_dir),
             "--no-mdns", "--json"], stdout=subprocess.PIPE, stderr=stderr, text=True)
    try:
        listening = json.loads(process.stdout.readline())
        code = listening["pairing_code"]
        wrong = _wrong(code)
        identity = host_identity(tmp_path / "host")
        with DeviceClient.for_pairing("127.0.0.1", int(listening["port"]), identity) as client:
            client.hello(HOST_ID)
            for _ in range(2):
                with pytest.raises(RemoteError):
                    client.pair(HOST_ID, "guesser", wrong)
        log_file = data_dir / "agent.log"
        assert wait_until(lambda: "3 attempts left" in log_file.read_text())
        # Only the pairing's warnings: another program on this machine may hold the default
        # inference port, which the agent warns about too.
        lines = [line for line in log_file.read_text().splitlines()
                 if " WARNING " in line and "pairing" in line]
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


def _try(pairing: Pairing, source: str, code: str):
    """One pairing of a host that types ``code``, straight on ``pairing``: the ProtocolError it
    raises, None when it paired."""
    cert = b"a host certificate"
    host = PairingExchange("host", code)
    agent_fingerprint = fingerprint(b"the agent's certificate")
    try:
        exchange = pairing.begin(source)
        exchange.finish(host.message, "h", agent_fingerprint, fingerprint(cert))
        host.finish(exchange.message, "h", agent_fingerprint, fingerprint(cert))
        pairing.finish(exchange, host.confirmation(), "h", "h", cert, source=source)
    except ProtocolError as exc:
        return exc
    return None


def test_many_addresses_guessing_lock_pairing_for_everyone_until_the_lock_ends(tmp_path):
    clock = _Clock()
    pairing = Pairing(PairedHosts(tmp_path / "hosts.json"), clock=clock,
                      global_wrong_codes_before_lock=8, global_window_seconds=60,
                      global_lock_seconds=600)
    wrong = _wrong(pairing.code)
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
    wrong = _wrong(pairing.code)
    for n in range(10):
        assert _try(pairing, f"10.0.1.{n}:1", wrong).code == Err.BAD_CODE
        clock.now += 30  # at most 2 in any minute


def test_a_right_code_resets_the_counts_but_not_a_lock_in_force(tmp_path):
    clock = _Clock()
    pairing = Pairing(PairedHosts(tmp_path / "hosts.json"), clock=clock)
    wrong = _wrong(pairing.code)
    for _ in range(5):
        _try(pairing, "10.0.0.1:1", wrong)
    for _ in range(4):
        _try(pairing, "10.0.0.2:1", wrong)
    assert _try(pairing, "10.0.0.3:1", pairing.code) is None
    assert _try(pairing, "10.0.0.1:1", pairing.code).code == Err.PAIRING_LOCKED
    wrong = _wrong(pairing.code)
    assert _try(pairing, "10.0.0.2:1", wrong).extra["attempts_left"] == 4


def test_a_confirmation_for_a_code_that_changed_meanwhile_is_refused(tmp_path):
    pairing = Pairing(PairedHosts(tmp_path / "hosts.json"))
    cert, agent_fingerprint = b"slow host", fingerprint(b"agent")
    slow = PairingExchange("host", pairing.code)
    exchange = pairing.begin("10.0.0.7:1")  # begun with the code as it was
    exchange.finish(slow.message, "slow", agent_fingerprint, fingerprint(cert))
    slow.finish(exchange.message, "slow", agent_fingerprint, fingerprint(cert))
    assert _try(pairing, "10.0.0.8:1", pairing.code) is None  # another host pairs: new code
    with pytest.raises(ProtocolError) as error:
        pairing.finish(exchange, slow.confirmation(), "slow", "slow", cert, source="10.0.0.7:1")
    assert error.value.code == Err.BAD_CODE and "changed" in error.value.message
    assert "slow" not in pairing.hosts


def test_an_ipv6_machine_counts_as_one_address_across_its_64(tmp_path):
    assert source_of("2001:db8:0:1::5:40000") == source_of("2001:db8:0:1:ffff::9:40001")
    assert source_of("2001:db8:0:1::5:40000") != source_of("2001:db8:0:2::5:40000")
    assert source_of("::ffff:192.0.2.7:80") == source_of("192.0.2.7:81") == "192.0.2.7"
    assert source_of("::1:7300") == "::1"
    pairing = Pairing(PairedHosts(tmp_path / "hosts.json"), clock=_Clock())
    wrong = _wrong(pairing.code)
    answers = [_try(pairing, f"2001:db8:0:1::{n + 1}:5000", wrong) for n in range(5)]
    assert answers[-1].code == Err.PAIRING_LOCKED


def test_a_lock_seen_in_time_ends_when_it_says(tmp_path):
    clock = _Clock()
    pairing = Pairing(PairedHosts(tmp_path / "hosts.json"), clock=clock, lock_seconds=60)
    wrong = _wrong(pairing.code)
    for _ in range(5):
        _try(pairing, "10.0.0.1:1", wrong)
    assert pairing.seconds_locked("10.0.0.1:9") == 60 and pairing.seconds_locked() == 0
    clock.now += 59.5
    assert pairing.seconds_locked("10.0.0.1:9") == 1
    assert _try(pairing, "10.0.0.1:1", pairing.code).code == Err.PAIRING_LOCKED
    clock.now += 0.5
    assert _try(pairing, "10.0.0.1:1", pairing.code) is None

"""Pairing by SPAKE2 with the printed code, as section 5 constructs it: the confirmations the
suite computes from the page, the fingerprints they bind, the locks after wrong codes, and the
pinned certificate that authenticates later connections. Tests that spend guesses use agents of
their own: wrong codes count for the whole agent."""

from __future__ import annotations

import hashlib
import secrets
import socket

import pytest

from .frames import AgentError
from .pairing import (
    AGENT_IDENTITY,
    HOST_IDENTITY,
    HostExchange,
    confirmations,
    fingerprint,
    hkdf_sha256,
    transcript,
)

# Section 5: wrong codes in a row from one address before it is locked; wrong codes from all
# addresses within a minute before everyone is locked (an agent may lock sooner).
PER_ADDRESS = 5
EVERYONE_AT_MOST = 20

# Section 5, "Worked example".
EXAMPLE = {
    "code": "123456",
    "host_id": "laptop-7f3a",
    "x": 0x049fd7ac78c92d565b1bffd5bd1821ed9d2e6cd20eb9c56615f23256369f228f,
    "y": 0x07ad0bdc3f01714a308e5ed0c4a1b0de6887d55673fc7b950021b3652f983987,
    "agent_fingerprint": bytes(range(0xa0, 0xc0)).hex(),
    "host_fingerprint": bytes(range(0x40, 0x60)).hex(),
    "M": "15cfd18e385952982b6a8f8c7854963b58e34388c8e6dae891db756481a02312",
    "N": "f04f2e7eb734b2a8f8b472eaf9c3c632576ac64aea650b496a8a20ff00e583c3",
    "w": 0x0492bad4137b4603523abed89d72a885a975cc8331e61ed82585cf6721a4173d,
    "msg_A": "41192c6bd1c369cfafa41f2eb9b3a9816b9fca34f13f5a7e22c37daf96bfdee083",
    "msg_B": "42e7b0e677a5b7e624bf4b0a67f044bfef9dca48493c0ec39c74e3dd4142588072",
    "K_point": "7fea83217a6e9de7010489d1eeecebefa5dca7897c86ca105ec5803aee65c341",
    "K": "f93e42f59230d68052a5f4a8abc264df9b3b29ce6955aee45edfdbb5ac74a638",
    "transcript": "d90cd25b981c89a474540817756f002c4e4b8e1204a21dc5dea82abaf1aa7de1",
    "host_key": "d2efd8464b0ff8217622ba539578dff6d87ad6d7d39b74312b3c3a09bedfdbb7",
    "agent_key": "6b9a1f025096c43b15581296bba371bc7a2425ea64ee070ea46cd579370f83b6",
    "host_confirm": "b0781cdb7c40546c9ed05e675a396b450eb3256e2444776dca1b2e59e08fb87b",
    "agent_confirm": "5cf41095f555d8fb0815bfb0b9ddcc4347c40fd597a92ca0a9029d344892e123",
}


def _other_addresses(port: int, count: int):
    """``count`` loopback addresses besides 127.0.0.1 that can reach the agent (Linux routes all
    of 127/8 to this machine); skips the test where they cannot."""
    addresses = [f"127.0.0.{n}" for n in range(2, 2 + count)]
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5,
                                 source_address=(addresses[-1], 0)).close()
    except OSError as exc:
        pytest.skip(f"this system cannot connect from {addresses[-1]}: {exc}")
    return addresses


def _wrong(code: str) -> str:
    return f"{(int(code) + 1) % 1000000:06d}"


def _guess_from(agent, identity, address, code, host_id="guesser"):
    link = agent.link(source=address)
    try:
        return link.guess(identity, host_id, code)
    finally:
        link.close()


@pytest.fixture(scope="module")
def pairing_agent(start_agent):
    return start_agent()


def test_the_worked_example_is_what_the_construction_gives():
    from spake2 import SPAKE2_B
    from spake2.parameters.ed25519 import ParamsEd25519

    params = ParamsEd25519
    assert params.M.to_bytes().hex() == EXAMPLE["M"] and params.N.to_bytes().hex() == EXAMPLE["N"]
    assert params.group.password_to_scalar(EXAMPLE["code"].encode()) == EXAMPLE["w"]
    host = HostExchange(EXAMPLE["code"], scalar=EXAMPLE["x"])
    agent = SPAKE2_B(EXAMPLE["code"].encode(), idA=HOST_IDENTITY, idB=AGENT_IDENTITY,
                     entropy_f=lambda count: EXAMPLE["y"].to_bytes(count, "big"))
    agent_message = agent.start()
    assert host.message.hex() == EXAMPLE["msg_A"] and agent_message.hex() == EXAMPLE["msg_B"]
    host_confirm = host.finish(agent_message, EXAMPLE["host_id"], EXAMPLE["agent_fingerprint"],
                               EXAMPLE["host_fingerprint"])
    assert agent.finish(host.message) == host.key
    # The key as section 5 derives it from the shared point K.
    key = hashlib.sha256(b"".join([
        hashlib.sha256(EXAMPLE["code"].encode()).digest(), hashlib.sha256(HOST_IDENTITY).digest(),
        hashlib.sha256(AGENT_IDENTITY).digest(), bytes.fromhex(EXAMPLE["msg_A"])[1:],
        bytes.fromhex(EXAMPLE["msg_B"])[1:], bytes.fromhex(EXAMPLE["K_point"])])).digest()
    assert key.hex() == host.key.hex() == EXAMPLE["K"]
    assert host.transcript.hex() == EXAMPLE["transcript"]
    assert transcript(EXAMPLE["host_id"], host.message, agent_message,
                      EXAMPLE["agent_fingerprint"], EXAMPLE["host_fingerprint"]) == host.transcript
    assert hkdf_sha256(key, b"workbench-device pairing v2 host confirm").hex() == \
        EXAMPLE["host_key"]
    assert hkdf_sha256(key, b"workbench-device pairing v2 agent confirm").hex() == \
        EXAMPLE["agent_key"]
    assert host_confirm == EXAMPLE["host_confirm"]
    assert confirmations(key, host.transcript) == {"host": EXAMPLE["host_confirm"],
                                                  "agent": EXAMPLE["agent_confirm"]}


def test_the_printed_code_pairs_and_the_pinned_certificate_then_needs_no_code(pairing_agent,
                                                                              make_host):
    identity = make_host("laptop")
    host_id = "host-" + secrets.token_hex(4)
    link = pairing_agent.link()  # no certificate: this connection may only pair
    try:
        hello = link.hello()
        assert hello["paired"] is False and hello["auth"] == "pairing"
        assert link.error("info")["code"] == "not_authenticated"
        code = pairing_agent.code
        assert len(code) == 6 and code.isdigit()
        link.pair(identity, host_id, code)  # the agent's confirmation is checked there
        assert link.ok("info")["device_id"] == hello["device_id"]  # pairing authenticated it
        new_code = pairing_agent.wait_for_new_code(code)
        assert new_code != code
        pin = link.agent_fingerprint
    finally:
        link.close()
    link = pairing_agent.link(identity=identity, pin=pin)
    try:
        hello = link.hello()
        assert hello["paired"] is True and hello["auth"] == "certificate"
        assert link.ok("info")["device_id"] == hello["device_id"]
        # The old code is spent: as another host it is a wrong code.
        other = link.guess(make_host("other"), "other-" + host_id, code)
        assert other["code"] == "bad_code" and other["attempts_left"] == 4
        # A right code resets the count of wrong ones (for the tests after this one).
        link.pair(make_host("other"), "other-" + host_id, new_code)
        pairing_agent.wait_for_new_code(new_code)
    finally:
        link.close()


def test_pairing_a_host_id_again_replaces_its_certificate(pairing_agent, make_host):
    host_id = "replaced-" + secrets.token_hex(4)
    old, new = make_host("old"), make_host("new")
    pairing_agent.pair(old, host_id)
    pin = pairing_agent.pair(new, host_id)
    link = pairing_agent.link(identity=new, pin=pin)
    try:
        assert link.hello()["paired"] is True
    finally:
        link.close()
    link = pairing_agent.link(identity=old)
    try:
        link.send_raw(b"")  # the handshake is over on this side; the agent's answer follows
        assert link.refused_by_agent()
    finally:
        link.close()


def test_pair_finish_answers_the_pair_begin_before_it_once(start_agent, make_host):
    agent = start_agent()
    identity = make_host("once")
    link = agent.link()
    try:
        assert link.error("pair.finish", confirm="00" * 32)["code"] == "bad_request"
        exchange = link.begin_pairing(identity, "once-host", agent.code)
        link.ok("pair.finish", confirm=exchange.expected["host"])
        # That begin served its finish: the same confirmation again has nothing to answer.
        assert link.error("pair.finish", confirm=exchange.expected["host"])["code"] == \
            "bad_request"
    finally:
        link.close()


def test_malformed_pairing_requests_and_unfinished_ones_cost_no_guess(start_agent, make_host):
    agent = start_agent()
    identity = make_host("careful")
    message = HostExchange("000000").message
    side_b = b"B" + message[1:]
    link = agent.link()
    try:
        fields = {"host_id": "h", "cert": identity.cert_der.hex(), "pake": message.hex()}
        for bad in ({"host_id": ""}, {"host_id": None}, {"cert": "zz"},
                    {"cert": b"not a certificate".hex()}, {"pake": "zz"}, {"pake": None},
                    {"pake": side_b.hex()},
                    {"pake": (b"A" + b"\xff" * 32).hex()}):
            request = dict(fields, **bad)
            request = {k: v for k, v in request.items() if v is not None}
            assert link.error("pair.begin", **request)["code"] == "bad_request", bad
        for _ in range(PER_ADDRESS + 1):  # begun, never finished: nothing to check a guess on
            link.begin_pairing(identity, "h", _wrong(agent.code))
        guess = link.guess(identity, "h", _wrong(agent.code))
        assert guess["code"] == "bad_code" and guess["attempts_left"] == PER_ADDRESS - 1
    finally:
        link.close()


def test_confirmations_bind_both_certificates_so_a_relay_cannot_pair(start_agent, make_host):
    agent = start_agent()
    identity, relay = make_host("victim"), make_host("relay")
    link = agent.link()
    try:
        code = agent.code
        # A host behind a relay sees the relay's certificate where the agent put its own.
        exchange = link.begin_pairing(identity, "h", code,
                                      agent_fingerprint=fingerprint(relay.cert_der))
        error = link.error("pair.finish", confirm=exchange.expected["host"])
        assert error["code"] == "bad_code" and error["attempts_left"] == 4
        # A relay that puts its own certificate in pair.begin cannot confirm the host's.
        exchange = link.begin_pairing(identity, "h", code, cert=relay.cert_der)
        error = link.error("pair.finish", confirm=exchange.expected["host"])
        assert error["code"] == "bad_code" and error["attempts_left"] == 3
        link.pair(identity, "h", code)  # the code was right all along
    finally:
        link.close()


def test_a_replayed_confirmation_does_not_pair(start_agent, make_host):
    agent = start_agent()
    identity = make_host("replayed")
    code = agent.code
    first = agent.link()
    second = agent.link()
    try:
        recorded = first.begin_pairing(identity, "h", code).expected["host"]  # never sent
        first.begin_pairing(identity, "h", code)  # a fresh agent message replaces that one
        assert first.error("pair.finish", confirm=recorded)["code"] == "bad_code"
        second.begin_pairing(identity, "h", code)
        assert second.error("pair.finish", confirm=recorded)["code"] == "bad_code"
        with pytest.raises(AgentError):
            second.ok("info")
    finally:
        first.close()
        second.close()


def test_five_wrong_codes_lock_pairing_for_their_address(start_agent, make_host):
    agent = start_agent()
    identity = make_host("guesser")
    code = agent.code
    answers = []
    for _ in range(PER_ADDRESS):  # each guess on a new connection: the count is the address's
        answers.append(_guess_from(agent, identity, "127.0.0.1", _wrong(code)))
    assert [a["code"] for a in answers] == ["bad_code"] * 4 + ["pairing_locked"]
    assert [a["attempts_left"] for a in answers[:4]] == [4, 3, 2, 1]
    assert 0 < answers[4]["seconds"] <= 60
    link = agent.link()
    try:
        locked = link.guess(make_host("owner"), "owner", code)  # even the right code
        assert locked["code"] == "pairing_locked" and 0 < locked["seconds"] <= 60
        assert link.hello()["auth"] == "pairing"  # hello still works
    finally:
        link.close()


def test_a_guessing_address_does_not_lock_out_another(start_agent, make_host):
    agent = start_agent()
    guesser, = _other_addresses(agent.port, 1)
    identity = make_host("guesser")
    code = agent.code
    answers = [_guess_from(agent, identity, guesser, _wrong(code)) for _ in range(PER_ADDRESS)]
    assert [a["code"] for a in answers] == ["bad_code"] * 4 + ["pairing_locked"]
    assert _guess_from(agent, identity, guesser, code)["code"] == "pairing_locked"
    owner = _guess_from(agent, make_host("owner"), "127.0.0.1", code, host_id="owner")
    assert owner["type"] == "pair.finish.ok"
    agent.wait_for_new_code(code)


def test_many_addresses_guessing_lock_pairing_for_everyone(start_agent, make_host):
    agent = start_agent()
    guessers = _other_addresses(agent.port, 6)
    newcomer = guessers.pop()
    identity = make_host("guesser")
    code = agent.code
    answers = []
    # Round robin, four each: no address reaches its own lock, all of them together do.
    for attempt in range(EVERYONE_AT_MOST):
        answers.append(_guess_from(agent, identity, guessers[attempt % len(guessers)],
                                   _wrong(code)))
        if answers[-1]["code"] == "pairing_locked":
            break
    assert answers[-1]["code"] == "pairing_locked" and answers[-1]["seconds"] > 0
    assert all(a["code"] == "bad_code" for a in answers[:-1])
    locked = _guess_from(agent, make_host("owner"), newcomer, code, host_id="owner")
    assert locked["code"] == "pairing_locked" and locked["seconds"] > 0

"""Pairing with the printed code, the locks after wrong codes, and mutual challenge-response
authentication (section 5). Pairing tests use agents of their own: wrong codes count for the
whole agent."""

from __future__ import annotations

import secrets
import socket

import pytest

from .frames import is_hex, proof

# Section 5: wrong codes in a row from one address before it is locked; wrong codes from all
# addresses within a minute before everyone is locked (an agent may lock sooner).
PER_ADDRESS = 5
EVERYONE_AT_MOST = 20


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


def _pair_from(agent, address, code, host_id="guesser"):
    link = agent.link(source=address)
    try:
        return link.send_and_reply("pair", host_id=host_id, code=code)
    finally:
        link.close()


@pytest.fixture(scope="module")
def pairing_agent(start_agent):
    return start_agent()


def test_the_documented_proofs_are_what_hmac_sha256_over_the_nonce_bytes_gives():
    secret = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
    nonce = "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
    host_nonce = "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
    assert proof(secret, nonce, host_nonce) == \
        "7af47480e10f2d8e46f2b8d21e89b0d3519972a1935c6604d7533cb34a586f80"
    assert proof(secret, host_nonce, nonce) == \
        "f779b0f0a30bdcb3c9f2fe2e4172fe3b510fceb47a7d1e2627391787e828c142"


def test_the_printed_code_pairs_authenticates_and_is_replaced(pairing_agent):
    host_id = "host-" + secrets.token_hex(4)
    link = pairing_agent.link()
    try:
        hello = link.hello(host_id)
        assert hello["paired"] is False and hello["auth"] == "pairing"
        code = pairing_agent.code
        assert len(code) == 6 and code.isdigit()
        secret = link.ok("pair", host_id=host_id, host_name="laptop", code=code)["secret"]
        assert is_hex(secret, 64)
        assert link.ok("info")["device_id"] == hello["device_id"]  # pairing authenticated it
        new_code = pairing_agent.wait_for_new_code(code)
        assert new_code != code
    finally:
        link.close()
    link = pairing_agent.link()
    try:
        hello = link.hello(host_id)
        assert hello["paired"] is True and hello["auth"] == "challenge"
        link.authenticate(host_id, secret)
        assert link.ok("info")["device_id"] == hello["device_id"]
        other = link.error("pair", host_id="other-" + host_id, code=code)  # the old code
        assert other["code"] == "bad_code" and other["attempts_left"] == 4
        # A right code resets the count of wrong ones (for the tests after this one).
        assert link.ok("pair", host_id="other-" + host_id, code=new_code)["secret"]
        pairing_agent.wait_for_new_code(new_code)
    finally:
        link.close()


def test_a_code_sent_as_an_integer_pairs_too(pairing_agent):
    link = pairing_agent.link()
    try:
        code = pairing_agent.code
        assert link.ok("pair", host_id="integer-host", code=int(code))["secret"]
        pairing_agent.wait_for_new_code(code)
    finally:
        link.close()


def test_auth_is_mutual_and_refuses_wrong_proofs_and_unknown_hosts(pairing_agent):
    host_id = "auth-" + secrets.token_hex(4)
    secret = pairing_agent.pair(host_id)
    host_nonce = secrets.token_hex(32)
    wrong = [
        lambda nonce: {"host_id": host_id, "proof": proof("00" * 32, nonce, host_nonce)},
        lambda nonce: {"host_id": host_id, "proof": proof(secret, host_nonce, nonce)},  # swapped
        lambda nonce: {"host_id": host_id,
                       "proof": proof(secret, secrets.token_hex(32), host_nonce)},  # old nonce
        lambda nonce: {"host_id": host_id, "proof": "not a proof"},
        lambda nonce: {"host_id": "never-paired", "proof": proof(secret, nonce, host_nonce)},
    ]
    for fields in wrong:
        link = pairing_agent.link()  # one failure each: the third on a connection closes it
        try:
            nonce = link.hello(host_id)["nonce"]
            error = link.error("auth", host_nonce=host_nonce, **fields(nonce))
            assert error["code"] == "auth_failed", fields(nonce)
            assert link.error("info")["code"] == "not_authenticated"
            nonce = link.hello(host_id)["nonce"]
            short = link.error("auth", host_id=host_id, host_nonce="abcd",
                               proof=proof(secret, nonce, "abcd"))
            assert short["code"] == "bad_request"
            # After a new hello the connection proves itself, and the agent proves itself back.
            nonce = link.hello(host_id)["nonce"]
            reply = link.ok("auth", host_id=host_id, host_nonce=host_nonce,
                            proof=proof(secret, nonce, host_nonce))
            assert reply["proof_agent"] == proof(secret, host_nonce, nonce)
            assert reply["proof_agent"] != proof(secret, nonce, host_nonce)
            assert link.ok("info")["device_id"]
        finally:
            link.close()


def test_a_nonce_serves_one_auth_whatever_its_outcome(pairing_agent):
    host_id = "once-" + secrets.token_hex(4)
    secret = pairing_agent.pair(host_id)
    link = pairing_agent.link()
    try:
        nonce = link.hello(host_id)["nonce"]
        host_nonce = secrets.token_hex(32)
        assert link.error("auth", host_id=host_id, host_nonce=host_nonce,
                          proof="00" * 32)["code"] == "auth_failed"
        # The right proof for the same nonce: too late, the failed auth used it up.
        late = link.error("auth", host_id=host_id, host_nonce=host_nonce,
                          proof=proof(secret, nonce, host_nonce))
        assert late["code"] == "bad_request"
        assert link.error("info")["code"] == "not_authenticated"
        nonce = link.hello(host_id)["nonce"]
        right = proof(secret, nonce, host_nonce)
        link.ok("auth", host_id=host_id, host_nonce=host_nonce, proof=right)
        # A successful auth uses its nonce up too: the same proof again is refused.
        again = link.error("auth", host_id=host_id, host_nonce=host_nonce, proof=right)
        assert again["code"] == "bad_request"
        assert link.ok("info")["device_id"]  # the connection stays authenticated
    finally:
        link.close()


def test_three_failed_auths_close_the_connection(pairing_agent):
    host_id = "failing-" + secrets.token_hex(4)
    secret = pairing_agent.pair(host_id)
    link = pairing_agent.link()
    try:
        for attempt in range(3):
            nonce = link.hello(host_id)["nonce"]
            host_nonce = secrets.token_hex(32)
            error = link.error("auth", host_id=host_id, host_nonce=host_nonce,
                               proof=proof("11" * 32, nonce, host_nonce))
            assert error["code"] == "auth_failed"
        assert link.closed_by_agent()
    finally:
        link.close()
    link = pairing_agent.link()  # the host can connect again
    try:
        link.hello(host_id)
        link.authenticate(host_id, secret)
    finally:
        link.close()


def test_auth_needs_a_hello_on_the_same_connection(pairing_agent):
    host_id = "no-hello-" + secrets.token_hex(4)
    secret = pairing_agent.pair(host_id)
    link = pairing_agent.link()
    try:
        host_nonce = secrets.token_hex(32)
        error = link.error("auth", host_id=host_id, host_nonce=host_nonce,
                           proof=proof(secret, secrets.token_hex(32), host_nonce))
        assert error["code"] == "bad_request"
    finally:
        link.close()


def test_five_wrong_codes_lock_pairing_for_their_address(start_agent):
    agent = start_agent()
    code = agent.code
    wrong = f"{(int(code) + 1) % 1000000:06d}"
    answers = []
    for _ in range(PER_ADDRESS):
        link = agent.link()  # each guess on a new connection: the count is the address's
        try:
            link.hello()
            answers.append(link.error("pair", host_id="guesser", code=wrong))
        finally:
            link.close()
    assert [a["code"] for a in answers] == ["bad_code"] * 4 + ["pairing_locked"]
    assert [a["attempts_left"] for a in answers[:4]] == [4, 3, 2, 1]
    assert 0 < answers[4]["seconds"] <= 60
    link = agent.link()
    try:
        locked = link.error("pair", host_id="owner", code=code)  # even the right code
        assert locked["code"] == "pairing_locked" and 0 < locked["seconds"] <= 60
        assert link.hello()["auth"] == "pairing"  # hello still works
    finally:
        link.close()


def test_a_guessing_address_does_not_lock_out_another(start_agent):
    agent = start_agent()
    guesser, = _other_addresses(agent.port, 1)
    code = agent.code
    wrong = f"{(int(code) + 1) % 1000000:06d}"
    answers = [_pair_from(agent, guesser, wrong) for _ in range(PER_ADDRESS)]
    assert [a["code"] for a in answers] == ["bad_code"] * 4 + ["pairing_locked"]
    assert _pair_from(agent, guesser, code)["code"] == "pairing_locked"
    owner = _pair_from(agent, "127.0.0.1", code, host_id="owner")
    assert owner["type"] == "pair.ok" and is_hex(owner["secret"], 64)
    agent.wait_for_new_code(code)


def test_many_addresses_guessing_lock_pairing_for_everyone(start_agent):
    agent = start_agent()
    guessers = _other_addresses(agent.port, 6)
    newcomer = guessers.pop()
    code = agent.code
    wrong = f"{(int(code) + 1) % 1000000:06d}"
    answers = []
    # Round robin, four each: no address reaches its own lock, all of them together do.
    for attempt in range(EVERYONE_AT_MOST):
        answers.append(_pair_from(agent, guessers[attempt % len(guessers)], wrong))
        if answers[-1]["code"] == "pairing_locked":
            break
    assert answers[-1]["code"] == "pairing_locked" and answers[-1]["seconds"] > 0
    assert all(a["code"] == "bad_code" for a in answers[:-1])
    locked = _pair_from(agent, newcomer, code, host_id="owner")  # never guessed, right code
    assert locked["code"] == "pairing_locked" and locked["seconds"] > 0

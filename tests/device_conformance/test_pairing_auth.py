"""Pairing with the printed code, the lock after wrong codes, and mutual challenge-response
authentication (section 5). Pairing tests use agents of their own: wrong codes count for the
whole agent."""

from __future__ import annotations

import secrets

import pytest

from .frames import is_hex, proof


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
    link = pairing_agent.link()
    try:
        nonce = link.hello(host_id)["nonce"]
        host_nonce = secrets.token_hex(32)
        wrong = [
            {"host_id": host_id, "host_nonce": host_nonce,
             "proof": proof("00" * 32, nonce, host_nonce)},                   # another secret
            {"host_id": host_id, "host_nonce": host_nonce,
             "proof": proof(secret, host_nonce, nonce)},                      # nonces swapped
            {"host_id": host_id, "host_nonce": host_nonce,
             "proof": proof(secret, secrets.token_hex(32), host_nonce)},      # an old nonce
            {"host_id": host_id, "host_nonce": host_nonce, "proof": "not a proof"},
            {"host_id": "never-paired", "host_nonce": host_nonce,
             "proof": proof(secret, nonce, host_nonce)},
        ]
        for fields in wrong:
            assert link.error("auth", **fields)["code"] == "auth_failed", fields
        assert link.error("info")["code"] == "not_authenticated"
        short = link.error("auth", host_id=host_id, host_nonce="abcd",
                           proof=proof(secret, nonce, "abcd"))
        assert short["code"] == "bad_request"
        # The same connection can still prove itself, and the agent proves itself back.
        reply = link.ok("auth", host_id=host_id, host_nonce=host_nonce,
                        proof=proof(secret, nonce, host_nonce))
        assert reply["proof_agent"] == proof(secret, host_nonce, nonce)
        assert reply["proof_agent"] != proof(secret, nonce, host_nonce)
        assert link.ok("info")["device_id"]
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


def test_five_wrong_codes_lock_pairing_for_everyone(start_agent):
    agent = start_agent()
    code = agent.code
    wrong = f"{(int(code) + 1) % 1000000:06d}"
    answers = []
    for _ in range(5):
        link = agent.link()  # each guess on a new connection: the count is the agent's
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

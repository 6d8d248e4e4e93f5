"""The handshake of a connection: ``hello`` (the protocol version both ends speak, and a nonce)
and the challenge-response authentication of a paired host, with the agent's answer that proves
the agent holds the same secret (mutual).

``hello`` gives the host a fresh agent nonce; the host sends ``auth`` with its own nonce and
HMAC-SHA256(secret, agent_nonce + host_nonce); the agent checks it in constant time and answers
HMAC-SHA256(secret, host_nonce + agent_nonce). Neither side ever sends the secret.

A nonce serves one ``auth``, whatever its outcome: a host that failed asks for a new challenge
with another ``hello``, so no two proofs are ever checked against the same challenge. A
connection whose auths fail ``MAX_FAILED_AUTHS`` times is closed.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

from workbench_device.pairing import PairedHosts
from workbench_device.protocol import (
    SUPPORTED_VERSIONS,
    Err,
    FrameError,
    ProtocolError,
    field_of,
    hmac_proof,
    negotiate_version,
    new_nonce,
    proofs_match,
)

# A host holding the secret never fails twice; past this a connection is guessing.
MAX_FAILED_AUTHS = 3


def verify_host(hosts: PairedHosts, host_id: Any, agent_nonce: str, host_nonce: Any,
                proof: Any) -> str:
    """The agent's proof for the host once the host's ``proof`` checks out; ProtocolError
    auth_failed when the host is not paired or its proof is wrong."""
    if not isinstance(host_id, str) or not host_id:
        raise ProtocolError(Err.BAD_REQUEST, "auth needs the field 'host_id'")
    if not isinstance(host_nonce, str) or len(host_nonce) < 32:
        raise ProtocolError(Err.BAD_REQUEST, "auth needs 'host_nonce': at least 16 random bytes "
                                             "in hex")
    secret = hosts.secret_for(host_id)
    if secret is None:
        raise ProtocolError(Err.AUTH_FAILED, "this host is not paired with the device; pair "
                                             "again with the code the device shows")
    expected = hmac_proof(secret, agent_nonce, host_nonce)
    if not proofs_match(expected, proof):
        raise ProtocolError(Err.AUTH_FAILED, "the host's proof does not match: the secret it "
                                             "holds is not this device's; pair again")
    return hmac_proof(secret, host_nonce, agent_nonce)


class Handshake:
    """One connection's ``hello`` and ``auth``: the version its hello chose, the nonce of its
    last hello (until an ``auth`` uses it) and how many of its auths failed."""

    def __init__(self, hosts: PairedHosts, max_failed_auths: int = MAX_FAILED_AUTHS):
        self.hosts = hosts
        self.max_failed_auths = max_failed_auths
        self.version: Optional[int] = None
        self.failed_auths = 0
        self._nonce: Optional[str] = None

    def hello(self, header: Mapping[str, Any]) -> Dict[str, Any]:
        """The handshake's fields of ``hello.ok``: the chosen ``protocol``, the ``versions`` the
        agent speaks, whether ``host_id`` is paired, and a fresh ``nonce``. ProtocolError
        unsupported_version (a hello that fails leaves the connection without a nonce)."""
        self._nonce = None
        self.version = negotiate_version(header)
        host_id = header.get("host_id")
        paired = isinstance(host_id, str) and host_id in self.hosts
        self._nonce = new_nonce()
        return {"protocol": self.version, "versions": list(SUPPORTED_VERSIONS), "paired": paired,
                "auth": "challenge" if paired else "pairing", "nonce": self._nonce}

    def auth(self, header: Mapping[str, Any]) -> Tuple[str, str]:
        """``(host_id, proof_agent)`` when the host's proof answers the last hello's nonce.
        ProtocolError bad_request (no unused nonce; a malformed field) or auth_failed; the
        failure that reaches ``max_failed_auths`` is a FrameError, so the connection closes."""
        nonce, self._nonce = self._nonce, None
        if nonce is None:
            raise ProtocolError(Err.BAD_REQUEST, "send hello first: auth answers the nonce of the "
                                                 "last hello, and each nonce serves one auth")
        host_id = field_of(header, "host_id", str)
        try:
            proof_agent = verify_host(self.hosts, host_id, nonce, header.get("host_nonce"),
                                      header.get("proof"))
        except ProtocolError as exc:
            if exc.code != Err.AUTH_FAILED:
                raise
            self.failed_auths += 1
            if self.failed_auths >= self.max_failed_auths:
                raise FrameError(Err.AUTH_FAILED, f"{exc.message}; after {self.failed_auths} "
                                 "failed auths the device closes this connection") from None
            raise ProtocolError(Err.AUTH_FAILED, f"{exc.message} (send hello for a new nonce "
                                                 "before the next auth)") from None
        return host_id, proof_agent

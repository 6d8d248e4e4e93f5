"""Challenge-response authentication of a paired host, and the agent's answer that proves the
agent holds the same secret (mutual).

``hello`` gives the host a fresh agent nonce; the host sends ``auth`` with its own nonce and
HMAC-SHA256(secret, agent_nonce + host_nonce); the agent checks it in constant time and answers
HMAC-SHA256(secret, host_nonce + agent_nonce). Neither side ever sends the secret.
"""

from __future__ import annotations

from typing import Any

from workbench_device.pairing import PairedHosts
from workbench_device.protocol import Err, ProtocolError, hmac_proof, proofs_match


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

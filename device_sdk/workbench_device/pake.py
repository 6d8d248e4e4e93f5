"""Pairing by PAKE: the 6-digit code becomes a shared key without ever crossing the network, and
that key confirms which certificates the two ends saw.

The construction (the protocol page, section 5, says it for implementers in other languages):

1. SPAKE2 (the ``spake2`` package: Ed25519 group, SHA-256) with the code's 6 ASCII digits as the
   password; the host is side A with identity ``workbench-host``, the agent side B with identity
   ``workbench-device-agent``. Each side sends one message and gets a 32-byte key ``K``. Someone
   who only listens learns nothing about the code; someone who plays one side gets to try one
   code per exchange.
2. The transcript: ``SHA-256("workbench-device pairing v2" || len-prefixed host_id || msg_A ||
   msg_B || agent certificate fingerprint || host certificate fingerprint)``, each fingerprint
   being the 32-byte SHA-256 of a certificate's DER as *this end* sees it: the agent's own
   certificate and the one the host claims; the host's own and the one its TLS connection got.
3. Two confirmation keys from ``K`` by HKDF-SHA256 (no salt; info ``workbench-device pairing v2
   host confirm`` / ``... agent confirm``), and each side sends ``HMAC-SHA256(its key,
   transcript)``. The host confirms first; the agent checks it before it pins anything or
   answers with its own.

A wrong code makes the confirmations differ. So does a relay that terminates TLS with a
certificate of its own: the host then sees the relay's certificate where the agent put its own,
and no code makes the two transcripts agree. A replayed host message meets a fresh agent message,
so its old confirmation does not fit either.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any, Optional

CONTEXT = b"workbench-device pairing v2"
# A side byte and a compressed Ed25519 point. The spake2 package decodes shorter input too (and
# ``A\x01`` as the identity point, which its own check would refuse), so the length is checked.
MESSAGE_BYTES = 33
HOST_IDENTITY = b"workbench-host"
AGENT_IDENTITY = b"workbench-device-agent"
HOST_CONFIRM_INFO = CONTEXT + b" host confirm"
AGENT_CONFIRM_INFO = CONTEXT + b" agent confirm"


class PakeError(ValueError):
    """A PAKE message that is not a valid point of the group (or came from the wrong side)."""


def _hkdf(key: bytes, info: bytes) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(key)


def transcript(host_id: str, host_message: bytes, agent_message: bytes, agent_fingerprint: str,
               host_fingerprint: str) -> bytes:
    """What both confirmations cover (see the module's docstring)."""
    host_id_bytes = host_id.encode("utf-8")
    digest = hashlib.sha256(CONTEXT)
    digest.update(len(host_id_bytes).to_bytes(4, "big") + host_id_bytes)
    digest.update(host_message)
    digest.update(agent_message)
    digest.update(bytes.fromhex(agent_fingerprint))
    digest.update(bytes.fromhex(host_fingerprint))
    return digest.digest()


class PairingExchange:
    """One side of one pairing attempt. ``role`` is "host" or "agent"."""

    def __init__(self, role: str, code: str):
        from spake2 import SPAKE2_A, SPAKE2_B  # only pairing needs it

        if role not in ("host", "agent"):
            raise ValueError(f"role must be 'host' or 'agent', not {role!r}")
        self.role = role
        side = SPAKE2_A if role == "host" else SPAKE2_B
        self._spake = side(str(code).strip().encode("ascii", "replace"),
                           idA=HOST_IDENTITY, idB=AGENT_IDENTITY)
        self.message = self._spake.start()
        self._transcript: Optional[bytes] = None
        self._host_key = b""
        self._agent_key = b""

    def finish(self, peer_message: bytes, host_id: str, agent_fingerprint: str,
               host_fingerprint: str) -> None:
        """Take the other side's message and the fingerprints as this side sees them.
        PakeError when the message is no SPAKE2 message of the other side."""
        if len(peer_message) != MESSAGE_BYTES:
            raise PakeError(f"the pairing message must be {MESSAGE_BYTES} bytes, not "
                            f"{len(peer_message)}")
        try:
            key = self._spake.finish(bytes(peer_message))
        except Exception as exc:  # spake2 raises its own errors and ValueError for bad points
            raise PakeError(f"the pairing message is not valid ({type(exc).__name__})") from None
        host_message, agent_message = ((self.message, bytes(peer_message)) if self.role == "host"
                                       else (bytes(peer_message), self.message))
        self._transcript = transcript(host_id, host_message, agent_message, agent_fingerprint,
                                      host_fingerprint)
        self._host_key = _hkdf(key, HOST_CONFIRM_INFO)
        self._agent_key = _hkdf(key, AGENT_CONFIRM_INFO)

    def _mac(self, key: bytes) -> str:
        if self._transcript is None:
            raise RuntimeError("finish() the exchange first")
        return hmac.new(key, self._transcript, hashlib.sha256).hexdigest()

    def confirmation(self) -> str:
        """This side's confirmation, in hex."""
        return self._mac(self._host_key if self.role == "host" else self._agent_key)

    def confirms(self, peer_confirmation: Any) -> bool:
        """Whether the other side's confirmation matches (constant time)."""
        if not isinstance(peer_confirmation, str):
            return False
        expected = self._mac(self._agent_key if self.role == "host" else self._host_key)
        return hmac.compare_digest(expected.encode(),
                                   peer_confirmation.lower().encode("utf-8", "replace"))

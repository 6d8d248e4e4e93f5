"""The host's identity and its side of pairing, written from docs/device-protocol.md (sections 1
and 5) alone.

Like ``frames.py`` it shares no code with ``workbench_device``. SPAKE2 itself comes from the
``spake2`` package (python-spake2), which the page names as the construction; the transcript,
the confirmation keys and the confirmations are written out here as the page states them.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Optional

# Section 5: the SPAKE2 identities, the transcript's context and the HKDF info strings.
HOST_IDENTITY = b"workbench-host"
AGENT_IDENTITY = b"workbench-device-agent"
CONTEXT = b"workbench-device pairing v2"
HOST_CONFIRM_INFO = b"workbench-device pairing v2 host confirm"
AGENT_CONFIRM_INFO = b"workbench-device pairing v2 agent confirm"
# A SPAKE2 message: the side byte (b"A" from the host, b"B" from the agent) and a 32-byte point.
MESSAGE_BYTES = 33


def fingerprint(der: bytes) -> str:
    """Section 1: the SHA-256 of a certificate's DER bytes, in hex."""
    return hashlib.sha256(der).hexdigest()


@dataclass
class Identity:
    """One end's certificate and key: ``pem`` holds both, as ``ssl`` loads them."""

    pem: Path
    cert_der: bytes

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.cert_der)


def make_identity(folder: Path, name: str,
                  not_before: datetime.datetime = datetime.datetime(2000, 1, 1),
                  not_after: datetime.datetime = datetime.datetime(9999, 12, 31, 23, 59, 59)
                  ) -> Identity:
    """A new ECDSA P-256 key and a self-signed certificate for it (section 1)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (x509.CertificateBuilder()
            .subject_name(subject).issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before).not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    folder.mkdir(parents=True, exist_ok=True)
    pem = folder / f"{name}.pem"
    fd = os.open(str(pem), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(cert.public_bytes(serialization.Encoding.PEM))
        out.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))
    return Identity(pem, cert.public_bytes(serialization.Encoding.DER))


def transcript(host_id: str, host_message: bytes, agent_message: bytes, agent_fingerprint: str,
               host_fingerprint: str) -> bytes:
    """SHA-256 of the context, the length-prefixed host id, both 33-byte messages and both
    32-byte fingerprints (section 5, "The transcript")."""
    host_id_bytes = host_id.encode("utf-8")
    return hashlib.sha256(CONTEXT + len(host_id_bytes).to_bytes(4, "big") + host_id_bytes
                          + host_message + agent_message + bytes.fromhex(agent_fingerprint)
                          + bytes.fromhex(host_fingerprint)).digest()


def hkdf_sha256(key: bytes, info: bytes) -> bytes:
    """RFC 5869 with SHA-256, no salt (32 zero bytes), 32 bytes out: one block of expand."""
    prk = hmac.new(b"\0" * 32, key, hashlib.sha256).digest()
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()


def confirmations(key: bytes, transcript_hash: bytes) -> Dict[str, str]:
    """The host's and the agent's confirmations (hex) for the SPAKE2 key ``key``."""
    return {side: hmac.new(hkdf_sha256(key, info), transcript_hash, hashlib.sha256).hexdigest()
            for side, info in (("host", HOST_CONFIRM_INFO), ("agent", AGENT_CONFIRM_INFO))}


class HostExchange:
    """The host's side of one pairing attempt: SPAKE2 side A with the code's 6 ASCII digits.
    ``scalar`` fixes SPAKE2's random scalar (the page's worked example)."""

    def __init__(self, code: str, scalar: Optional[int] = None):
        from spake2 import SPAKE2_A

        entropy: Optional[Callable[[int], bytes]] = None
        if scalar is not None:
            entropy = lambda count: scalar.to_bytes(count, "big")  # noqa: E731
        options: Dict[str, Any] = {"entropy_f": entropy} if entropy else {}
        self._spake = SPAKE2_A(code.encode("ascii"), idA=HOST_IDENTITY, idB=AGENT_IDENTITY,
                               **options)
        self.message = self._spake.start()
        self.key = b""
        self.transcript = b""
        self.expected: Dict[str, str] = {}

    def finish(self, agent_message: bytes, host_id: str, agent_fingerprint: str,
               host_fingerprint: str) -> str:
        """The host's confirmation, for the agent's message and the fingerprints as this host
        sees them."""
        self.key = self._spake.finish(agent_message)
        self.transcript = transcript(host_id, self.message, agent_message, agent_fingerprint,
                                     host_fingerprint)
        self.expected = confirmations(self.key, self.transcript)
        return self.expected["host"]

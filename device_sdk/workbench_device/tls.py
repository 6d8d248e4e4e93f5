"""The debug link's TLS: every connection is TLS 1.3, and each end is known by its certificate.

Each agent and each host makes its own key pair (ECDSA P-256) and a self-signed certificate on
first use. Nobody signs them: pairing (``pake.py``) is what makes one end trust the other's
certificate, and from then on each end **pins** the other's (by the SHA-256 of its DER bytes).

- The agent is the TLS server. It asks every host for a certificate but lets a connection go on
  without one: such a connection may only pair. A certificate that is offered must be one of the
  pinned hosts' (OpenSSL checks it against a trust store holding exactly those certificates), or
  the handshake fails.
- The host is the TLS client. It checks the agent's certificate itself, after the handshake, by
  comparing its fingerprint with the pin (TLS 1.3 has already made the agent prove it holds the
  certificate's key), so a mismatch can be told apart from any other failure and named.

The certificates are valid from 2000 to 9999: boards without a real-time clock start in 1970 or
some other year, and a pinned certificate has no use for an expiry date.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import socket
import ssl
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from workbench_device.atomic import replace_file

CERT_FILE = "link-cert.pem"
KEY_FILE = "link-key.pem"
# OpenSSL's X509_V_FLAG_NO_CHECK_TIME (the ssl module has no name for it): a pinned certificate's
# dates say nothing, and a board's clock may say anything.
_NO_CHECK_TIME = 0x200000
# The first bytes of a TLS handshake record (content type 22, major version 3).
TLS_HANDSHAKE_START = b"\x16\x03"


class IdentityError(Exception):
    """This end's key or certificate cannot be used; the message says why and what to do."""


def fingerprint(der: bytes) -> str:
    """The SHA-256 of a certificate's DER bytes, in hex: what a pin holds."""
    return hashlib.sha256(der).hexdigest()


def short_fingerprint(fp: str) -> str:
    """A fingerprint as people compare it: ``SHA256:ab12:cd34:...`` (the first 16 bytes)."""
    return "SHA256:" + ":".join(fp[i:i + 4] for i in range(0, 32, 4))


@dataclass
class Identity:
    """One end's certificate and private key, as files the ``ssl`` module loads."""

    cert_file: Path
    key_file: Path
    cert_der: bytes
    password: Optional[bytes] = None
    """The key file's passphrase, when it is encrypted."""

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.cert_der)


def check_private_file(path: Path) -> None:
    """IdentityError when ``path`` can be read by anyone but its owner (as OpenSSH refuses an
    ``id_*`` file that others can read): someone may have copied it, so it is not fixed
    silently."""
    if sys.platform == "win32":  # no POSIX modes; the user's profile folder is private
        return
    mode = os.stat(path).st_mode & 0o777
    if mode & 0o077:
        raise IdentityError(f"{path} can be read by other users (mode {mode:04o}); a private key "
                            f"must be readable by its owner only. Run: chmod 600 {path}")


def make_identity(cert_file: Path, key_file: Path, common_name: str,
                  password: Optional[bytes] = None) -> Identity:
    """A new key pair and self-signed certificate, written to ``key_file`` (mode 0600, encrypted
    with ``password`` when given) and ``cert_file``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name[:64] or "workbench")])
    cert = (x509.CertificateBuilder()
            .subject_name(name).issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(datetime.datetime(2000, 1, 1))
            .not_valid_after(datetime.datetime(9999, 12, 31, 23, 59, 59))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    encryption = (serialization.BestAvailableEncryption(password) if password
                  else serialization.NoEncryption())
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                encryption)
    _write_private(Path(key_file), key_pem)
    _write_private(Path(cert_file), cert.public_bytes(serialization.Encoding.PEM))
    return Identity(Path(cert_file), Path(key_file), cert.public_bytes(serialization.Encoding.DER),
                    password)


def load_identity(cert_file: Path, key_file: Path,
                  password: Optional[bytes] = None) -> Identity:
    """The identity kept in ``cert_file`` and ``key_file``; IdentityError when the key file can be
    read by others, or the files are unreadable or do not belong together."""
    cert_file, key_file = Path(cert_file), Path(key_file)
    check_private_file(key_file)
    try:
        cert_der = ssl.PEM_cert_to_DER_cert(cert_file.read_text(encoding="ascii"))
    except (OSError, ValueError) as exc:
        raise IdentityError(f"the certificate {cert_file} is unreadable ({exc}); move it and "
                            f"{key_file.name} away to make new ones (devices must then be "
                            "paired again)") from None
    identity = Identity(cert_file, key_file, cert_der, password)
    try:
        _context(ssl.PROTOCOL_TLS_CLIENT).load_cert_chain(str(cert_file), str(key_file),
                                                          password=password)
    except (OSError, ssl.SSLError, ValueError) as exc:
        raise IdentityError(f"the key {key_file} cannot be used with {cert_file.name} ({exc}); "
                            "move both away to make new ones (devices must then be paired "
                            "again)") from None
    return identity


def load_or_make_identity(folder: Path, common_name: str,
                          password: Optional[bytes] = None) -> Identity:
    """The identity in ``folder`` (``link-cert.pem``, ``link-key.pem``), made on first use."""
    folder = Path(folder)
    cert_file, key_file = folder / CERT_FILE, folder / KEY_FILE
    if not key_file.exists() and not cert_file.exists():
        folder.mkdir(parents=True, exist_ok=True)
        return make_identity(cert_file, key_file, common_name, password)
    if not key_file.exists() or not cert_file.exists():
        missing = key_file if not key_file.exists() else cert_file
        raise IdentityError(f"{missing} is missing beside its pair in {folder}; move "
                            f"{CERT_FILE} and {KEY_FILE} away to make new ones (devices must "
                            "then be paired again)")
    return load_identity(cert_file, key_file, password)


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, lambda out: out.write(data), mode=0o600, durable=True)


def _context(protocol: int) -> ssl.SSLContext:
    context = ssl.SSLContext(protocol)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.maximum_version = ssl.TLSVersion.TLSv1_3
    return context


def server_context(identity: Identity, pinned_hosts: Iterable[bytes]) -> ssl.SSLContext:
    """The agent's context: TLS 1.3 only, this agent's certificate, and a client certificate
    that is either absent (the connection may only pair) or one of ``pinned_hosts`` (DER)."""
    context = _context(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(identity.cert_file), str(identity.key_file),
                            password=identity.password)
    context.verify_mode = ssl.CERT_OPTIONAL
    context.verify_flags |= _NO_CHECK_TIME
    for der in pinned_hosts:
        context.load_verify_locations(cadata=der)
    return context


def client_context(identity: Optional[Identity]) -> ssl.SSLContext:
    """The host's context: TLS 1.3 only; with ``identity`` its certificate is offered (every
    connection but a pairing). The agent's certificate is checked against the pin after the
    handshake (``check_pin``), not by OpenSSL."""
    context = _context(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if identity is not None:
        context.load_cert_chain(str(identity.cert_file), str(identity.key_file),
                                password=identity.password)
    return context


def peer_certificate(sock: ssl.SSLSocket) -> Optional[bytes]:
    """The DER certificate the other end presented, None when it presented none."""
    return sock.getpeercert(binary_form=True)


def peek_start(sock: socket.socket, count: int = 4) -> bytes:
    """The first ``count`` bytes the peer sent (fewer when it closed first), left in the socket:
    to tell a TLS handshake from a clear-text frame of an older host."""
    return sock.recv(count, socket.MSG_PEEK | getattr(socket, "MSG_WAITALL", 0))

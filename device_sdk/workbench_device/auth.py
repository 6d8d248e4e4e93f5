"""Who is on a connection: the TLS handshake, the clear-text frames of older hosts, and pairing.

A connection starts with TLS 1.3 (``tls.py``). A host that offers a pinned certificate is that
host from the first frame on; a host that offers none may only say hello and pair (``pair.begin``
then ``pair.finish``, ``pake.py``), which pins its certificate and authenticates the connection.
Hosts of protocol version 1 spoke clear text: their first bytes are a frame's magic, not a TLS
record, and they get one clear-text error telling the user to update Workbench.
"""

from __future__ import annotations

import logging
import socket
import ssl
import time
from typing import Any, Dict, Mapping, Optional, Tuple

from workbench_device.pake import PakeError
from workbench_device.pairing import AgentExchange, Pairing, PairedHosts
from workbench_device.protocol import (
    CLEAR_TEXT_VERSION,
    MAGIC,
    SUPPORTED_VERSIONS,
    Err,
    ProtocolError,
    error_header,
    field_of,
    frame_bytes,
    hex_field,
    negotiate_version,
)
from workbench_device.tls import fingerprint, peek_start, peer_certificate

log = logging.getLogger(__name__)

# A certificate is a few hundred bytes; this bounds what a host that has not paired may send.
MAX_CERT_BYTES = 16 * 1024
MAX_PAKE_MESSAGE_BYTES = 1024
UPDATE_WORKBENCH = ("this device's agent speaks debug link protocol {versions} (TLS with "
                    "pinned certificates); this Workbench speaks clear-text protocol 1: update "
                    "Workbench (pip install -U workbench), then pair again")


class NotTLS(Exception):
    """The peer's first bytes are no TLS handshake; ``answered`` when it was told why."""

    def __init__(self, message: str, answered: bool):
        super().__init__(message)
        self.answered = answered


def upgrade(sock: socket.socket, context: ssl.SSLContext, timeout: float) -> ssl.SSLSocket:
    """The accepted ``sock`` wrapped in TLS once its handshake is done (within ``timeout``).
    NotTLS for a clear-text frame of an older host (answered with "update Workbench") or other
    bytes; ssl.SSLError / OSError for a handshake that fails (a certificate the agent does not
    pin, a broken record)."""
    sock.settimeout(timeout)
    start = peek_start(sock, len(MAGIC))
    if start == MAGIC:
        message = UPDATE_WORKBENCH.format(versions=", ".join(map(str, SUPPORTED_VERSIONS)))
        answered = True
        try:
            sock.sendall(frame_bytes(error_header(Err.UNSUPPORTED_VERSION, message,
                                                  versions=list(SUPPORTED_VERSIONS)),
                                     version=CLEAR_TEXT_VERSION))
        except OSError:
            answered = False
        close_gently(sock)  # a reset could drop the answer before the old host reads it
        raise NotTLS("a clear-text frame (an older Workbench)", answered)
    if not start:
        raise NotTLS("closed before sending anything", False)
    tls_sock = context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
    try:
        tls_sock.do_handshake()
    except BaseException:
        close_gently(tls_sock)
        raise
    return tls_sock


def close_gently(sock: socket.socket, linger_s: float = 1.0) -> None:
    """Close once the peer had the chance to read what was sent (the TLS alert that says why):
    closing with the peer's bytes unread resets the connection, and the reset can drop the
    alert before the peer reads it."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_WR)
        sock.settimeout(linger_s)
        deadline = time.monotonic() + linger_s
        while time.monotonic() < deadline and socket.socket.recv(sock, 65536):
            pass
    except OSError:
        pass
    finally:
        sock.close()


def host_of(hosts: PairedHosts, sock: ssl.SSLSocket) -> Optional[str]:
    """The paired host whose certificate ``sock`` presented; None when it presented none."""
    return hosts.host_of(peer_certificate(sock))


def hello_fields(header: Mapping[str, Any], host_id: Optional[str]) -> Dict[str, Any]:
    """The handshake's fields of ``hello.ok``: the chosen ``protocol``, the ``versions`` the agent
    speaks, and whether this connection's certificate is a paired host's. ProtocolError
    unsupported_version."""
    version = negotiate_version(header)
    paired = host_id is not None
    return {"protocol": version, "versions": list(SUPPORTED_VERSIONS), "paired": paired,
            "auth": "certificate" if paired else "pairing"}


class PairingAttempt:
    """One connection's pairing: ``begin`` answers ``pair.begin``, ``finish`` ``pair.finish``."""

    def __init__(self, pairing: Pairing, agent_certificate: bytes, peer: str):
        self.pairing = pairing
        self.agent_fingerprint = fingerprint(agent_certificate)
        self.peer = peer
        self._pending: Optional[Tuple[AgentExchange, str, str, bytes]] = None

    def begin(self, header: Mapping[str, Any]) -> Dict[str, Any]:
        """The fields of ``pair.begin.ok``: the agent's PAKE message and the fingerprint of the
        certificate the agent presents (a host that sees another one is talking to a relay)."""
        self._pending = None
        host_id = field_of(header, "host_id", str)
        if not 0 < len(host_id) <= 200:
            raise ProtocolError(Err.BAD_REQUEST, "'host_id' must be 1 to 200 characters")
        host_name = str(header.get("host_name") or host_id)[:200]
        cert = hex_field(header, "cert", MAX_CERT_BYTES)
        _check_certificate(cert)
        host_message = hex_field(header, "pake", MAX_PAKE_MESSAGE_BYTES)
        exchange = self.pairing.begin(self.peer)
        try:
            exchange.finish(host_message, host_id, self.agent_fingerprint, fingerprint(cert))
        except PakeError as exc:
            raise ProtocolError(Err.BAD_REQUEST, f"'pake': {exc}") from None
        self._pending = (exchange, host_id, host_name, cert)
        return {"pake": exchange.message.hex(), "cert_fingerprint": self.agent_fingerprint}

    def finish(self, header: Mapping[str, Any]) -> Tuple[str, str]:
        """``(host_id, agent confirmation)`` when the host's confirmation matches: the host's
        certificate is pinned. ProtocolError bad_code / pairing_locked otherwise; bad_request
        without a ``pair.begin`` before it (each begin serves one finish)."""
        pending, self._pending = self._pending, None
        if pending is None:
            raise ProtocolError(Err.BAD_REQUEST, "send pair.begin first: each pair.finish "
                                                 "answers the pair.begin before it")
        exchange, host_id, host_name, cert = pending
        self.pairing.finish(exchange, header.get("confirm"), host_id, host_name, cert,
                            source=self.peer)
        return host_id, exchange.confirmation()


def _check_certificate(der: bytes) -> None:
    """ProtocolError bad_request unless ``der`` is an X.509 certificate TLS can use."""
    from cryptography import x509

    try:
        x509.load_der_x509_certificate(der)
    except ValueError as exc:
        raise ProtocolError(Err.BAD_REQUEST, f"'cert' is not a DER X.509 certificate "
                                             f"({exc})") from None

"""Reading what went over loopback: a real ``tcpdump`` capture, its TCP connections put back
together as the two byte streams each carried, and the checks that those streams are TLS 1.3
records and nothing else.

The pcap format is small enough to read here (no dpkt or scapy in the project): a global
header, then per packet a record header and the link-layer frame. Loopback on Linux is
Ethernet (link type 1); Linux "cooked" captures (113, 276), BSD loopback (0) and raw IP (101)
are read too.
"""

from __future__ import annotations

import os
import shutil
import socket
import struct
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

# --- tcpdump ------------------------------------------------------------------------------


class LoopbackCapture:
    """``tcpdump -i lo -U -w FILE`` on the TCP ``ports`` (and a probe port of its own), started
    and known to be capturing when ``start`` returns: it has printed "listening on" and a probe
    connection made after that is in the file. ``stop`` makes one more probe connection and
    waits for it in the file, so everything before it is there too, then ends tcpdump with
    SIGINT, as Ctrl-C does."""

    def __init__(self, pcap_file: Path, ports: list[int]):
        self.pcap_file = Path(pcap_file)
        self._probe_server = socket.create_server(("127.0.0.1", 0))
        self.probe_port = self._probe_server.getsockname()[1]
        self.ports = list(ports)
        self.stderr_lines: list[str] = []
        self._listening = threading.Event()
        self.process: subprocess.Popen | None = None

    @property
    def filter(self) -> str:
        return " or ".join(f"tcp port {port}" for port in [*self.ports, self.probe_port])

    def start(self, timeout: float = 30) -> "LoopbackCapture":
        tcpdump = shutil.which("tcpdump")
        if tcpdump is None:
            raise RuntimeError("tcpdump is not installed: `apt-get install tcpdump` (it is in "
                               "scripts/system-packages.txt)")
        # Without --immediate-mode libpcap hands packets over in blocks, up to a second late,
        # and those still in the kernel's buffer at SIGINT are never written.
        # In immediate mode the kernel's ring holds whole snapshot-length slots (256 kB each):
        # the default 2 MB holds 8 packets and drops the rest of a push's burst; 64 MB does not.
        # Debian's tcpdump drops to the user "tcpdump" after opening the file; stay root so the
        # test's private temporary folder stays ours to clean up.
        as_root = ["-Z", "root"] if os.geteuid() == 0 else []
        self.process = subprocess.Popen(
            [tcpdump, "-i", "lo", "-U", "--immediate-mode", "-B", "65536", "-n", *as_root, "-w",
             str(self.pcap_file), self.filter],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            text=True)
        threading.Thread(target=self._read_stderr, daemon=True).start()
        if not self._listening.wait(timeout) or self.process.poll() is not None:
            self._end(timeout)
            raise RuntimeError(f"tcpdump did not start capturing: {self.stderr}")
        try:
            self._probe(timeout)
        except BaseException:
            self._end(timeout)
            raise
        return self

    def _read_stderr(self) -> None:
        for line in self.process.stderr:
            self.stderr_lines.append(line.rstrip("\n"))
            if "listening on" in line:
                self._listening.set()
        self._listening.set()  # it ended: do not wait for a line that will never come

    def _probe(self, timeout: float) -> None:
        """Connect to the probe port until tcpdump has written that connection to the file
        (packets are written in the order they are seen, so all before it are written too)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"tcpdump stopped: {self.stderr}")
            with socket.create_connection(("127.0.0.1", self.probe_port), timeout=5) as probe:
                client_port = probe.getsockname()[1]
            self._probe_server.accept()[0].close()
            for _ in range(20):
                if any(p.src_port == client_port for p in read_packets_lenient(self.pcap_file)):
                    return
                time.sleep(0.05)
        raise RuntimeError(f"tcpdump wrote no probe packet to {self.pcap_file}: {self.stderr}")

    def stop(self, timeout: float = 30) -> None:
        try:
            if self.process is not None and self.process.poll() is None:
                self._wait_for_connections_to_end(timeout)
                self._probe(timeout)
        finally:
            self._end(timeout)

    def _wait_for_connections_to_end(self, timeout: float) -> None:
        """Give the connections in the file time to close (a FIN each way, or a reset): the
        other process may still be sending its last record. One still open after ``timeout``
        is left to the checks to judge."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            open_ones = [c for c in tcp_connections(read_packets_lenient(self.pcap_file))
                         if not c.ended]
            if not open_ones:
                return
            time.sleep(0.05)

    def _end(self, timeout: float) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(2)  # SIGINT: tcpdump flushes the file and prints its counts
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._probe_server.close()

    @property
    def stderr(self) -> str:
        return "\n".join(self.stderr_lines)

    @property
    def dropped_by_kernel(self) -> int | None:
        for line in self.stderr_lines:
            if line.endswith("packets dropped by kernel"):
                return int(line.split()[0])
        return None

    def __enter__(self) -> "LoopbackCapture":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


# --- pcap ---------------------------------------------------------------------------------

LINKTYPE_NULL, LINKTYPE_ETHERNET, LINKTYPE_RAW = 0, 1, 101
LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2 = 113, 276
ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_VLAN = 0x0800, 0x86DD, 0x8100
TCP_FIN, TCP_SYN, TCP_RST, TCP_ACK = 0x01, 0x02, 0x04, 0x10


class PcapError(Exception):
    """The capture file cannot be read; the message says where and why."""


@dataclass
class TcpPacket:
    src: str
    src_port: int
    dst: str
    dst_port: int
    seq: int
    flags: int
    payload: bytes

    @property
    def syn(self) -> bool:
        return bool(self.flags & TCP_SYN)


def read_packets(pcap_file: Path) -> list[TcpPacket]:
    """Every TCP packet in ``pcap_file``; PcapError for a file that is not a whole pcap
    capture, a packet cut short by the snapshot length, or a frame this cannot read."""
    data = Path(pcap_file).read_bytes()
    if len(data) < 24:
        raise PcapError(f"{pcap_file} is {len(data)} bytes: not even a pcap header")
    magic = data[:4]
    orders = {b"\xd4\xc3\xb2\xa1": "<", b"\x4d\x3c\xb2\xa1": "<",
              b"\xa1\xb2\xc3\xd4": ">", b"\xa1\xb2\x3c\x4d": ">"}
    if magic not in orders:
        raise PcapError(f"{pcap_file} does not start with a pcap magic number ({magic.hex()}); "
                        "a pcapng file? write it with tcpdump -w")
    order = orders[magic]
    linktype = struct.unpack_from(order + "I", data, 20)[0] & 0x0FFFFFFF
    packets, offset, index = [], 24, 0
    while offset < len(data):
        if offset + 16 > len(data):
            raise PcapError(f"{pcap_file}: packet {index} has a record header cut short")
        _, _, caplen, length = struct.unpack_from(order + "IIII", data, offset)
        frame = data[offset + 16:offset + 16 + caplen]
        if len(frame) < caplen:
            raise PcapError(f"{pcap_file}: packet {index} is cut short ({len(frame)} of "
                            f"{caplen} bytes)")
        if caplen < length:
            raise PcapError(f"{pcap_file}: packet {index} was captured {caplen} of {length} "
                            "bytes; raise tcpdump's snapshot length (-s)")
        packet = _tcp_in_frame(frame, linktype, order, index)
        if packet is not None:
            packets.append(packet)
        offset += 16 + caplen
        index += 1
    return packets


def read_packets_lenient(pcap_file: Path) -> list[TcpPacket]:
    """The packets of a capture still being written (a last record may be half there)."""
    try:
        return read_packets(pcap_file)
    except (OSError, PcapError):
        return []


def _tcp_in_frame(frame: bytes, linktype: int, order: str, index: int) -> TcpPacket | None:
    if linktype == LINKTYPE_ETHERNET:
        ethertype, start = struct.unpack_from(">H", frame, 12)[0], 14
        if ethertype == ETHERTYPE_VLAN:
            ethertype, start = struct.unpack_from(">H", frame, 16)[0], 18
    elif linktype == LINKTYPE_LINUX_SLL:
        ethertype, start = struct.unpack_from(">H", frame, 14)[0], 16
    elif linktype == LINKTYPE_LINUX_SLL2:
        ethertype, start = struct.unpack_from(">H", frame, 0)[0], 20
    elif linktype == LINKTYPE_NULL:
        family = struct.unpack_from(order + "I", frame, 0)[0]
        ethertype, start = (ETHERTYPE_IPV4 if family == 2 else ETHERTYPE_IPV6), 4
    elif linktype == LINKTYPE_RAW:
        ethertype, start = (ETHERTYPE_IPV4 if frame[0] >> 4 == 4 else ETHERTYPE_IPV6), 0
    else:
        raise PcapError(f"link type {linktype} is not read here (packet {index})")
    ip = frame[start:]
    if ethertype == ETHERTYPE_IPV4:
        header_len = (ip[0] & 0x0F) * 4
        total_len, fragment, protocol = struct.unpack_from(">H2xHxB", ip, 2)
        if protocol != 6:
            return None
        if fragment & 0x3FFF:
            raise PcapError(f"packet {index} is an IP fragment; fragments are not put together "
                            "here")
        # Segmentation offload may leave the total length 0: the frame then says it.
        end = total_len or len(ip)
        src, dst = socket.inet_ntop(socket.AF_INET, ip[12:16]), socket.inet_ntop(
            socket.AF_INET, ip[16:20])
        segment = ip[header_len:end]
    elif ethertype == ETHERTYPE_IPV6:
        payload_len, next_header = struct.unpack_from(">HB", ip, 4)
        if next_header != 6:
            if next_header in (0, 43, 44, 60):
                raise PcapError(f"packet {index} has IPv6 extension headers, not read here")
            return None
        src, dst = socket.inet_ntop(socket.AF_INET6, ip[8:24]), socket.inet_ntop(
            socket.AF_INET6, ip[24:40])
        segment = ip[40:40 + (payload_len or len(ip) - 40)]
    else:
        return None
    src_port, dst_port, seq, _, offset_byte, flags = struct.unpack_from(">HHIIBB", segment, 0)
    return TcpPacket(src, src_port, dst, dst_port, seq, flags, segment[(offset_byte >> 4) * 4:])


# --- TCP streams --------------------------------------------------------------------------


@dataclass
class TcpDirection:
    """What one side of a connection sent: segments by their offset from its first byte."""

    isn: int | None = None
    segments: dict[int, bytes] = field(default_factory=dict)
    segment_count: int = 0
    unplaced: int = 0  # data segments seen before this side's SYN
    finished: bool = False  # it sent a FIN
    reset: bool = False

    def add(self, packet: TcpPacket) -> None:
        if packet.syn:
            self.isn = packet.seq
        self.finished = self.finished or bool(packet.flags & TCP_FIN)
        self.reset = self.reset or bool(packet.flags & TCP_RST)
        if not packet.payload:
            return
        self.segment_count += 1
        if self.isn is None:
            self.unplaced += 1
            return
        offset = (packet.seq - self.isn - 1) % 2**32
        if len(packet.payload) > len(self.segments.get(offset, b"")):
            self.segments[offset] = packet.payload  # a retransmit of the same bytes, or more

    def stream(self) -> tuple[bytes, list[str]]:
        """The bytes in order, each once, and the holes (bytes never seen) as problems."""
        out, position, holes = bytearray(), 0, []
        for offset in sorted(self.segments):
            data = self.segments[offset]
            if offset > position:
                holes.append(f"bytes {position}..{offset} were never captured")
                out += bytes(offset - position)
                position = offset
            if offset + len(data) > position:
                out += data[position - offset:]
                position = offset + len(data)
        if self.isn is None and self.segment_count:
            holes.append("its SYN was not captured, so its bytes cannot be put in order")
        return bytes(out), holes


@dataclass
class TcpConnection:
    """One TCP connection: ``client`` sent the first SYN to ``server``."""

    client: tuple[str, int]
    server: tuple[str, int]
    from_client: TcpDirection = field(default_factory=TcpDirection)
    from_server: TcpDirection = field(default_factory=TcpDirection)

    def __str__(self) -> str:
        return f"{self.client[0]}:{self.client[1]} -> {self.server[0]}:{self.server[1]}"

    @property
    def client_stream(self) -> bytes:
        return self.from_client.stream()[0]

    @property
    def server_stream(self) -> bytes:
        return self.from_server.stream()[0]

    @property
    def ended(self) -> bool:
        """Both sides sent a FIN, or one a reset."""
        sides = (self.from_client, self.from_server)
        return all(side.finished for side in sides) or any(side.reset for side in sides)

    def holes(self) -> list[str]:
        return [f"{self} {side}: {hole}"
                for side, direction in (("client->server", self.from_client),
                                        ("server->client", self.from_server))
                for hole in direction.stream()[1]]


def tcp_connections(packets: list[TcpPacket]) -> list[TcpConnection]:
    """The packets as connections, in the order they began. A SYN without ACK begins one (its
    sender is the client); a connection seen without it is listed with its first sender as the
    client and no ISN, so its bytes show up as a problem rather than vanish."""
    connections: list[TcpConnection] = []
    current: dict[frozenset, TcpConnection] = {}
    for packet in packets:
        ends = frozenset([(packet.src, packet.src_port), (packet.dst, packet.dst_port)])
        connection = current.get(ends)
        opening = packet.syn and not packet.flags & TCP_ACK
        if connection is None or (opening and connection.from_client.isn not in (None,
                                                                                   packet.seq)):
            connection = TcpConnection((packet.src, packet.src_port),
                                       (packet.dst, packet.dst_port))
            current[ends] = connection
            connections.append(connection)
        side = (connection.from_client if (packet.src, packet.src_port) == connection.client
                else connection.from_server)
        side.add(packet)
    return connections


# --- TLS records --------------------------------------------------------------------------

CHANGE_CIPHER_SPEC, ALERT, HANDSHAKE, APPLICATION_DATA = 20, 21, 22, 23
RECORD_TYPES = {CHANGE_CIPHER_SPEC: "change_cipher_spec", ALERT: "alert",
                HANDSHAKE: "handshake", APPLICATION_DATA: "application_data"}
MAX_RECORD = 2**14 + 256  # TLSCiphertext.length may be at most 2^14 + 256 (RFC 8446 5.2)
TLS12, TLS10, TLS13 = 0x0303, 0x0301, 0x0304


@dataclass
class TlsRecord:
    type: int
    version: int
    body: bytes


def tls_records(stream: bytes, first_may_be_tls10: bool = False) -> tuple[list[TlsRecord],
                                                                          list[str]]:
    """``stream`` read as TLS records back to back, and what is wrong with it: a record of an
    unknown type or version, one too long or empty, bytes that are no whole record at the
    end. Reading stops at the first bad record (what follows cannot be framed)."""
    records, problems, offset = [], [], 0
    while offset < len(stream):
        if len(stream) - offset < 5:
            problems.append(f"{len(stream) - offset} bytes at {offset} are no record header: "
                            f"{stream[offset:offset + 16]!r}")
            break
        kind, version, length = struct.unpack_from(">BHH", stream, offset)
        allowed = {TLS12, TLS10} if (first_may_be_tls10 and not records) else {TLS12}
        if kind not in RECORD_TYPES or version not in allowed or not 0 < length <= MAX_RECORD:
            problems.append(f"bytes at {offset} are not a TLS record (type {kind}, version "
                            f"0x{version:04x}, length {length}): {stream[offset:offset + 24]!r}")
            break
        body = stream[offset + 5:offset + 5 + length]
        if len(body) < length:
            problems.append(f"the record at {offset} says {length} bytes but {len(body)} follow")
            break
        records.append(TlsRecord(kind, version, body))
        offset += 5 + length
    return records, problems


def server_hello_version(body: bytes) -> int | None:
    """The version a ServerHello chose: its supported_versions extension (TLS 1.3), else its
    legacy version; None when ``body`` is no ServerHello."""
    if len(body) < 39 or body[0] != 2:
        return None
    offset = 4 + 2 + 32  # handshake header, legacy_version, random
    offset += 1 + body[offset]  # legacy_session_id_echo
    offset += 2 + 1  # cipher_suite, legacy_compression_method
    if offset + 2 > len(body):
        return struct.unpack_from(">H", body, 4)[0]
    end = min(len(body), offset + 2 + struct.unpack_from(">H", body, offset)[0])
    offset += 2
    while offset + 4 <= end:
        kind, length = struct.unpack_from(">HH", body, offset)
        if kind == 0x002B and length == 2:  # supported_versions
            return struct.unpack_from(">H", body, offset + 4)[0]
        offset += 4 + length
    return struct.unpack_from(">H", body, 4)[0]


def tls13_problems(connection: TcpConnection) -> list[str]:
    """What is not TLS 1.3 about ``connection``: each direction must be well-formed records
    and nothing else; the client's begins with a ClientHello, the server's with a ServerHello
    that chose TLS 1.3; handshake records only before the first application data, one
    change_cipher_spec at most (the middlebox compatibility one), no alert in clear text; after
    that only application data (type 23), at least one record of it each way."""
    problems = [f"{connection}: {hole}" for hole in connection.holes()]
    client, server = connection.client_stream, connection.server_stream
    if not client.startswith(b"\x16\x03"):
        problems.append(f"{connection}: the client's bytes do not start with a TLS handshake "
                        f"record: {client[:24]!r}")
    for side, stream, hello in (("client->server", client, 1), ("server->client", server, 2)):
        records, bad = tls_records(stream, first_may_be_tls10=hello == 1)
        problems += [f"{connection} {side}: {problem}" for problem in bad]
        if records and (records[0].type != HANDSHAKE or records[0].body[:1] != bytes([hello])):
            problems.append(f"{connection} {side}: the first record is not a "
                            f"{'ClientHello' if hello == 1 else 'ServerHello'}")
        if hello == 2 and records and server_hello_version(records[0].body) != TLS13:
            problems.append(f"{connection}: the ServerHello did not choose TLS 1.3")
        encrypted = False
        for index, record in enumerate(records):
            if record.type == APPLICATION_DATA:
                encrypted = True
            elif encrypted:
                problems.append(f"{connection} {side}: record {index} is "
                                f"{RECORD_TYPES[record.type]} after application data began")
            elif record.type == ALERT:
                problems.append(f"{connection} {side}: an alert in clear text (record {index})")
            elif record.type == CHANGE_CIPHER_SPEC and record.body != b"\x01":
                problems.append(f"{connection} {side}: a change_cipher_spec that is not the "
                                "single byte 1")
        if sum(r.type == CHANGE_CIPHER_SPEC for r in records) > 1:
            problems.append(f"{connection} {side}: more than one change_cipher_spec")
        if not encrypted:
            problems.append(f"{connection} {side}: no application data record")
    return problems


def record_counts(connections: list[TcpConnection]) -> dict[str, Counter]:
    """How many records of each type went each way, over ``connections``."""
    counts = {"client->server": Counter(), "server->client": Counter()}
    for connection in connections:
        for side, stream in (("client->server", connection.client_stream),
                             ("server->client", connection.server_stream)):
            records, _ = tls_records(stream, first_may_be_tls10=side == "client->server")
            counts[side].update(RECORD_TYPES[r.type] for r in records)
    return counts


# --- what must not be seen ----------------------------------------------------------------


def text_forms(text: str) -> dict[str, bytes]:
    """``text`` as the bytes it could travel as: UTF-8, UTF-16 (both orders), hex (both
    cases)."""
    raw = text.encode()
    return {"utf-8": raw, "utf-16-le": text.encode("utf-16-le"),
            "utf-16-be": text.encode("utf-16-be"), "hex": raw.hex().encode(),
            "HEX": raw.hex().upper().encode()}


def pem_forms(pem: bytes, min_chunk: int = 16) -> dict[str, bytes]:
    """A PEM file's DER bytes and each base64 line of its body (lines shorter than
    ``min_chunk`` say too little to look for)."""
    import base64

    lines = [line.strip() for line in pem.splitlines()
             if line.strip() and not line.startswith(b"-----") and b":" not in line]
    forms = {"der": base64.b64decode(b"".join(lines))}
    forms.update({f"pem line {i}": line for i, line in enumerate(lines) if len(line) >= min_chunk})
    return forms


def found_in(haystacks: dict[str, bytes], needles: dict[str, bytes]) -> list[str]:
    """``"<needle> in <haystack>"`` for each needle found in each haystack."""
    return [f"{needle} in {where}" for where, haystack in haystacks.items()
            for needle, value in needles.items() if value and value in haystack]

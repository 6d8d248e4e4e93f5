"""What the debug link puts on the wire, seen by a real ``tcpdump`` on loopback: pairing with
the printed code, pushing a model and verifying it send TLS 1.3 records and nothing else, and
neither the code, the model's bytes, nor either end's private key can be read in the capture.
The checker is shown to flag clear text, so a green run means something."""

from __future__ import annotations

import secrets
import socket
import ssl
import threading
from pathlib import Path

import numpy as np
import pytest

from workbench.device.host_keys import PASSPHRASE_NAME
from workbench.device.link import DeviceLink, pair_device
from workbench.device.paired import PairedDevices
from workbench.device.verify import verify_model

from .pcap import (
    LoopbackCapture,
    found_in,
    pem_forms,
    read_packets,
    record_counts,
    tcp_connections,
    text_forms,
    tls13_problems,
)

pytestmark = pytest.mark.slow

FRAME_MAGIC = b"WBDL"


def marked_model(path: Path, marker: str) -> Path:
    """A small ONNX model (about 270 kB: two dense layers on a 64-value input) carrying
    ``marker`` in its doc_string and its metadata_props, as a user's notes would be."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    weights = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
               for name, shape in (("w1", (64, 1024)), ("w2", (1024, 10)))]
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["images", "w1"], ["hidden"]),
         helper.make_node("Relu", ["hidden"], ["active"]),
         helper.make_node("MatMul", ["active", "w2"], ["logits"])],
        "marked", [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              doc_string=f"Trained for the capture test. {marker}")
    model.ir_version = 8
    entry = model.metadata_props.add()
    entry.key, entry.value = "note", marker
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    assert marker.encode() in path.read_bytes()
    return path


def private_key_forms(pem: bytes, password: bytes | None = None) -> dict[str, bytes]:
    """A private key file's DER and base64 lines, and the key itself: its PKCS#8 DER in clear
    and its 32-byte secret scalar."""
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(pem, password)
    forms = pem_forms(pem)
    forms["pkcs8 der"] = key.private_bytes(serialization.Encoding.DER,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption())
    forms["secret scalar"] = key.private_numbers().private_value.to_bytes(32, "big")
    return forms


def summary(connections, capture_bytes: int) -> str:
    counts = record_counts(connections)
    lines = [f"{len(connections)} connections, {capture_bytes} bytes in the capture file"]
    for connection in connections:
        lines.append(f"  {connection}: {len(connection.client_stream)} bytes to the agent, "
                     f"{len(connection.server_stream)} back")
    for side, counted in counts.items():
        lines.append(f"  records {side}: " + ", ".join(f"{kind} {n}"
                                                      for kind, n in sorted(counted.items())))
    return "\n".join(lines)


def test_pairing_pushing_and_verifying_send_only_tls13_records_with_no_secret_readable(
        start_agent, tmp_path):
    marker = f"WORKBENCH-MARKER-{secrets.token_hex(8)}"
    model = marked_model(tmp_path / f"{marker}.onnx", marker)
    phone = start_agent(name="Captured Phone")
    code = phone.code
    capture = LoopbackCapture(tmp_path / "link.pcap", [phone.port])

    with capture:
        pair_device(phone.address, code)
        with DeviceLink.open(phone.address) as link:
            pushed = link.push(model)
        with DeviceLink.open(phone.address) as link:
            verified = verify_model(link, model, samples=16, bench_runs=3, record=False)
    operations = 3  # the pairing, the push's link, the verification's link

    assert pushed.sent == model.stat().st_size and verified.passed
    assert capture.dropped_by_kernel == 0, capture.stderr
    raw = capture.pcap_file.read_bytes()
    packets = read_packets(capture.pcap_file)
    connections = tcp_connections(packets)
    to_agent = [c for c in connections if c.server == ("127.0.0.1", phone.port)]
    probes = [c for c in connections if c.server[1] == capture.probe_port]
    assert len(to_agent) + len(probes) == len(connections)
    print(summary(to_agent, len(raw)))

    assert len(to_agent) >= operations
    assert sum(len(c.client_stream) for c in to_agent) >= model.stat().st_size
    assert [p for c in to_agent for p in tls13_problems(c)] == []

    devices = PairedDevices()
    host_key = devices.keys.key_folder / "link-key.pem"
    passphrase = devices.keys.store.load(PASSPHRASE_NAME)
    needles = {"the pairing code": code.encode(),
               "this computer's key passphrase": passphrase.encode()}
    needles.update({f"the marker as {form}": value for form, value in text_forms(marker).items()})
    needles.update({f"the agent's key ({form})": value for form, value in
                    private_key_forms((phone.data_dir / "link-key.pem").read_bytes()).items()})
    needles.update({f"this computer's key ({form})": value for form, value in
                    private_key_forms(host_key.read_bytes(), passphrase.encode()).items()})
    haystacks = {"the capture file": raw}
    for index, connection in enumerate(to_agent):
        haystacks[f"connection {index} to the agent"] = connection.client_stream
        haystacks[f"connection {index} from the agent"] = connection.server_stream
    assert found_in(haystacks, needles) == []
    payloads = {f"packet {i}": p.payload for i, p in enumerate(packets)}
    assert found_in({**payloads, **haystacks}, {"the frame magic": FRAME_MAGIC}) == []


def _echo_once(server: socket.socket) -> None:
    connection, _ = server.accept()
    with connection:
        while data := connection.recv(65536):
            connection.sendall(data)


def _tls_then_clear_text(port: int, clear_text: bytes) -> None:
    """A TLS 1.3 handshake with the agent (no client certificate: it may pair), one encrypted
    record, then ``clear_text`` written straight onto the TCP stream."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                sock.sendall(outgoing.read())
                incoming.write(sock.recv(65536))
        tls.write(b"an encrypted record first")
        sock.sendall(outgoing.read())
        sock.sendall(clear_text)
        sock.settimeout(5)
        try:
            while sock.recv(65536):  # the agent closes the connection it cannot decrypt
                pass
        except OSError:
            pass


def test_the_checks_flag_clear_text_and_clear_text_after_a_tls_handshake(start_agent, tmp_path):
    marker = f"WORKBENCH-MARKER-{secrets.token_hex(8)}"
    phone = start_agent(name="Clear Text Phone")
    echo = socket.create_server(("127.0.0.1", 0))
    echo_port = echo.getsockname()[1]
    clear_text = FRAME_MAGIC + f'{{"type":"push","name":"{marker}"}}'.encode()

    with LoopbackCapture(tmp_path / "clear.pcap", [phone.port, echo_port]) as capture:
        server = threading.Thread(target=_echo_once, args=(echo,), daemon=True)
        server.start()
        with socket.create_connection(("127.0.0.1", echo_port), timeout=10) as plain:
            plain.sendall(clear_text)
            assert plain.recv(65536)
        server.join(10)
        _tls_then_clear_text(phone.port, clear_text)
    echo.close()

    connections = tcp_connections(read_packets(capture.pcap_file))
    [plain_connection] = [c for c in connections if c.server[1] == echo_port]
    [mixed] = [c for c in connections if c.server[1] == phone.port]

    plain_problems = "\n".join(tls13_problems(plain_connection))
    assert "do not start with a TLS handshake record" in plain_problems
    assert "are not a TLS record" in plain_problems
    mixed_problems = "\n".join(tls13_problems(mixed))
    assert "do not start with a TLS handshake" not in mixed_problems
    assert "client->server: bytes at" in mixed_problems and "are not a TLS record" in mixed_problems

    needles = text_forms(marker)
    raw = capture.pcap_file.read_bytes()
    assert "utf-8 in the capture file" in found_in({"the capture file": raw}, needles)
    for connection in (plain_connection, mixed):
        assert found_in({"stream": connection.client_stream}, {"magic": FRAME_MAGIC}) == [
            "magic in stream"]

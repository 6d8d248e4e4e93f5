"""The local inference endpoint: loopback peers only, the debug link's frames without TLS, only
slot.run and slot.list, and bytes that are no frame end that connection only."""

from __future__ import annotations

import socket

import numpy as np
import pytest

from workbench_device.inference import InferenceClient
from workbench_device.local_endpoint import InferenceEndpoint, is_loopback_peer
from workbench_device.protocol import Err, Msg, RemoteError, frame_bytes

from .conftest import connect, pair, read_raw_frame, reference, tiny_onnx_bytes
from .links import read_until_closed

X = np.ones((1, 4), np.float32)


@pytest.fixture
def deployed(start_agent):
    """An agent with its inference endpoint on a free port and a model in slot "classifier"."""
    agent = start_agent(inference_port=0)
    with connect(agent, pair(agent), session=False) as host:
        host.deploy_slot("classifier", host.push_model(tiny_onnx_bytes()).sha256)
    return agent


@pytest.mark.parametrize("host,loopback", [
    ("127.0.0.1", True), ("127.20.30.40", True), ("::1", True), ("::ffff:127.0.0.1", True),
    ("192.0.2.2", False), ("10.0.0.7", False), ("0.0.0.0", False), ("fd00::2", False),
    ("::ffff:192.0.2.2", False), ("fe80::1%eth0", False), ("localhost", False), ("", False),
])
def test_only_addresses_of_this_device_count_as_loopback_peers(host, loopback):
    assert is_loopback_peer(host) is loopback


def _address_of_another_interface() -> str:
    """An IPv4 address of this machine that is not loopback (skips where there is none)."""
    candidates = set()
    try:
        candidates |= {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None,
                                                                 socket.AF_INET)}
    except OSError:
        pass
    # The address a datagram to another network would leave from (connecting a UDP socket
    # sends nothing).
    for target in ("192.0.2.1", "10.255.255.255", "8.8.8.8"):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                probe.connect((target, 9))
                candidates.add(probe.getsockname()[0])
            except OSError:
                continue
    for address in sorted(candidates):
        if not is_loopback_peer(address):
            return address
    pytest.skip("this machine has no address besides loopback to connect from")


def test_a_peer_that_is_not_this_device_is_refused_even_on_a_wider_listener(deployed):
    address = _address_of_another_interface()
    # The agent never binds wider than loopback; a listener bound wider by mistake (or a
    # forwarded port) still checks every peer.
    endpoint = InferenceEndpoint(deployed.slots, 0, 1 << 20, 10.0, hosts=("0.0.0.0",)).start()
    try:
        with socket.create_connection((address, endpoint.port), timeout=10,
                                      source_address=(address, 0)) as sock:
            header, _ = read_raw_frame(sock)
            assert read_until_closed(sock) == b""
        assert header["type"] == "error" and header["code"] == Err.NOT_AUTHENTICATED
        assert "this device only" in header["message"] and address in header["message"]
        with InferenceClient(port=endpoint.port) as app:  # from loopback: served
            np.testing.assert_allclose(app.run("classifier", {"x": X})["y"], reference(X),
                                       rtol=1e-6)
    finally:
        endpoint.stop()


def test_bytes_that_are_no_frame_get_bad_frame_and_the_endpoint_keeps_serving(deployed):
    with socket.create_connection(("127.0.0.1", deployed.inference_port), timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: device\r\n\r\n")
        header, _ = read_raw_frame(sock)
        assert read_until_closed(sock) == b""
    assert header["type"] == "error" and header["code"] == Err.BAD_FRAME and header["id"] is None
    assert "not a Workbench debug link frame" in header["message"]
    with InferenceClient(port=deployed.inference_port) as app:
        assert [s["slot"] for s in app.slots()] == ["classifier"]
        np.testing.assert_allclose(app.run("classifier", {"x": X})["y"], reference(X), rtol=1e-6)


def test_the_endpoint_serves_running_and_listing_only_and_goes_on_after_an_error(deployed):
    with socket.create_connection(("127.0.0.1", deployed.inference_port), timeout=10) as sock:
        for kind in (Msg.SLOT_DEPLOY, Msg.SLOT_REMOVE, Msg.HELLO, Msg.PUSH_BEGIN):
            sock.sendall(frame_bytes({"type": kind, "id": 3, "slot": "classifier"}))
            header, _ = read_raw_frame(sock)
            assert header["code"] == Err.UNKNOWN_TYPE and header["id"] == 3, kind
            assert "paired debug link" in header["message"]
        sock.sendall(frame_bytes({"type": Msg.SLOT_LIST, "id": 4}))
        header, _ = read_raw_frame(sock)
        assert header["type"] == "slot.list.ok" and header["id"] == 4
    with InferenceClient(port=deployed.inference_port) as app:
        for slot, inputs, code in (("nothing", {"x": X}, Err.NOT_FOUND),
                                   ("classifier", {"x": X.astype(np.int32)}, Err.BAD_REQUEST),
                                   ("../x", {"x": X}, Err.BAD_REQUEST)):
            with pytest.raises(RemoteError) as error:
                app.run(slot, inputs)
            assert error.value.code == code, slot
        assert app.run("classifier", {"x": X})["twice"].shape == (1, 3)
        assert app.reconnects == 0


def test_no_endpoint_says_how_to_start_one(start_agent):
    agent = start_agent()  # no inference port
    assert agent.inference is None
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        unused = probe.getsockname()[1]
    with pytest.raises(ConnectionError) as error:
        InferenceClient(port=unused, timeout=5).slots()
    assert f"--inference-port {unused}" in str(error.value)

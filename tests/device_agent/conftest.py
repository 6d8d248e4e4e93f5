"""Agents for the device agent's tests: real agents on loopback (in this process, on threads,
port 0), real TLS, real onnxruntime, and a tiny ONNX model built with onnx.helper."""

from __future__ import annotations

import itertools
import socket
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Optional

import numpy as np
import pytest

from workbench_device.agent import Agent
from workbench_device.client import DeviceClient
from workbench_device.protocol import PREFIX_SIZE, parse_header, parse_prefix
from workbench_device.tls import Identity, client_context, load_or_make_identity

HOST_ID = "host-under-test"

# The tiny model: y = relu(x @ W + b), twice = 2 * y; x is float32 [batch, 4].
WEIGHTS = (np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0 - 0.4)
BIAS = np.array([0.1, -0.2, 0.3], dtype=np.float32)

_host_folders = itertools.count()


def reference(x: np.ndarray, bias: np.ndarray = BIAS) -> np.ndarray:
    return np.maximum(x @ WEIGHTS + bias, 0.0)


def tiny_onnx_bytes(bias: np.ndarray = BIAS, batch: object = "batch") -> bytes:
    """An ONNX model (opset 13) of ``reference``; a different ``bias`` gives another file."""
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["xw"]),
         helper.make_node("Add", ["xw", "b"], ["pre"]),
         helper.make_node("Relu", ["pre"], ["y"]),
         helper.make_node("Add", ["y", "y"], ["twice"])],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 3]),
         helper.make_tensor_value_info("twice", TensorProto.FLOAT, [batch, 3])],
        initializer=[numpy_helper.from_array(WEIGHTS, "W"),
                     numpy_helper.from_array(np.asarray(bias, np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


@pytest.fixture
def tiny_model() -> bytes:
    return tiny_onnx_bytes()


@pytest.fixture
def start_agent(tmp_path) -> Callable[..., Agent]:
    """``start_agent(**options) -> Agent``: a started agent on 127.0.0.1, a free port, its own
    data folder; stopped after the test."""
    agents: List[Agent] = []

    def start(**options) -> Agent:
        options.setdefault("port", 0)
        options.setdefault("mdns", False)
        data_dir = options.pop("data_dir", tmp_path / f"agent{len(agents)}")
        agent = Agent(data_dir, **options)
        agents.append(agent)
        return agent.start()

    yield start
    for agent in agents:
        agent.stop()


@pytest.fixture
def agent(start_agent) -> Agent:
    return start_agent()


@dataclass
class Credential:
    """What a host keeps after pairing: its identity, the agent's pinned fingerprint, its id."""

    host_id: str
    identity: Identity
    pin: str


def host_identity(folder: Path, name: str = "test host") -> Identity:
    """A host's key pair and certificate in ``folder`` (made there on first use)."""
    return load_or_make_identity(folder, name)


def new_host_identity(agent: Agent, host_id: str = HOST_ID) -> Identity:
    """A host identity of its own, in a new folder beside the agent's data (the test's tmp)."""
    folder = agent.data_dir.parent / "hosts" / f"{host_id}-{next(_host_folders)}"
    return host_identity(folder, host_id)


def pair_with_code(port: int, code: str, identity: Identity, host_id: str = HOST_ID,
                   host: str = "127.0.0.1") -> Credential:
    """Pair ``identity`` with the agent at ``host:port`` as a host that read ``code``."""
    with DeviceClient.for_pairing(host, port, identity) as client:
        client.hello(host_id)
        pin = client.pair(host_id, "test host", code)
    return Credential(host_id, identity, pin)


def pair(agent: Agent, host_id: str = HOST_ID,
         identity: Optional[Identity] = None) -> Credential:
    """Pair ``host_id`` with the agent (as a host that read its code); what the host keeps."""
    identity = identity or new_host_identity(agent, host_id)
    return pair_with_code(agent.port, agent.pairing.code, identity, host_id)


@pytest.fixture
def credential(agent) -> Credential:
    return pair(agent)


def connect(agent: Agent, credential: Credential, host_id: Optional[str] = None,
            session: bool = True, runtime: str = "onnxruntime", **options) -> DeviceClient:
    """A connection with the paired certificate (authenticated from its first frame), said
    hello to, with a session open unless ``session`` is false."""
    client = DeviceClient("127.0.0.1", agent.port, identity=credential.identity,
                          pin=credential.pin, **options)
    client.hello(host_id or credential.host_id)
    if session:
        client.open_session(runtime)
    return client


@pytest.fixture
def device(agent, credential):
    """An authenticated client of ``agent`` with a session open."""
    client = connect(agent, credential)
    yield client
    client.close()


def tcp_connection(agent: Agent) -> socket.socket:
    """A bare TCP connection to the agent: what it reads first is no TLS unless sent."""
    return socket.create_connection(("127.0.0.1", agent.port), timeout=10)


def raw_connection(agent: Agent, credential: Optional[Credential] = None) -> ssl.SSLSocket:
    """A TLS connection to the agent that the test writes frames on itself (blocking, 10 s
    time-out); with ``credential`` it offers the paired certificate, else none."""
    context = client_context(credential.identity if credential else None)
    return context.wrap_socket(tcp_connection(agent))


def read_raw_frame(sock):
    """(header, payload) of the next frame on ``sock``; None when the agent closed it."""
    def exact(n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    try:
        prefix = exact(PREFIX_SIZE)
    except EOFError:
        return None
    header_len, payload_len = parse_prefix(prefix)
    header = parse_header(exact(header_len))
    return header, exact(payload_len)


def closed_by_peer(sock) -> bool:
    """True when the agent closed ``sock`` (nothing more to read but the end)."""
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, ssl.SSLEOFError):
        return True


def models_dir(agent: Agent) -> Path:
    return agent.data_dir / "models"

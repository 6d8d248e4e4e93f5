"""Agents for the device agent's tests: real agents on loopback (in this process, on threads,
port 0), real onnxruntime, and a tiny ONNX model built with onnx.helper."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Callable, List

import numpy as np
import pytest

from workbench_device.agent import Agent
from workbench_device.client import DeviceClient
from workbench_device.protocol import PREFIX_SIZE, parse_header, parse_prefix

HOST_ID = "host-under-test"

# The tiny model: y = relu(x @ W + b), twice = 2 * y; x is float32 [batch, 4].
WEIGHTS = (np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0 - 0.4)
BIAS = np.array([0.1, -0.2, 0.3], dtype=np.float32)


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


def pair(agent: Agent, host_id: str = HOST_ID) -> str:
    """Pair ``host_id`` with the agent (as a host that read its code); the secret."""
    with DeviceClient("127.0.0.1", agent.port) as client:
        client.hello(host_id)
        return client.pair(host_id, "test host", agent.pairing.code)


@pytest.fixture
def secret(agent) -> str:
    return pair(agent)


def connect(agent: Agent, secret: str, host_id: str = HOST_ID, session: bool = True,
            runtime: str = "onnxruntime", **options) -> DeviceClient:
    client = DeviceClient("127.0.0.1", agent.port, **options)
    client.hello(host_id)
    client.authenticate(host_id, secret)
    if session:
        client.open_session(runtime)
    return client


@pytest.fixture
def device(agent, secret):
    """An authenticated client of ``agent`` with a session open."""
    client = connect(agent, secret)
    yield client
    client.close()


def raw_connection(agent: Agent) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", agent.port), timeout=10)
    return sock


def read_raw_frame(sock: socket.socket):
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


def closed_by_peer(sock: socket.socket) -> bool:
    """True when the agent closed ``sock`` (nothing more to read but the end)."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def models_dir(agent: Agent) -> Path:
    return agent.data_dir / "models"

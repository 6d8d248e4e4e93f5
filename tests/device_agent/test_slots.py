"""Deployment slots (protocol version 4): deploying, swapping under load, a model that cannot
load, slots across a restart of the agent process; real agents, real onnxruntime."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from tests.services.device_agent import AgentProcess, free_port
from workbench_device.client import DeviceClient
from workbench_device.inference import InferenceClient
from workbench_device.protocol import Err, Msg, RemoteError

from .conftest import HOST_ID, connect, host_identity, pair, pair_with_code, reference, \
    tiny_onnx_bytes
from .links import wait_until

OTHER_BIAS = np.array([1.0, 2.0, 3.0], np.float32)
X = np.random.default_rng(7).standard_normal((2, 4)).astype(np.float32)


def _two_models(client: DeviceClient):
    first = client.push_model(tiny_onnx_bytes(), name="first.onnx").sha256
    second = client.push_model(tiny_onnx_bytes(OTHER_BIAS), name="second.onnx").sha256
    return first, second


def _expected(sha256: str, first: str) -> np.ndarray:
    return reference(X) if sha256 == first else reference(X, OTHER_BIAS)


@pytest.fixture
def slot_agent(start_agent):
    return start_agent(inference_port=0)


@pytest.fixture
def host(slot_agent):
    client = connect(slot_agent, pair(slot_agent), session=False)
    yield client
    client.close()


def test_a_deploy_switches_the_slot_for_paired_hosts_and_apps_on_the_device(slot_agent, host):
    first, second = _two_models(host)
    reply = host.deploy_slot("classifier", first, warm_runs=2)
    assert reply["slot"] == "classifier" and reply["model"] == first and reply["previous"] is None
    assert reply["load_ms"] > 0 and reply["warm_ms"] > 0 and reply["warm_runs"] == 2
    assert reply["switched_at"] <= time.time()
    with InferenceClient(port=slot_agent.inference_port) as app:
        outputs = app.run("classifier", {"x": X})
        np.testing.assert_allclose(outputs["y"], reference(X), rtol=1e-6)
        swapped = host.deploy_slot("classifier", second)
        assert swapped["previous"] == first and swapped["switched_at"] >= reply["switched_at"]
        answer = app.run_detailed("classifier", {"x": X})
        assert answer.model == second
        np.testing.assert_allclose(answer.outputs["y"], reference(X, OTHER_BIAS), rtol=1e-6)
        outputs, model, run_ms = host.run_slot("classifier", {"x": X})
        assert model == second and run_ms >= 0
        [listed] = app.slots()
        assert listed == host.list_slots()[0] | {"served": 2}  # the paired run counted too
    [listed] = host.list_slots()
    assert (listed["slot"], listed["model"], listed["since"]) == ("classifier", second,
                                                                  swapped["switched_at"])
    assert listed["served"] == 2 and listed["errors"] == 0 and listed["deploying"] is None
    with pytest.raises(RemoteError) as error:
        host.run_slot("classifier", {"x": X.astype(np.float64)})
    assert error.value.code == Err.BAD_REQUEST
    assert host.list_slots()[0]["errors"] == 1
    assert host.remove_slot("classifier") == {"slot": "classifier", "model": second}
    with pytest.raises(RemoteError) as error:
        host.run_slot("classifier", {"x": X})
    assert error.value.code == Err.NOT_FOUND and "deploy a model" in error.value.message
    assert host.list_slots() == []


def test_a_model_the_runtime_cannot_load_leaves_the_slot_serving_the_old_one(host):
    first, _ = _two_models(host)
    host.deploy_slot("classifier", first)
    broken = host.push_model(b"not an onnx model at all").sha256
    with pytest.raises(RemoteError) as error:
        host.deploy_slot("classifier", broken)
    assert error.value.code == Err.RUNTIME
    assert "onnxruntime cannot load" in error.value.message
    assert "keeps its model" in error.value.message
    [listed] = host.list_slots()
    assert listed["model"] == first and listed["deploying"] is None
    outputs, model, _ = host.run_slot("classifier", {"x": X})
    assert model == first
    np.testing.assert_allclose(outputs["y"], reference(X), rtol=1e-6)
    # A first deploy that fails leaves no slot behind; bad fields are bad_request.
    with pytest.raises(RemoteError) as error:
        host.deploy_slot("detector", broken)
    assert error.value.code == Err.RUNTIME and [s["slot"] for s in host.list_slots()] == ["classifier"]
    for slot, sha, warm in (("", first, 1), ("a/b", first, 1), ("ok", "x" * 64, 1),
                            ("ok", first, -1)):
        with pytest.raises(RemoteError) as error:
            host.deploy_slot(slot, sha, warm_runs=warm)
        assert error.value.code == Err.BAD_REQUEST, (slot, warm)
    with pytest.raises(RemoteError) as error:
        host.deploy_slot("ok", "0" * 64)
    assert error.value.code == Err.NOT_FOUND


def test_a_second_deploy_of_a_slot_under_way_is_refused_busy(host):
    first, second = _two_models(host)
    host.deploy_slot("classifier", first)
    other = connect_like(host)
    outcome = {}
    # Many warm-up runs keep the first deploy under way while the second one comes.
    deploying = threading.Thread(target=lambda: outcome.update(
        host.deploy_slot("classifier", second, warm_runs=50000)))
    deploying.start()
    try:
        assert wait_until(lambda: other.list_slots()[0]["deploying"] == second, 30)
        with pytest.raises(RemoteError) as error:
            other.deploy_slot("classifier", first)
        assert error.value.code == Err.BUSY and "being deployed" in error.value.message
        with pytest.raises(RemoteError) as error:
            other.remove_slot("classifier")
        assert error.value.code == Err.BUSY
        assert other.run_slot("classifier", {"x": X})[1] == first  # still serving meanwhile
    finally:
        deploying.join(120)
        other.close()
    assert outcome["model"] == second and outcome["previous"] == first


def slow_to_load_onnx_bytes(nodes: int = 30000) -> bytes:
    """A small file that onnxruntime takes long to load (a second or more here): a chain of
    ``nodes`` Sin and Cos nodes, x float32 [batch, 4] in, y out, each of which its graph
    optimiser visits."""
    from onnx import TensorProto, helper

    chain, previous = [], "x"
    for index in range(nodes):
        chain.append(helper.make_node("Sin" if index % 2 else "Cos", [previous], [f"t{index}"]))
        previous = f"t{index}"
    chain.append(helper.make_node("Identity", [previous], ["y"]))
    graph = helper.make_graph(
        chain, "slow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def test_requests_during_a_slow_load_are_answered_by_the_old_model_before_the_load_ends(
        slot_agent, host):
    first = host.push_model(tiny_onnx_bytes(), name="first.onnx").sha256
    slow = host.push_model(slow_to_load_onnx_bytes(), name="slow.onnx").sha256
    host.deploy_slot("classifier", first)
    watcher = connect_like(host)
    outcome = {}
    deploying = threading.Thread(target=lambda: outcome.update(
        host.deploy_slot("classifier", slow, warm_runs=0)))
    deploying.start()
    try:
        assert wait_until(lambda: watcher.list_slots()[0]["deploying"] == slow, 30)
        with InferenceClient(port=slot_agent.inference_port) as app:
            answers = [app.run_detailed("classifier", {"x": X}) for _ in range(5)]
            answered_at = time.time()
        still_loading = watcher.list_slots()[0]["deploying"] == slow
    finally:
        deploying.join(120)
        watcher.close()
    assert [answer.model for answer in answers] == [first] * 5
    np.testing.assert_allclose(answers[-1].outputs["y"], reference(X), rtol=1e-6)
    # Without warm-up runs the switch follows the load at once: the requests were answered
    # while it went on, not after it.
    assert still_loading and answered_at < outcome["switched_at"]
    assert outcome["model"] == slow and outcome["previous"] == first and outcome["warm_runs"] == 0
    assert host.run_slot("classifier", {"x": X})[1] == slow


def test_the_old_model_is_closed_once_the_slot_switched(slot_agent, host):
    first, second = _two_models(host)
    host.deploy_slot("classifier", first)
    old = slot_agent.slots._slots["classifier"].current
    with InferenceClient(port=slot_agent.inference_port) as app:
        assert app.run_detailed("classifier", {"x": X}).model == first
        host.deploy_slot("classifier", second)
        assert app.run_detailed("classifier", {"x": X}).model == second
    assert wait_until(lambda: old.closed and old.model._session is None)


def connect_like(client: DeviceClient) -> DeviceClient:
    """Another connection of the host ``client`` is connected as."""
    other = DeviceClient(client.host, client.port, identity=client.identity,
                         pin=client.peer_fingerprint)
    other.hello(HOST_ID)
    return other


def test_a_version_3_host_sees_no_slot_messages(slot_agent):
    credential = pair(slot_agent)
    old = DeviceClient("127.0.0.1", slot_agent.port, identity=credential.identity,
                       pin=credential.pin)
    try:
        assert old.request(Msg.HELLO, versions=[2, 3]).header["protocol"] == 3
        for kind in (Msg.SLOT_DEPLOY, Msg.SLOT_LIST, Msg.SLOT_RUN, Msg.SLOT_REMOVE):
            with pytest.raises(RemoteError) as error:
                old.request(kind, slot="classifier")
            assert error.value.code == Err.UNKNOWN_TYPE and "4" in error.value.message
        assert old.info()["device_id"] == slot_agent.device_id  # the connection goes on
    finally:
        old.close()


def test_swaps_under_a_steady_stream_of_requests_fail_none(slot_agent, host):
    first, second = _two_models(host)
    host.deploy_slot("classifier", first)
    stop = threading.Event()
    failures, answers = [], {first: 0, second: 0}

    def stream() -> None:
        with InferenceClient(port=slot_agent.inference_port) as app:
            while not stop.is_set():
                try:
                    answer = app.run_detailed("classifier", {"x": X})
                    np.testing.assert_allclose(answer.outputs["y"], _expected(answer.model, first),
                                               rtol=1e-6)
                    answers[answer.model] += 1
                except Exception as exc:  # every failure is the test's finding
                    failures.append(repr(exc))

    streams = [threading.Thread(target=stream) for _ in range(2)]
    for thread in streams:
        thread.start()
    try:
        for swap in range(12):
            host.deploy_slot("classifier", second if swap % 2 == 0 else first, warm_runs=1)
    finally:
        stop.set()
        for thread in streams:
            thread.join(30)
    assert failures == []
    assert answers[first] > 0 and answers[second] > 0
    [listed] = host.list_slots()
    assert listed["model"] == first and listed["errors"] == 0


# --- a real agent process, restarted ---

def agent_process(data_dir, inference_port: int) -> AgentProcess:
    return AgentProcess(data_dir, "Slot Phone", False, "--inference-port", str(inference_port))


def test_slots_survive_a_restart_of_the_agent_process(tmp_path):
    port = free_port()
    agent = agent_process(tmp_path / "agent", port)
    app = InferenceClient(port=port)
    try:
        assert agent.announced["inference_port"] == port and agent.announced["protocol"] == 4
        identity = host_identity(tmp_path / "host", HOST_ID)
        credential = pair_with_code(agent.announced["port"], agent.announced["pairing_code"],
                                    identity)
        with DeviceClient("127.0.0.1", agent.announced["port"], identity=identity,
                          pin=credential.pin) as host:
            host.hello(HOST_ID)
            first, second = _two_models(host)
            host.deploy_slot("classifier", first)
            deployed = host.deploy_slot("detector", second)
        assert app.run_detailed("detector", {"x": X}).model == second
        agent.stop()
        agent = agent_process(tmp_path / "agent", port)
        # The same client: its connection dropped with the agent, it connects again once.
        answer = app.run_detailed("detector", {"x": X})
        assert answer.model == second and app.reconnects == 1
        np.testing.assert_allclose(answer.outputs["y"], reference(X, OTHER_BIAS), rtol=1e-6)
        assert app.run_detailed("classifier", {"x": X}).model == first
        listed = {s["slot"]: s for s in app.slots()}
        assert listed["detector"]["since"] == deployed["switched_at"]
        assert listed["classifier"]["model"] == first and "error" not in listed["classifier"]
    finally:
        app.close()
        agent.stop()

"""Loading, running and benchmarking models in a session, with real onnxruntime (and MNN when
it is installed)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from workbench_device.protocol import Err, RemoteError

from .conftest import BIAS, WEIGHTS, connect, reference, tiny_onnx_bytes


def test_a_pushed_model_loads_and_runs_with_the_outputs_of_the_reference(device, tiny_model):
    sha = device.push_model(tiny_model, name="tiny.onnx").sha256
    loaded = device.load_model(sha, name="tiny.onnx")
    assert loaded["inputs"] == [{"name": "x", "dtype": "float32", "shape": ["batch", 4]}]
    assert [o["name"] for o in loaded["outputs"]] == ["y", "twice"]
    assert loaded["init_ms"] > 0
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    outputs, run_ms = device.run(loaded["model"], {"x": x})
    np.testing.assert_allclose(outputs["y"], reference(x), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(outputs["twice"], 2 * reference(x), rtol=1e-6, atol=1e-6)
    assert outputs["y"].shape == (5, 3) and run_ms >= 0


def test_inputs_that_do_not_fit_the_model_are_refused_and_the_session_goes_on(device, tiny_model):
    handle = device.load_model(device.push_model(tiny_model).sha256)["model"]
    x = np.ones((2, 4), np.float32)
    for bad in ({"wrong": x}, {"x": x.astype(np.float64)}, {"x": np.ones((2, 5), np.float32)},
                {"x": np.ones((4,), np.float32)}, {"x": x, "extra": x}):
        with pytest.raises(RemoteError) as error:
            device.run(handle, bad)
        assert error.value.code == Err.BAD_REQUEST
    with pytest.raises(RemoteError) as error:
        device.run("m99", {"x": x})
    assert error.value.code == Err.NOT_FOUND
    outputs, _ = device.run(handle, {"x": x})
    np.testing.assert_allclose(outputs["y"], reference(x), rtol=1e-6)


def test_loading_needs_a_pushed_model_that_the_runtime_can_read(device):
    with pytest.raises(RemoteError) as error:
        device.load_model("0" * 64)
    assert error.value.code == Err.NOT_FOUND
    sha = device.push_model(b"this is not an onnx model").sha256
    with pytest.raises(RemoteError) as error:
        device.load_model(sha)
    assert error.value.code == Err.RUNTIME
    with pytest.raises(RemoteError) as error:
        device.load_model("not-a-sha")
    assert error.value.code == Err.BAD_REQUEST


def test_model_requests_need_a_session(agent, credential, tiny_model):
    client = connect(agent, credential, session=False)
    try:
        sha = client.push_model(tiny_model).sha256  # the store is the device's, not a session's
        with pytest.raises(RemoteError) as error:
            client.load_model(sha)
        assert error.value.code == Err.BAD_REQUEST and "session.open" in error.value.message
        client.open_session()
        with pytest.raises(RemoteError) as error:
            client.open_session()
        assert error.value.code == Err.BAD_REQUEST
        assert client.load_model(sha)["model"] == "m1"
    finally:
        client.close()


def test_a_benchmark_reports_latency_percentiles_init_time_and_peak_memory(device, tiny_model):
    handle = device.load_model(device.push_model(tiny_model).sha256)["model"]
    result = device.bench(handle, warmup=3, runs=40, batch=2)
    assert result["runs"] == 40 and result["warmup"] == 3 and result["batch"] == 2
    assert 0 < result["p50_ms"] <= result["p90_ms"] <= result["p99_ms"] <= result["max_ms"]
    assert result["min_ms"] <= result["mean_ms"] <= result["max_ms"]
    assert result["init_ms"] > 0
    assert result["peak_rss_bytes"] > 10 * 1024 * 1024


def test_a_benchmark_runs_on_inputs_the_host_sends(device, tiny_model):
    handle = device.load_model(device.push_model(tiny_model).sha256)["model"]
    result = device.bench(handle, warmup=0, runs=5, inputs={"x": np.zeros((7, 4), np.float32)})
    assert result["runs"] == 5
    with pytest.raises(RemoteError) as error:
        device.bench(handle, runs=0)
    assert error.value.code == Err.BAD_REQUEST
    with pytest.raises(RemoteError) as error:
        device.bench(handle, runs=3, inputs={"x": np.zeros((7, 9), np.float32)})
    assert error.value.code == Err.BAD_REQUEST


def test_a_session_asks_for_a_runtime_the_device_has(agent, credential):
    client = connect(agent, credential, session=False)
    try:
        with pytest.raises(RemoteError) as error:
            client.open_session("tensorflow")
        assert error.value.code == Err.BAD_REQUEST
        with pytest.raises(RemoteError) as error:
            client.request("session.open", runtime="onnxruntime", threads=0)
        assert error.value.code == Err.BAD_REQUEST
    finally:
        client.close()


def _tiny_mnn_model(path) -> None:
    import MNN.expr as F

    x = F.placeholder([1, 4], F.NCHW, F.float)
    x.name = "x"
    w = F.const(WEIGHTS, [4, 3], F.NCHW, F.float)
    b = F.const(BIAS, [3], F.NCHW, F.float)
    y = F.relu(F.matmul(x, w) + b)
    y.name = "y"
    F.save([y], str(path))


@pytest.mark.skipif(importlib.util.find_spec("MNN") is None, reason="MNN is not installed")
def test_an_mnn_session_runs_an_mnn_model(agent, credential, tmp_path):
    path = tmp_path / "tiny.mnn"
    _tiny_mnn_model(path)
    client = connect(agent, credential, runtime="mnn")
    try:
        sha = client.push_model(path).sha256
        loaded = client.load_model(sha, name="tiny.mnn")
        assert loaded["runtime"] == "mnn"
        assert loaded["inputs"] == [{"name": "x", "dtype": "float32", "shape": [1, 4]}]
        x = np.array([[0.5, -1.0, 2.0, 0.25]], np.float32)
        outputs, _ = client.run(loaded["model"], {"x": x})
        np.testing.assert_allclose(outputs["y"], reference(x), rtol=1e-5, atol=1e-5)
        # A batch the graph cannot take is refused before MNN sees it (MNN would crash).
        with pytest.raises(RemoteError) as error:
            client.run(loaded["model"], {"x": np.ones((3, 4), np.float32)})
        assert error.value.code == Err.BAD_REQUEST
        assert client.bench(loaded["model"], warmup=1, runs=5)["runs"] == 5
        # An ONNX file is no MNN model: an error, not a crash.
        onnx_sha = client.push_model(tiny_onnx_bytes()).sha256
        with pytest.raises(RemoteError) as error:
            client.load_model(onnx_sha)
        assert error.value.code == Err.RUNTIME
    finally:
        client.close()

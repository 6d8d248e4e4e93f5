"""The link to a paired device: pushes that send nothing twice and resume after a cancel, runs,
benchmarks, the device's log, and a device that goes away mid-request."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from workbench.device.errors import ConnectionLost
from workbench.device.link import DeviceLink, pair_device
from workbench.tasks import CancelToken, Cancelled


@pytest.fixture
def paired_agent(start_agent):
    agent = start_agent(name="Link Phone")
    pair_device(agent.address, agent.code)
    return agent


def test_pushing_the_same_model_twice_sends_nothing_the_second_time(paired_agent, digits_onnx):
    reports = []
    with DeviceLink.open(paired_agent.address) as link:
        first = link.push(digits_onnx, progress=reports.append)
        second = link.push(digits_onnx, progress=reports.append)
    size = digits_onnx.stat().st_size
    assert (first.sent, first.size, first.skipped) == (size, size, False)
    assert (second.sent, second.skipped) == (0, True)
    assert reports[-1].fraction == 1.0 and "Link Phone" in reports[-1].message
    assert (paired_agent.data_dir / "models" / first.sha256).stat().st_size == size
    with DeviceLink.open(paired_agent.address) as other_connection:
        assert other_connection.has(digits_onnx)


def test_a_push_that_sends_nothing_shows_no_bytes_being_pushed(paired_agent, digits_onnx):
    with DeviceLink.open(paired_agent.address) as link:
        link.push(digits_onnx)
        reports = []
        assert link.push(digits_onnx, progress=reports.append).skipped
    assert [r.message for r in reports if "Pushing" in r.message] == []


def test_an_agent_lost_before_the_run_of_a_model_it_has_does_not_ask_to_resume_a_push(
        paired_agent, digits_onnx):
    with DeviceLink.open(paired_agent.address) as link:
        link.push(digits_onnx)
    with DeviceLink.open(paired_agent.address) as link:
        assert link.has(digits_onnx)
        paired_agent.kill()
        with pytest.raises(ConnectionLost) as lost:
            link.load(digits_onnx)
    message = str(lost.value)
    assert "Link Phone" in message and "stopped answering" in message
    assert "has digits.onnx already" in message and "nothing remained to send" in message
    assert "resume" not in message and "during the push" not in message


def test_a_cancelled_push_stops_and_the_next_push_resumes_where_it_stopped(paired_agent, tmp_path):
    model = tmp_path / "big.bin"
    model.write_bytes(np.random.default_rng(1).bytes(12 * 1024 * 1024))
    cancel = CancelToken()

    def cancel_at_once(report) -> None:
        cancel.cancel()

    with DeviceLink.open(paired_agent.address) as link:
        with pytest.raises(Cancelled):
            link.push(model, progress=cancel_at_once, cancel=cancel, chunk_size=1024 * 1024)
        assert not link.connected
        resumed = link.push(model, chunk_size=1024 * 1024)
        assert link.has(model)
    assert 0 < resumed.resumed_from < resumed.size
    assert resumed.sent == resumed.size - resumed.resumed_from
    assert (paired_agent.data_dir / "models" / resumed.sha256).read_bytes() == model.read_bytes()


def test_a_model_runs_on_the_device_as_it_does_here(paired_agent, digits_onnx, digits_npz):
    import onnxruntime as ort

    x = np.load(digits_npz)["x"][:5]
    expected = ort.InferenceSession(str(digits_onnx)).run(None, {"images": x})[0]
    with DeviceLink.open(paired_agent.address) as link:
        loaded = link.load(digits_onnx)
        assert [i["name"] for i in loaded.inputs] == ["images"]
        assert link.load(digits_onnx) is loaded  # once per session
        outputs, run_ms = link.run(loaded, {"images": x})
        figures = link.bench(loaded, warmup=2, runs=20)
    np.testing.assert_array_equal(outputs["logits"], expected)
    assert run_ms > 0
    assert figures["runs"] == 20 and figures["p50_ms"] <= figures["p90_ms"] <= figures["p99_ms"]


def test_the_link_connects_again_after_the_device_restarts(paired_agent, digits_onnx, digits_npz):
    from .conftest import AgentProcess

    x = np.load(digits_npz)["x"][:2]
    link = DeviceLink.open(paired_agent.address)
    loaded = link.load(digits_onnx)
    paired_agent.stop()
    with pytest.raises(ConnectionLost) as lost:
        link.run(loaded, {"images": x})
    # Named as the user knows it, with the address to check.
    assert str(lost.value).startswith(f"Link Phone ({paired_agent.address}) stopped answering (")
    assert str(lost.value).endswith("); is the agent still running?")
    restarted = AgentProcess(paired_agent.data_dir, "Link Phone", False, "--port",
                             str(paired_agent.port))
    try:
        outputs, _ = link.run(loaded, {"images": x})  # connects, opens a session, loads again
        assert outputs["logits"].shape == (2, 10)
    finally:
        link.close()
        restarted.stop()


def _long_bench(address: str, model) -> tuple:
    """A link to ``address`` running a long benchmark of ``model`` on a thread: (link, thread,
    the list its exception lands in)."""
    link = DeviceLink.open(address)
    loaded = link.load(model)
    failure: list[BaseException] = []

    def bench() -> None:
        try:
            link.bench(loaded, warmup=0, runs=100000, batch=2048)
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=bench)
    thread.start()
    return link, thread, failure


def test_killing_the_agent_during_a_benchmark_is_a_clear_error(paired_agent, digits_onnx):
    _link, thread, failure = _long_bench(paired_agent.address, digits_onnx)
    paired_agent.kill()
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert isinstance(failure[0], ConnectionLost)
    assert "stopped answering" in str(failure[0]) and "is the agent still running?" in str(failure[0])


def test_the_device_log_streams_to_the_host(paired_agent):
    lines: list[dict] = []
    follower = DeviceLink.open(paired_agent.address)
    thread = threading.Thread(target=follower.follow_logs,
                              kwargs={"on_line": lines.append, "count": 1, "seconds": 60})
    thread.start()
    while thread.is_alive():  # every authenticated connection writes a log line
        with DeviceLink.open(paired_agent.address) as other:
            other.info()
        thread.join(timeout=0.2)
    assert lines and {"time", "level", "message"} <= set(lines[0])
    assert not follower.connected


def test_abort_from_another_thread_cancels_the_call_under_way(paired_agent, digits_onnx):
    link, thread, failure = _long_bench(paired_agent.address, digits_onnx)
    link.abort()
    thread.join(timeout=60)
    assert isinstance(failure[0], Cancelled)
    with DeviceLink.open(paired_agent.address) as other:  # the agent serves on
        assert other.info()["name"] == "Link Phone"

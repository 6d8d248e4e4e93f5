"""One device, many hosts: at least eight sessions at once, each pushing, running and keeping
its own files, while a misbehaving client comes and goes."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

from workbench_device.client import DeviceClient, sha256_of
from workbench_device.protocol import Err, RemoteError, encode_header, encode_prefix

from .conftest import connect, pair, raw_connection, reference, tiny_onnx_bytes

SESSIONS = 10


def test_ten_sessions_push_run_and_keep_their_files_at_the_same_time(agent, credential):
    shared_model = tiny_onnx_bytes()
    barrier = threading.Barrier(SESSIONS)
    failures, results = [], {}

    def one_host(index: int) -> None:
        try:
            with connect(agent, credential) as client:
                barrier.wait(timeout=30)
                bias = np.array([index, -index, 0.5], np.float32)
                own_model = tiny_onnx_bytes(bias)
                blob = os.urandom(2 * 1024 * 1024 + index)
                for _ in range(2):
                    client.push_model(shared_model)  # the same model from every session
                    client.push_model(blob, chunk_size=512 * 1024)
                handle = client.load_model(client.push_model(own_model).sha256)["model"]
                client.put_file("mine.bin", blob[:1000])
                x = np.random.default_rng(index).standard_normal((3, 4)).astype(np.float32)
                for _ in range(20):
                    outputs, _ = client.run(handle, {"x": x})
                    np.testing.assert_allclose(outputs["y"], reference(x, bias), rtol=1e-5,
                                               atol=1e-5)
                bench = client.bench(handle, warmup=1, runs=10)
                assert client.get_file("mine.bin") == blob[:1000]
                results[index] = (client.info()["sessions"], bench["runs"])
        except Exception as exc:  # reported below, with the session's number
            failures.append((index, repr(exc)))

    threads = [threading.Thread(target=one_host, args=(i,)) for i in range(SESSIONS)]
    for thread in threads:
        thread.start()
    # Garbage and a vanishing pusher while they work.
    for _ in range(5):
        bad = raw_connection(agent)
        bad.sendall(b"garbage" * 100)
        bad.close()
    vanishing = connect(agent, credential, session=False)
    blob = os.urandom(1024 * 1024)
    sha = sha256_of(blob)
    vanishing.request("push.begin", sha256=sha, size=len(blob))
    header = encode_header({"type": "push.chunk", "id": 9, "sha256": sha, "offset": 0})
    vanishing.fs.sock.sendall(encode_prefix(len(header), len(blob)) + header + blob[:1000])
    vanishing.fs.close()
    for thread in threads:
        thread.join(120)
    assert failures == []
    assert len(results) == SESSIONS
    assert max(sessions for sessions, _ in results.values()) >= 8
    assert all(runs == 10 for _, runs in results.values())


def test_sessions_beyond_the_limit_are_refused_until_one_closes(start_agent):
    agent = start_agent(max_sessions=2)
    credential = pair(agent)
    first, second = connect(agent, credential), connect(agent, credential)
    third = connect(agent, credential, session=False)
    try:
        with pytest.raises(RemoteError) as error:
            third.open_session()
        assert error.value.code == Err.BUSY
        first.close()
        deadline = time.monotonic() + 10
        while len(agent.sessions) > 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert third.open_session()
    finally:
        second.close()
        third.close()


def test_a_stopped_agent_gives_its_clients_a_clear_error(agent, credential):
    client = connect(agent, credential)
    agent.stop()
    with pytest.raises((ConnectionError, OSError)):
        client.info()
    with pytest.raises(OSError):
        DeviceClient("127.0.0.1", agent.port, connect_timeout=2)

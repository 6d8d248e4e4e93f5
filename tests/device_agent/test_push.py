"""Content-addressed models: fresh pushes, pushes of what the device has (nothing sent),
resuming after the client vanished, corrupt data refused."""

from __future__ import annotations

import hashlib
import os
import threading

import pytest

from workbench_device.client import sha256_of
from workbench_device.protocol import Err, RemoteError, encode_header, encode_prefix

from .conftest import connect, models_dir, pair


def test_a_fresh_push_stores_the_model_under_its_sha256(device, agent, tmp_path):
    data = os.urandom(5 * 1024 * 1024 + 123)
    path = tmp_path / "model.onnx"
    path.write_bytes(data)
    seen = []
    result = device.push_model(path, progress=lambda done, size: seen.append(done))
    sha = hashlib.sha256(data).hexdigest()
    assert result.sha256 == sha and result.size == len(data)
    assert result.sent == len(data) and result.resumed_from == 0 and not result.skipped
    assert (models_dir(agent) / sha).read_bytes() == data
    assert not list(models_dir(agent).glob("*.partial"))
    assert seen[-1] == len(data) and seen == sorted(seen)
    assert device.has_model(sha) == len(data)
    assert device.has_model("0" * 64) is None


def test_pushing_a_model_the_device_has_sends_nothing(device, agent):
    data = os.urandom(300000)
    device.push_model(data)
    again = device.push_model(data)
    assert again.sent == 0 and again.skipped and again.resumed_from == len(data)


def test_a_push_resumes_where_a_vanished_client_stopped(agent, credential, tmp_path):
    data = os.urandom(3 * 1024 * 1024)
    sha = sha256_of(data)
    vanishing = connect(agent, credential, session=False)
    assert vanishing.request("push.begin", sha256=sha, size=len(data)).header["offset"] == 0
    vanishing.request("push.chunk", data[:1000000], sha256=sha, offset=0)
    # The second chunk is cut off in the middle of its payload, then the client is gone.
    header = encode_header({"type": "push.chunk", "id": 50, "sha256": sha, "offset": 1000000})
    vanishing.fs.sock.sendall(encode_prefix(len(header), 1000000) + header + data[1000000:1400000])
    vanishing.fs.sock.close()

    resumer = connect(agent, credential, session=False)
    result = resumer.push_model(data)  # waits until the agent has noticed the first one left
    assert result.resumed_from == 1400000 and result.sent == len(data) - 1400000
    assert (models_dir(agent) / sha).read_bytes() == data
    resumer.close()


def test_a_push_resumes_after_the_agent_restarts(start_agent, tmp_path):
    agent = start_agent(data_dir=tmp_path / "device")
    credential = pair(agent)
    data = os.urandom(2 * 1024 * 1024)
    sha = sha256_of(data)
    client = connect(agent, credential, session=False)
    client.request("push.begin", sha256=sha, size=len(data))
    client.request("push.chunk", data[:700000], sha256=sha, offset=0)
    client.fs.close()
    agent.stop()
    agent = start_agent(data_dir=tmp_path / "device")
    client = connect(agent, credential, session=False)
    result = client.push_model(data)
    assert result.resumed_from == 700000
    assert (models_dir(agent) / sha).read_bytes() == data
    client.close()


def test_corrupt_bytes_fail_the_sha256_check_and_a_new_push_starts_over(device, agent):
    data = os.urandom(100000)
    sha = sha256_of(data)
    corrupt = bytearray(data)
    corrupt[5000] ^= 0xFF
    device.request("push.begin", sha256=sha, size=len(data))
    device.request("push.chunk", bytes(corrupt), sha256=sha, offset=0)
    with pytest.raises(RemoteError) as error:
        device.request("push.end", sha256=sha)
    assert error.value.code == Err.BAD_REQUEST and "hash" in error.value.message
    assert not (models_dir(agent) / sha).exists()
    assert not (models_dir(agent) / (sha + ".partial")).exists()
    result = device.push_model(data)
    assert result.resumed_from == 0 and (models_dir(agent) / sha).read_bytes() == data


def test_chunks_out_of_order_or_past_the_end_are_refused(device):
    data = os.urandom(10000)
    sha = sha256_of(data)
    device.request("push.begin", sha256=sha, size=len(data))
    with pytest.raises(RemoteError) as error:
        device.request("push.chunk", data[100:200], sha256=sha, offset=100)
    assert error.value.code == Err.BAD_REQUEST and error.value.extra["offset"] == 0
    with pytest.raises(RemoteError) as error:
        device.request("push.chunk", data + b"x", sha256=sha, offset=0)
    assert error.value.code == Err.BAD_REQUEST
    with pytest.raises(RemoteError) as error:
        device.request("push.end", sha256=sha)
    assert error.value.code == Err.BAD_REQUEST and error.value.extra["offset"] == 0
    with pytest.raises(RemoteError) as error:
        device.request("push.chunk", data, sha256="cd" * 32, offset=0)
    assert error.value.code == Err.BAD_REQUEST  # no push.begin for that one
    device.request("push.chunk", data, sha256=sha, offset=0)
    assert device.request("push.end", sha256=sha).header["size"] == len(data)


def test_a_size_that_disagrees_with_the_stored_model_is_refused(device):
    data = os.urandom(1000)
    device.push_model(data)
    with pytest.raises(RemoteError) as error:
        device.request("push.begin", sha256=sha256_of(data), size=999)
    assert error.value.code == Err.BAD_REQUEST


def test_two_hosts_pushing_the_same_model_at_once_both_end_with_it(agent, credential):
    data = os.urandom(6 * 1024 * 1024)
    results, errors = [], []

    def push():
        try:
            with connect(agent, credential, session=False) as client:
                results.append(client.push_model(data, chunk_size=256 * 1024, window=2))
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=push) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert sorted(r.sent for r in results)[:2] == [0, 0]  # one sent it, the others waited
    assert (models_dir(agent) / sha256_of(data)).read_bytes() == data


def test_an_empty_model_can_be_pushed(device):
    result = device.push_model(b"")
    assert result.size == 0 and device.has_model(result.sha256) == 0

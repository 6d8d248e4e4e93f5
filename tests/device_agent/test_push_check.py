"""The sha256 check of a pushed model, which may end after push.end has answered: a model is
loadable only once its bytes are checked and stored, and bytes that do not match are never
loadable. The bytes go from the socket to the file by splice or by copying, both the same."""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from workbench_device import client as client_module
from workbench_device import store as store_module
from workbench_device import wire
from workbench_device.client import sha256_of
from workbench_device.protocol import Err, RemoteError
from workbench_device.store import CHECK_INLINE_BYTES, ModelStore

from .conftest import connect, models_dir, tiny_onnx_bytes

BIG = CHECK_INLINE_BYTES * 2 + 12345


@pytest.fixture
def check_after_end(monkeypatch):
    """Pushes are never hashed while they arrive: every check of a big model happens after
    push.end, as on a fast link."""
    monkeypatch.setattr(store_module, "FOLLOW_BELOW_BYTES_PER_S", 0)


@pytest.fixture
def gated_check(monkeypatch, check_after_end):
    """Checks wait for the returned event before they start."""
    gate = threading.Event()
    original = store_module._Upload._finish

    def finish(upload):
        gate.wait(30)
        original(upload)

    monkeypatch.setattr(store_module._Upload, "_finish", finish)
    yield gate
    gate.set()


def _send_all(client, data: bytes, sha: str) -> None:
    client.request("push.begin", sha256=sha, size=len(data))
    for offset in range(0, len(data), 1024 * 1024):
        client.request("push.chunk", data[offset:offset + 1024 * 1024], sha256=sha, offset=offset)


def test_a_big_push_is_acknowledged_before_its_check_and_loadable_after_it(
        agent, credential, gated_check):
    from onnx import load_from_string

    padded = load_from_string(tiny_onnx_bytes())  # a real model, made big
    padded.doc_string = "x" * BIG
    data = padded.SerializeToString()
    sha = sha256_of(data)
    pusher = connect(agent, credential)
    other = connect(agent, credential)
    try:
        _send_all(pusher, data, sha)
        end = pusher.request("push.end", sha256=sha).header
        assert end["size"] == len(data) and end["verified"] is False
        assert not (models_dir(agent) / sha).exists()  # not under its name before the check
        answers = {}
        waiting = [threading.Thread(target=lambda: answers.update(has=other.has_model(sha))),
                   threading.Thread(target=lambda: answers.update(load=pusher.load_model(sha)))]
        for thread in waiting:
            thread.start()
        waiting[0].join(0.3)
        assert "has" not in answers  # model.has waits for the check
        gated_check.set()
        for thread in waiting:
            thread.join(30)
        assert answers["has"] == len(data) and answers["load"]["model"] == "m1"
        assert (models_dir(agent) / sha).read_bytes() == data
        assert not list(models_dir(agent).glob("*.partial"))
        assert pusher.push_model(data).skipped
    finally:
        gated_check.set()
        pusher.close()
        other.close()


def test_corrupt_bytes_acknowledged_before_the_check_are_never_loadable(
        agent, credential, check_after_end):
    data = os.urandom(BIG)
    sha = sha256_of(data)
    corrupt = bytearray(data)
    corrupt[len(data) - 10] ^= 0x01
    device = connect(agent, credential)
    try:
        _send_all(device, bytes(corrupt), sha)
        end = device.request("push.end", sha256=sha).header
        assert end["verified"] is False
        has = device.request("model.has", sha256=sha).header  # after the check
        assert has["present"] is False and "hash" in has["push_error"]
        with pytest.raises(RemoteError) as error:
            device.load_model(sha)
        assert error.value.code == Err.NOT_FOUND and "last push failed" in error.value.message
        with pytest.raises(RemoteError) as error:
            device.run_script("x.py", model=sha)
        assert error.value.code == Err.NOT_FOUND
        assert not (models_dir(agent) / sha).exists()
        assert not (models_dir(agent) / (sha + ".partial")).exists()
        # The client that waits for the check says so, and a good push starts over.
        with pytest.raises(RemoteError) as error:
            device.push_model(bytes(corrupt), sha256=sha)
        assert "hash" in error.value.message
        result = device.push_model(data)
        assert result.resumed_from == 0 and result.verified
        assert (models_dir(agent) / sha).read_bytes() == data
        assert "push_error" not in device.request("model.has", sha256=sha).header
    finally:
        device.close()


def test_a_push_of_a_model_under_check_waits_and_sends_nothing(agent, credential, gated_check):
    data = os.urandom(BIG)
    sha = sha256_of(data)
    first = connect(agent, credential, session=False)
    second = connect(agent, credential, session=False)
    try:
        _send_all(first, data, sha)
        assert first.request("push.end", sha256=sha).header["verified"] is False
        results = []
        pushing = threading.Thread(target=lambda: results.append(second.push_model(data)))
        pushing.start()
        pushing.join(0.3)
        assert pushing.is_alive()
        gated_check.set()
        pushing.join(30)
        assert results[0].skipped and results[0].sent == 0
    finally:
        gated_check.set()
        first.close()
        second.close()


def test_on_a_slow_link_the_check_hashes_along_and_push_end_is_verified(
        agent, credential, monkeypatch):
    monkeypatch.setattr(store_module, "FOLLOW_BELOW_BYTES_PER_S", float("inf"))
    data = os.urandom(BIG)
    sha = sha256_of(data)
    device = connect(agent, credential, session=False)
    try:
        _send_all(device, data, sha)
        upload = agent.store._uploads[sha]
        deadline = time.monotonic() + 30
        while upload.hashed < len(data) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert upload.hashed == len(data)  # hashed while no push.end had come
        end = device.request("push.end", sha256=sha).header
        assert end["verified"] is True
        assert (models_dir(agent) / sha).read_bytes() == data
    finally:
        device.close()


def test_a_resumed_push_hashes_what_arrived_before_and_after(agent, credential, monkeypatch):
    monkeypatch.setattr(store_module, "FOLLOW_BELOW_BYTES_PER_S", float("inf"))
    data = os.urandom(BIG)
    sha = sha256_of(data)
    first = connect(agent, credential, session=False)
    first.request("push.begin", sha256=sha, size=len(data))
    first.request("push.chunk", data[:3000000], sha256=sha, offset=0)
    first.fs.close()  # vanishes; what it sent stays, hashed or not
    second = connect(agent, credential, session=False)
    try:
        result = second.push_model(data, chunk_size=1000000)
        assert result.resumed_from == 3000000 and result.verified
        assert (models_dir(agent) / sha).read_bytes() == data
    finally:
        second.close()


class _Owner:
    pass


def _write(data: bytes):
    def to_file(fd: int, offset: int, wrote) -> None:
        os.pwrite(fd, data, offset)
        wrote(len(data))
    return to_file


def test_a_check_cut_off_by_a_stop_is_done_again_after_a_restart(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "FOLLOW_BELOW_BYTES_PER_S", 0)
    data = os.urandom(BIG)
    sha = sha256_of(data)
    store = ModelStore(tmp_path / "models")
    owner = _Owner()
    assert store.begin(sha, len(data), owner) == (0, False)
    store.receive(sha, 0, len(data), owner, _write(data))
    original = store_module._Upload._hash_to

    def hash_once_stopped(upload, end, following=False):
        deadline = time.monotonic() + 30
        while not upload._stop and time.monotonic() < deadline:
            time.sleep(0.005)
        return original(upload, end, following)

    monkeypatch.setattr(store_module._Upload, "_hash_to", hash_once_stopped)
    assert store.end(sha, owner) == (len(data), False)
    store.close()  # the check sees the stop before it hashes anything
    assert not (tmp_path / "models" / sha).exists()
    assert (tmp_path / "models" / (sha + ".partial")).stat().st_size == len(data)
    monkeypatch.setattr(store_module._Upload, "_hash_to", original)
    restarted = ModelStore(tmp_path / "models")
    again = _Owner()
    assert restarted.begin(sha, len(data), again) == (len(data), False)  # nothing to send
    restarted.end(sha, again)
    assert restarted.stored_size(sha) == len(data)
    assert (tmp_path / "models" / sha).read_bytes() == data


@pytest.mark.parametrize("splice", [True, False])
def test_payloads_go_to_the_file_whole_by_splice_or_by_copying(tmp_path, monkeypatch, splice):
    splicing = splice and wire._SPLICE  # splice exists on Linux only
    monkeypatch.setattr(wire, "_SPLICE", splicing)
    data = os.urandom(3 * 1024 * 1024 + 17)
    listener = socket.create_server(("127.0.0.1", 0))
    sender = socket.create_connection(listener.getsockname())
    receiver, _ = listener.accept()
    listener.close()
    receiver.settimeout(10)  # non-blocking underneath, as the agent's sockets are
    path = tmp_path / "out"
    fd = os.open(str(path), os.O_RDWR | os.O_CREAT, 0o600)
    written = []
    try:
        threading.Thread(target=sender.sendall, args=(data + b"next",)).start()
        frames = wire.FrameSocket(receiver)
        frames.recv_to_file(len(data) - 1000, fd, 1000, written.append)
        assert sum(written) == len(data) - 1000
        frames.recv_to_file(1000, fd, 0, written.append)
        assert path.read_bytes() == data[len(data) - 1000:] + data[:len(data) - 1000]
        assert receiver.recv(4) == b"next"  # not a byte more was taken
        assert frames._splice == splicing  # no silent change of method
        # The sender vanishes part-way: what arrived is in the file, and reported.
        written.clear()
        sender.sendall(data[:5000])
        sender.close()
        with pytest.raises(wire.ConnectionClosed):
            frames.recv_to_file(10000, fd, 0, written.append)
        assert sum(written) == 5000
        with open(path, "rb") as file:
            assert file.read(5000) == data[:5000]
        frames.close()
    finally:
        os.close(fd)
        receiver.close()


def test_a_file_that_cannot_be_written_is_the_files_fault(tmp_path):
    left, right = socket.socketpair()
    path = tmp_path / "read-only"
    path.write_bytes(b"")
    fd = os.open(str(path), os.O_RDONLY)
    try:
        left.sendall(b"x" * 1000)
        with pytest.raises(wire.FileWriteError):
            wire.FrameSocket(right).recv_to_file(1000, fd, 0, lambda n: None)
    finally:
        os.close(fd)
        left.close()
        right.close()


def test_the_client_remembers_the_hash_of_a_file_that_did_not_change(tmp_path, monkeypatch):
    monkeypatch.setattr(client_module, "_RACY_S", -1.0)  # the file is old enough
    path = tmp_path / "model.onnx"
    path.write_bytes(b"first version")
    first = sha256_of(path)
    reads = []
    real_sha256 = client_module.hashlib.sha256
    monkeypatch.setattr(client_module.hashlib, "sha256",
                        lambda *a: reads.append(1) or real_sha256(*a))
    assert sha256_of(path) == first and reads == []
    time.sleep(0.01)
    path.write_bytes(b"other version")  # same size, new time stamps
    assert sha256_of(path) == sha256_of(b"other version") != first
    assert reads


def test_the_client_does_not_remember_a_file_that_just_changed(tmp_path, monkeypatch):
    path = tmp_path / "model.onnx"
    path.write_bytes(b"fresh")
    sha256_of(path)
    reads = []
    real_sha256 = client_module.hashlib.sha256
    monkeypatch.setattr(client_module.hashlib, "sha256",
                        lambda *a: reads.append(1) or real_sha256(*a))
    sha256_of(path)
    assert reads  # within _RACY_S of its change: hashed again

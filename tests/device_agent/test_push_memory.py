"""Pushes received into the memory the store keeps for them: the file gets every byte before the
model is stored, a cut-off push resumes from exactly what arrived, and a push that does not fit,
or comes while the memory is taken, goes to the file as before."""

from __future__ import annotations

import os

import pytest

from workbench_device import store as store_module
from workbench_device.client import sha256_of
from workbench_device.protocol import BASE_CHUNK, MAX_CHUNK, encode_header, encode_prefix
from workbench_device.store import ModelStore

from .conftest import connect, models_dir


class _Owner:
    pass


def _to_file(data: bytes, calls: list):
    def to_file(fd: int, offset: int, wrote) -> None:
        calls.append("file")
        os.pwrite(fd, data, offset)
        wrote(len(data))
    return to_file


def _to_memory(data: bytes, calls: list):
    def to_memory(view: memoryview, wrote) -> None:
        calls.append("memory")
        assert len(view) == len(data)
        view[:] = data
        wrote(len(data))
    return to_memory


def _push(store: ModelStore, data: bytes, calls: list, owner=None) -> str:
    sha = sha256_of(data)
    owner = owner or _Owner()
    assert store.begin(sha, len(data), owner) == (0, False)
    store.receive(sha, 0, len(data), owner, _to_file(data, calls), _to_memory(data, calls))
    store.end(sha, owner)
    return sha


def _begin_and_receive(store: ModelStore, data: bytes, upto: int, calls: list) -> tuple:
    """Begin a push of ``data`` and receive its first ``upto`` bytes: (sha256, owner)."""
    sha = sha256_of(data)
    owner = _Owner()
    store.begin(sha, len(data), owner)
    store.receive(sha, 0, upto, owner, _to_file(data[:upto], calls), _to_memory(data[:upto], calls))
    return sha, owner


@pytest.fixture
def check_after_end(monkeypatch):
    monkeypatch.setattr(store_module, "FOLLOW_BELOW_BYTES_PER_S", 0)


def test_a_model_that_fits_is_received_into_memory_and_stored_whole(tmp_path, check_after_end):
    store = ModelStore(tmp_path / "models", push_memory_bytes=1 << 20)
    calls: list = []
    for _ in range(3):  # the memory comes back after each push and is lent again
        data = os.urandom(600 * 1024)
        sha = _push(store, data, calls)
        assert store.stored_size(sha) == len(data)
        assert (tmp_path / "models" / sha).read_bytes() == data
    assert calls == ["memory"] * 3
    assert not list((tmp_path / "models").glob("*.partial"))


def test_a_model_larger_than_the_memory_goes_to_the_file(tmp_path, check_after_end):
    store = ModelStore(tmp_path / "models", push_memory_bytes=100 * 1024)
    calls: list = []
    data = os.urandom(100 * 1024 + 1)
    sha = _push(store, data, calls)
    assert calls == ["file"]
    assert (tmp_path / "models" / sha).read_bytes() == data


def test_a_second_push_while_the_memory_is_taken_goes_to_the_file(tmp_path, check_after_end):
    store = ModelStore(tmp_path / "models", push_memory_bytes=1 << 20)
    first, second = os.urandom(300 * 1024), os.urandom(300 * 1024)
    first_owner, second_owner = _Owner(), _Owner()
    first_sha, second_sha = sha256_of(first), sha256_of(second)
    calls: list = []
    store.begin(first_sha, len(first), first_owner)
    store.begin(second_sha, len(second), second_owner)
    store.receive(first_sha, 0, len(first), first_owner, _to_file(first, calls),
                  _to_memory(first, calls))
    store.receive(second_sha, 0, len(second), second_owner, _to_file(second, calls),
                  _to_memory(second, calls))
    store.end(second_sha, second_owner)
    store.end(first_sha, first_owner)
    assert calls == ["memory", "file"]
    assert (tmp_path / "models" / first_sha).read_bytes() == first
    assert (tmp_path / "models" / second_sha).read_bytes() == second


def test_what_arrived_in_memory_is_in_the_file_when_the_connection_ends(tmp_path,
                                                                         check_after_end):
    store = ModelStore(tmp_path / "models", push_memory_bytes=1 << 20)
    data = os.urandom(500 * 1024)
    calls: list = []
    sha, owner = _begin_and_receive(store, data, 200 * 1024, calls)
    store.release(owner)  # the connection dropped
    assert (tmp_path / "models" / (sha + ".partial")).read_bytes() == data[:200 * 1024]
    again = _Owner()
    assert store.begin(sha, len(data), again) == (200 * 1024, False)
    rest = data[200 * 1024:]
    # Resumed from the file: the rest goes to the file too.
    store.receive(sha, 200 * 1024, len(rest), again, _to_file(rest, calls),
                  _to_memory(rest, calls))
    store.end(sha, again)
    assert calls == ["memory", "file"]
    assert (tmp_path / "models" / sha).read_bytes() == data


def test_a_stopping_agent_keeps_the_bytes_received_in_memory(tmp_path, check_after_end):
    store = ModelStore(tmp_path / "models", push_memory_bytes=1 << 20)
    data = os.urandom(300 * 1024)
    sha, _owner = _begin_and_receive(store, data, 1000, [])
    store.close()
    restarted = ModelStore(tmp_path / "models", push_memory_bytes=1 << 20)
    assert restarted.begin(sha, len(data), _Owner()) == (1000, False)


def test_a_push_cut_off_mid_chunk_resumes_from_the_last_byte_that_arrived(agent, credential):
    data = os.urandom(3 * 1024 * 1024)  # fits the agent's push memory
    sha = sha256_of(data)
    client = connect(agent, credential, session=False)
    client.request("push.begin", sha256=sha, size=len(data))
    # A chunk frame announcing 2 MiB, of which 700,001 bytes come before the host vanishes.
    header = encode_header({"type": "push.chunk", "id": 99, "sha256": sha, "offset": 0})
    client.fs.sock.sendall(encode_prefix(len(header), 2 * 1024 * 1024) + header
                           + data[:700001])
    client.fs.close()
    again = connect(agent, credential, session=False)
    result = again.push_model(data)
    assert result.resumed_from == 700001
    assert (models_dir(agent) / sha).read_bytes() == data
    again.close()


def test_the_client_sends_chunks_as_large_as_the_agent_announces(agent, credential):
    client = connect(agent, credential, session=False)
    assert client.hello_reply["max_chunk"] == MAX_CHUNK
    data = os.urandom(MAX_CHUNK + 1000)
    steps: list = []
    client.push_model(data, progress=lambda done, size: steps.append(done))
    assert steps == [MAX_CHUNK, len(data)]
    client.close()


def test_without_an_announced_limit_the_client_sends_base_size_chunks(agent, credential):
    client = connect(agent, credential, session=False)
    del client.hello_reply["max_chunk"]  # as from an agent that announces none
    data = os.urandom(BASE_CHUNK + 10)
    steps: list = []
    client.push_model(data, progress=lambda done, size: steps.append(done))
    assert steps == [BASE_CHUNK, len(data)]
    client.close()


def _received_and_ended(store: ModelStore, data: bytes) -> tuple:
    """Push ``data`` whole and end it, the check left to start: (sha256, its start)."""
    sha, owner = _begin_and_receive(store, data, len(data), [])
    starts: list = []
    assert store.end(sha, owner, start_check=starts.append) == (len(data), False)
    assert len(starts) == 1
    return sha, starts[0]


def test_the_check_can_start_after_the_reply(tmp_path, check_after_end):
    store = ModelStore(tmp_path / "models", push_memory_bytes=1 << 20)
    data = os.urandom(store_module.CHECK_INLINE_BYTES + 1000)  # checked in the background
    sha, start = _received_and_ended(store, data)
    assert store.size_of(sha) is None  # not checked until started
    start()
    assert store.stored_size(sha) == len(data)
    assert (tmp_path / "models" / sha).read_bytes() == data


def test_a_check_not_started_before_the_agent_stopped_is_done_after_a_restart(tmp_path,
                                                                               check_after_end):
    store = ModelStore(tmp_path / "models", push_memory_bytes=1 << 20)
    data = os.urandom(store_module.CHECK_INLINE_BYTES + 1000)
    sha, start = _received_and_ended(store, data)
    store.close()
    start()  # the reply went out as the agent stopped
    assert "stopped" in store.push_error(sha)
    restarted = ModelStore(tmp_path / "models")
    again = _Owner()
    assert restarted.begin(sha, len(data), again) == (len(data), False)
    restarted.end(sha, again)
    assert restarted.stored_size(sha) == len(data)


def test_the_push_memory_is_let_go_when_no_push_used_it_for_a_while(tmp_path, check_after_end):
    import time

    # Looked at more than the idle time after the first push and well within it after the second:
    # each margin is half the idle time, so a busy machine's delays do not decide the outcome.
    store = ModelStore(tmp_path / "models", push_memory_bytes=1 << 20, push_memory_idle_s=1.2)
    assert not store.holds_push_memory
    _push(store, os.urandom(1000), [])
    assert store.holds_push_memory
    time.sleep(0.65)
    _push(store, os.urandom(1000), [])  # a push in between keeps it
    time.sleep(0.65)
    assert store.holds_push_memory
    deadline = time.monotonic() + 10
    while store.holds_push_memory and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not store.holds_push_memory
    calls: list = []
    _push(store, os.urandom(1000), calls)  # allocated again when needed
    assert calls == ["memory"]

"""Content-addressed pushes (fresh, present, resumed after a dropped connection, out of order,
corrupt), and loading, running and benchmarking a model on tensors (sections 6 to 8)."""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pytest

from .frames import encode, pack, prefix, push, unpack
from .models import reference, tiny_onnx

BIAS = np.array([0.1, -0.2, 0.3], np.float32)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_fresh_push_is_stored_and_a_second_push_sends_nothing(connect):
    link = connect(session=False)
    data = os.urandom(5 * 1024 * 1024 + 11)
    sha = _sha(data)
    has = link.ok("model.has", sha256=sha)
    assert has["present"] is False and has["size"] is None
    end = push(link, data)
    assert end["size"] == len(data)
    has = link.ok("model.has", sha256=sha)
    assert has["present"] is True and has["size"] == len(data)
    again = link.ok("push.begin", sha256=sha, size=len(data))
    assert again["present"] is True and again["offset"] == len(data)
    other = connect(session=False)  # the store is the device's, not the connection's
    assert other.ok("model.has", sha256=sha)["present"] is True


def test_an_empty_model_can_be_pushed(connect):
    link = connect(session=False)
    push(link, b"")
    assert link.ok("model.has", sha256=_sha(b""))["size"] == 0


def test_a_push_resumes_at_the_exact_byte_after_a_dropped_connection(connect):
    data = os.urandom(3 * 1024 * 1024)
    sha = _sha(data)
    vanishing = connect(session=False)
    assert vanishing.ok("push.begin", sha256=sha, size=len(data))["offset"] == 0
    assert vanishing.ok("push.chunk", data[:1000000], sha256=sha, offset=0)["received"] == 1000000
    # The next chunk stops in the middle of its payload, and the host is gone.
    head = json.dumps({"type": "push.chunk", "id": 50, "sha256": sha, "offset": 1000000}).encode()
    vanishing.send_raw(prefix(len(head), 1000000) + head + data[1000000:1400000])
    vanishing.close()
    resumer = connect(session=False)
    begin = resumer.ok("push.begin", sha256=sha, size=len(data))  # may wait for the drop
    assert begin["present"] is False and begin["offset"] == 1400000
    end = push(resumer, data)
    assert end["size"] == len(data)
    assert resumer.ok("model.has", sha256=sha)["present"] is True


def test_chunks_out_of_order_or_past_the_end_are_refused_with_the_expected_offset(connect):
    link = connect(session=False)
    data = os.urandom(10000)
    sha = _sha(data)
    error = link.error("push.chunk", data, sha256=sha, offset=0)
    assert error["code"] == "bad_request"  # no push.begin on this connection
    link.ok("push.begin", sha256=sha, size=len(data))
    error = link.error("push.chunk", data[100:200], sha256=sha, offset=100)
    assert error["code"] == "bad_request" and error["offset"] == 0
    assert link.error("push.chunk", data + b"x", sha256=sha, offset=0)["code"] == "bad_request"
    error = link.error("push.end", sha256=sha)
    assert error["code"] == "bad_request" and error["offset"] == 0
    assert link.ok("push.chunk", data[:4000], sha256=sha, offset=0)["received"] == 4000
    error = link.error("push.end", sha256=sha)
    assert error["code"] == "bad_request" and error["offset"] == 4000
    assert link.ok("push.chunk", data[4000:], sha256=sha, offset=4000)["received"] == len(data)
    assert link.ok("push.end", sha256=sha)["size"] == len(data)


def test_requests_with_a_bad_sha256_or_size_are_refused(connect):
    link = connect(session=False)
    for fields in ({"sha256": "zz", "size": 1}, {"sha256": "ab" * 32},
                   {"sha256": "ab" * 32, "size": -1}, {"sha256": "ab" * 32, "size": True}):
        assert link.error("push.begin", **fields)["code"] == "bad_request", fields
    assert link.error("model.has", sha256="ab" * 31)["code"] == "bad_request"
    data = os.urandom(1000)
    push(link, data)
    assert link.error("push.begin", sha256=_sha(data), size=999)["code"] == "bad_request"


@pytest.mark.parametrize("size", [100000, 9 * 1024 * 1024])
def test_corrupt_bytes_are_never_stored_or_loadable(connect, size):
    link = connect()
    data = os.urandom(size)
    sha = _sha(data)
    corrupt = bytearray(data)
    corrupt[size // 2] ^= 0x40
    link.ok("push.begin", sha256=sha, size=size)
    for offset in range(0, size, 1024 * 1024):
        piece = bytes(corrupt[offset:offset + 1024 * 1024])
        link.ok("push.chunk", piece, sha256=sha, offset=offset)
    header, _ = link.reply(link.send("push.end", sha256=sha))
    if header["type"] == "error":
        assert header["code"] == "bad_request"
    else:
        assert header["type"] == "push.end.ok" and header["verified"] is False
    has = link.ok("model.has", sha256=sha)  # after the check
    assert has["present"] is False
    assert link.error("model.load", sha256=sha)["code"] == "not_found"
    # The right bytes start over from nothing and are stored.
    assert link.ok("push.begin", sha256=sha, size=size)["offset"] == 0
    push(link, data)
    assert link.ok("model.has", sha256=sha)["present"] is True


@pytest.fixture
def loaded(connect):
    """A connection with a session and the tiny model loaded; (link, handle, load reply)."""
    link = connect()
    data = tiny_onnx(tuple(BIAS))
    push(link, data)
    reply = link.ok("model.load", sha256=_sha(data), name="tiny.onnx")
    return link, reply["model"], reply


def test_a_loaded_model_describes_its_inputs_and_outputs(loaded):
    _, handle, reply = loaded
    assert isinstance(handle, str) and handle
    assert reply["inputs"] == [{"name": "x", "dtype": "float32", "shape": ["batch", 4]}]
    assert [o["name"] for o in reply["outputs"]] == ["y", "twice"]
    assert all(o["dtype"] == "float32" for o in reply["outputs"])
    assert isinstance(reply["init_ms"], (int, float)) and reply["init_ms"] >= 0


@pytest.mark.parametrize("start", [0, 3])
def test_a_run_takes_and_gives_tensors_as_the_document_lays_them_out(loaded, start):
    link, handle, _ = loaded
    x = np.random.default_rng(start).standard_normal((5, 4)).astype(np.float32)
    descriptors, payload = pack([("x", x)], start=start)  # start 3: a float32 at an odd offset
    header, out = link.call("model.run", payload, model=handle, tensors=descriptors)
    outputs = unpack(header["tensors"], out)
    np.testing.assert_allclose(outputs["y"], reference(x, BIAS), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outputs["twice"], 2 * reference(x, BIAS), rtol=1e-5, atol=1e-6)
    assert outputs["y"].shape == (5, 3) and header["run_ms"] >= 0
    assert sum(d["nbytes"] for d in header["tensors"]) == len(out)


def test_inputs_that_do_not_fit_the_model_are_refused_and_the_session_goes_on(loaded):
    link, handle, _ = loaded
    x = np.ones((2, 4), np.float32)
    for tensors in ([("wrong", x)], [("x", x.astype(np.float64))],
                    [("x", np.ones((2, 5), np.float32))], [("x", np.ones((4,), np.float32))],
                    [("x", x), ("extra", x)]):
        descriptors, payload = pack(tensors)
        error = link.error("model.run", payload, model=handle, tensors=descriptors)
        assert error["code"] == "bad_request", tensors
    descriptors, payload = pack([("x", x)])
    for bad in (dict(descriptors[0], offset=8), dict(descriptors[0], nbytes=31),
                dict(descriptors[0], dtype="object"), dict(descriptors[0], shape=[-2, -4])):
        error = link.error("model.run", payload, model=handle, tensors=[bad])
        assert error["code"] == "bad_request", bad
    assert link.error("model.run", payload, model="no-such-model",
                      tensors=descriptors)["code"] == "not_found"
    header, out = link.call("model.run", payload, model=handle, tensors=descriptors)
    np.testing.assert_allclose(unpack(header["tensors"], out)["y"], reference(x, BIAS), rtol=1e-5)


def test_loading_needs_a_session_and_a_model_the_runtime_reads(connect):
    link = connect(session=False)
    data = tiny_onnx((9.0, 9.0, 9.0))
    push(link, data)
    assert link.error("model.load", sha256=_sha(data))["code"] == "bad_request"  # no session
    link.ok("session.open")
    assert link.error("model.load", sha256="0" * 64)["code"] == "not_found"
    garbage = b"this is not an onnx model"
    push(link, garbage)
    assert link.error("model.load", sha256=_sha(garbage))["code"] == "runtime"
    assert link.ok("model.load", sha256=_sha(data))["model"]


def test_a_benchmark_reports_every_figure(loaded):
    link, handle, _ = loaded
    result = link.ok("model.bench", model=handle, warmup=2, runs=25, batch=3)
    assert result["runs"] == 25 and result["warmup"] == 2 and result["batch"] == 3
    assert 0 <= result["min_ms"] <= result["p50_ms"] <= result["p90_ms"] <= result["p99_ms"] \
        <= result["max_ms"]
    assert result["min_ms"] <= result["mean_ms"] <= result["max_ms"]
    assert result["init_ms"] >= 0 and isinstance(result["peak_rss_bytes"], int)
    descriptors, payload = pack([("x", np.zeros((7, 4), np.float32))])
    given = link.ok("model.bench", payload, model=handle, warmup=0, runs=3, tensors=descriptors)
    assert given["runs"] == 3
    assert link.error("model.bench", model=handle, runs=0)["code"] == "bad_request"
    assert link.error("model.bench", model="m999")["code"] == "not_found"


def test_pipelined_chunks_each_get_their_reply(connect):
    link = connect(session=False)
    data = os.urandom(6 * 256 * 1024)
    sha = _sha(data)
    link.ok("push.begin", sha256=sha, size=len(data))
    frames = b"".join(encode({"type": "push.chunk", "id": 1000 + i, "sha256": sha,
                              "offset": i * 256 * 1024}, data[i * 256 * 1024:(i + 1) * 256 * 1024])
                      for i in range(6))
    link.send_raw(frames)
    for i in range(6):
        header, _ = link.reply(1000 + i)
        assert header["type"] == "push.chunk.ok" and header["received"] == (i + 1) * 256 * 1024
    assert link.ok("push.end", sha256=sha)["size"] == len(data)

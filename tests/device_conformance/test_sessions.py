"""What the device says about itself, sessions (one per connection, gone with it), and eight
hosts working at once, each in its own sandbox (sections 6 and 9)."""

from __future__ import annotations

import hashlib
import threading
import time

import numpy as np

from .frames import pack, push, unpack
from .models import reference, tiny_onnx

SESSIONS = 8


def test_info_has_every_field(connect):
    link = connect(session=False)
    info = link.ok("info")
    for name in ("name", "device_id", "model", "os", "python", "agent_version"):
        assert isinstance(info[name], str) and info[name], name
    assert isinstance(info["cpu"]["cores"], int) and info["cpu"]["cores"] >= 1
    assert isinstance(info["cpu"]["arch"], str) and info["cpu"]["arch"]
    assert info["memory_bytes"] is None or info["memory_bytes"] > 0
    runtimes = {r["name"]: r["version"] for r in info["runtimes"]}
    assert "onnxruntime" in runtimes and set(runtimes) <= {"onnxruntime", "mnn"}
    assert all(isinstance(v, str) for v in runtimes.values())
    assert isinstance(info["sessions"], int) and info["sessions"] >= 0
    assert isinstance(info["max_sessions"], int) and info["max_sessions"] >= SESSIONS
    assert info["session_id"] is None


def test_one_session_per_connection_closed_with_the_connection(connect):
    watcher = connect(session=False)
    link = connect(session=False)
    before = watcher.ok("info")["sessions"]
    opened = link.ok("session.open", runtime="onnxruntime", threads=1)
    assert isinstance(opened["session_id"], str) and opened["session_id"]
    assert opened["runtime"] == "onnxruntime" and opened["threads"] == 1
    assert link.error("session.open")["code"] == "bad_request"
    info = link.ok("info")
    assert info["session_id"] == opened["session_id"] and info["sessions"] >= before + 1
    link.close()
    deadline = time.monotonic() + 10
    while watcher.ok("info")["sessions"] > before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert watcher.ok("info")["sessions"] == before


def test_session_options_are_checked(connect):
    link = connect(session=False)
    assert link.error("session.open", runtime="tensorflow")["code"] == "bad_request"
    assert link.error("session.open", threads=0)["code"] == "bad_request"
    assert link.error("session.open", threads="two")["code"] == "bad_request"
    assert link.ok("session.open", threads=2)["threads"] == 2


def test_eight_hosts_push_run_and_keep_their_files_at_once(connect):
    links = [connect() for _ in range(SESSIONS)]
    ids = [link.ok("info")["session_id"] for link in links]
    assert len(set(ids)) == SESSIONS
    barrier = threading.Barrier(SESSIONS)
    failures, seen_sessions = [], []

    def one_host(index: int) -> None:
        link = links[index]
        try:
            bias = np.array([index, -index, 0.5], np.float32)
            data = tiny_onnx(tuple(bias))
            barrier.wait(timeout=30)
            push(link, data)
            handle = link.ok("model.load", sha256=hashlib.sha256(data).hexdigest())["model"]
            link.ok("file.put", f"host {index}".encode(), path="mine.txt")
            x = np.random.default_rng(index).standard_normal((2, 4)).astype(np.float32)
            descriptors, payload = pack([("x", x)])
            for _ in range(10):
                header, out = link.call("model.run", payload, model=handle, tensors=descriptors)
                np.testing.assert_allclose(unpack(header["tensors"], out)["y"], reference(x, bias),
                                           rtol=1e-5, atol=1e-5)
            seen_sessions.append(link.ok("info")["sessions"])
            barrier.wait(timeout=30)  # everyone wrote before anyone reads
            assert link.call("file.get", path="mine.txt")[1] == f"host {index}".encode()
            neighbour = ids[(index + 1) % SESSIONS]
            assert link.error("file.get", path=f"../{neighbour}/mine.txt")["code"] == "sandbox"
        except Exception as exc:  # reported below with the host's number
            failures.append((index, repr(exc)))
            barrier.abort()

    threads = [threading.Thread(target=one_host, args=(i,)) for i in range(SESSIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == []
    assert min(seen_sessions) >= SESSIONS

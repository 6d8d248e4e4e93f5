"""Files in the session's sandbox, paths that try to leave it, and verification scripts
(sections 9 and 10)."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from .frames import push
from .models import tiny_onnx


def test_files_go_into_the_sandbox_and_come_back(connect):
    link = connect()
    data = os.urandom(2 * 1024 * 1024 + 5)
    assert link.ok("file.put", data, path="inputs/batch 1.bin", size=len(data)) == {
        "type": "file.put.ok", "id": link.next_id - 1, "path": "inputs/batch 1.bin",
        "size": len(data)}
    header, payload = link.call("file.get", path="inputs/batch 1.bin")
    assert payload == data and header["size"] == len(data)
    assert link.call("file.get", path="./inputs//batch 1.bin")[1] == data
    link.ok("file.put", b"replaced", path="inputs/batch 1.bin")
    assert link.call("file.get", path="inputs/batch 1.bin")[1] == b"replaced"
    link.ok("file.put", b"", path="empty")
    assert link.call("file.get", path="empty")[1] == b""
    assert link.error("file.get", path="missing")["code"] == "not_found"
    assert link.error("file.get", path="inputs")["code"] == "bad_request"  # a folder
    assert link.error("file.put", b"abc", path="x", size=4)["code"] == "bad_request"
    assert link.error("file.put", b"abc", path="")["code"] == "bad_request"


def test_a_put_below_a_file_is_refused_naming_that_file(connect):
    link = connect()
    link.ok("file.put", b"a file", path="inputs/notes.txt")
    for path in ("inputs/notes.txt/a.bin", "inputs/notes.txt/deeper/a.bin"):
        error = link.error("file.put", b"x", path=path)
        assert error["code"] == "bad_request", error
        assert "inputs/notes.txt" in error["message"], error
    assert link.call("file.get", path="inputs/notes.txt")[1] == b"a file"
    assert link.ok("file.put", b"yes", path="inputs/other.txt")["size"] == 3


@pytest.mark.parametrize("path", ["../escape.txt", "a/../../escape.txt", "/etc/passwd", "/tmp/x",
                                  "..", "a/b/../../../x", "a\x00b", "\\windows\\x"])
def test_paths_that_leave_the_sandbox_are_refused(connect, path):
    link = connect()
    assert link.error("file.put", b"nope", path=path)["code"] == "sandbox"
    assert link.error("file.get", path=path)["code"] == "sandbox"
    assert link.error("script.run", path=path)["code"] == "sandbox"
    assert link.ok("file.put", b"yes", path="still-works.txt")["size"] == 3


LINKS = """
import os
os.symlink("/", "root-link")
os.symlink("..", "up-link")
os.symlink("real.txt", "inner-link")
"""


def test_symbolic_links_out_of_the_sandbox_are_not_followed(connect):
    link = connect()
    link.ok("file.put", b"inside", path="real.txt")
    link.ok("file.put", LINKS.encode(), path="make_links.py")
    assert link.ok("script.run", path="make_links.py", timeout_s=30)["exit_code"] == 0
    for path in ("root-link/etc/hostname", "root-link", "up-link", "up-link/x"):
        assert link.error("file.get", path=path)["code"] == "sandbox", path
    for path in ("root-link/tmp/escaped.txt", "up-link/escaped.txt", "up-link/sub/escaped.txt"):
        assert link.error("file.put", b"out", path=path)["code"] == "sandbox", path
    assert link.call("file.get", path="inner-link")[1] == b"inside"  # a link that stays inside


def test_a_session_cannot_reach_another_sessions_files(connect):
    first, second = connect(), connect()
    first_id = first.ok("info")["session_id"]
    first.ok("file.put", b"first's", path="mine.txt")
    assert second.error("file.get", path="mine.txt")["code"] == "not_found"
    assert second.error("file.get", path=f"../{first_id}/mine.txt")["code"] == "sandbox"
    assert second.error("file.put", b"x", path=f"../{first_id}/mine.txt")["code"] == "sandbox"
    assert first.call("file.get", path="mine.txt")[1] == b"first's"


CHECK = """
import json, os
model = os.environ.get("WORKBENCH_MODEL")
print("some output first")
here = os.environ["WORKBENCH_SESSION_DIR"]
print(json.dumps({"cwd_is_sandbox": os.path.samefile(os.getcwd(), here),
                  "model_size": os.path.getsize(model) if model else None,
                  "inputs": open("inputs.json").read()}))
"""

WRITES_RESULT = """
import json, sys
json.dump({"from": "result.json"}, open("result.json", "w"))
print("not json")
sys.exit(3)
"""


def test_a_script_runs_in_the_sandbox_with_the_model_and_gives_its_result(connect):
    link = connect()
    data = tiny_onnx((1.0, 2.0, 3.0))
    push(link, data)
    handle = link.ok("model.load", sha256=hashlib.sha256(data).hexdigest())["model"]
    link.ok("file.put", CHECK.encode(), path="check.py")
    link.ok("file.put", b"[1, 2]", path="inputs.json")
    for model in (handle, hashlib.sha256(data).hexdigest()):
        reply = link.ok("script.run", path="check.py", model=model, timeout_s=30)
        assert reply["exit_code"] == 0 and reply["timed_out"] is False
        assert reply["result"] == {"cwd_is_sandbox": True, "model_size": len(data),
                                   "inputs": "[1, 2]"}
        assert "some output first" in reply["stdout"] and isinstance(reply["stderr"], str)
        assert isinstance(reply["seconds"], (int, float))
    link.ok("file.put", WRITES_RESULT.encode(), path="writes.py")
    reply = link.ok("script.run", path="writes.py", timeout_s=30)
    assert reply["exit_code"] == 3 and reply["result"] == {"from": "result.json"}
    assert link.error("script.run", path="missing.py")["code"] == "not_found"
    assert link.error("script.run", path="check.py", timeout_s=-1)["code"] == "bad_request"


def test_a_script_that_runs_too_long_is_stopped(connect):
    link = connect()
    link.ok("file.put", b"import time\nprint('started', flush=True)\ntime.sleep(60)\n",
            path="slow.py")
    reply = link.ok("script.run", path="slow.py", timeout_s=1)
    assert reply["timed_out"] is True and reply["exit_code"] is None and reply["result"] is None
    assert json.dumps(reply)  # every field is plain JSON

"""Verification scripts run on the device, in the session's folder, with the model's path."""

from __future__ import annotations

import json

import pytest

from tests.waiting import pid_alive
from workbench_device.protocol import Err, RemoteError

VERIFY = b'''
import json, os, sys
import numpy as np
import onnxruntime as ort

session = ort.InferenceSession(os.environ["WORKBENCH_MODEL"], providers=["CPUExecutionProvider"])
x = np.load("input.npy")
y = session.run(["y"], {"x": x})[0]
print("running in", os.getcwd() == os.environ["WORKBENCH_SESSION_DIR"], file=sys.stderr)
print("some progress output")
print(json.dumps({"top1": int(y.argmax()), "shape": list(y.shape)}))
'''


def test_a_script_verifies_the_model_on_the_device_and_returns_its_json(device, tiny_model):
    import io

    import numpy as np

    sha = device.push_model(tiny_model).sha256
    handle = device.load_model(sha)["model"]
    buffer = io.BytesIO()
    np.save(buffer, np.array([[1.0, 2.0, 3.0, 4.0]], np.float32))
    device.put_file("input.npy", buffer.getvalue())
    device.put_file("verify.py", VERIFY)
    for model in (handle, sha):
        reply = device.run_script("verify.py", model=model, timeout_s=60)
        assert reply["exit_code"] == 0, reply["stderr"]
        assert reply["result"] == {"top1": 2, "shape": [1, 3]}
        assert "some progress output" in reply["stdout"]
        assert "running in True" in reply["stderr"]
        assert reply["timed_out"] is False


def test_a_script_may_write_its_result_to_result_json(device):
    device.put_file("s.py", b'import json\njson.dump({"ok": [1, 2]}, open("result.json", "w"))\n')
    reply = device.run_script("s.py")
    assert reply["result"] == {"ok": [1, 2]}
    assert json.loads(device.get_file("result.json")) == {"ok": [1, 2]}


def test_a_failing_script_reports_its_exit_code_and_error(device):
    device.put_file("bad.py", b"import sys\nprint('about to fail')\nraise SystemExit('broken input')\n")
    reply = device.run_script("bad.py")
    assert reply["exit_code"] == 1 and "broken input" in reply["stderr"]
    assert reply["result"] is None
    device.put_file("crash.py", b"raise ValueError('nope')\n")
    reply = device.run_script("crash.py")
    assert reply["exit_code"] == 1 and "ValueError: nope" in reply["stderr"]


def test_a_script_that_runs_too_long_is_stopped(device):
    device.put_file("slow.py", b"import time\nprint('started', flush=True)\ntime.sleep(60)\n")
    reply = device.run_script("slow.py", timeout_s=0.5)
    assert reply["timed_out"] is True and reply["exit_code"] is None
    assert "started" in reply["stdout"]
    assert device.info()["sessions"] == 1  # the connection is still served


def test_a_script_with_huge_output_returns_its_end(device):
    device.put_file("loud.py", b"import sys\nsys.stdout.write('x' * 200000)\nprint()\nprint('{\"done\": true}')\n")
    reply = device.run_script("loud.py")
    assert reply["stdout_truncated"] is True and reply["result"] == {"done": True}
    assert len(reply["stdout"]) <= 16 * 1024


def test_script_requests_are_checked(device):
    with pytest.raises(RemoteError) as error:
        device.run_script("missing.py")
    assert error.value.code == Err.NOT_FOUND
    device.put_file("s.py", b"print(1)\n")
    with pytest.raises(RemoteError) as error:
        device.run_script("s.py", model="m42")
    assert error.value.code == Err.BAD_REQUEST
    with pytest.raises(RemoteError) as error:
        device.run_script("s.py", model="ab" * 32)
    assert error.value.code == Err.NOT_FOUND
    with pytest.raises(RemoteError) as error:
        device.run_script("s.py", timeout_s=-1)
    assert error.value.code == Err.BAD_REQUEST


def test_stopping_the_agent_stops_the_scripts_it_runs(start_agent, tmp_path):
    import threading
    import time

    from .conftest import connect, pair

    agent = start_agent()
    client = connect(agent, pair(agent))
    pid_file = tmp_path / "pid"
    client.put_file("forever.py", f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
                                  "while True:\n    time.sleep(0.05)\n".encode())
    threading.Thread(target=lambda: _ignore_errors(client.run_script, "forever.py", timeout_s=600),
                     daemon=True).start()
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.02)
    pid = int(pid_file.read_text())
    agent.stop()
    deadline = time.monotonic() + 30
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not pid_alive(pid)


def _ignore_errors(call, *args, **kwargs):
    try:
        call(*args, **kwargs)
    except Exception:
        pass

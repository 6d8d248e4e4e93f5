"""``workbench device script DEVICE FILE`` as a user types it, against a real agent process: the
script's output shows while it runs, the command ends with the script's exit status, Ctrl+C
stops the script on the device, and errors are one line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.waiting import pid_alive

from .conftest import cli_env, run_cli


@pytest.fixture
def phone(start_agent):
    """An agent the CLI paired with."""
    agent = start_agent(name="Script Phone")
    done = run_cli("pair", agent.address, "--code", agent.code)
    assert done.returncode == 0, done.stderr
    return agent


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "project"
    (root / "checks").mkdir(parents=True)
    (root / "workbench.toml").write_text('[project]\nname = "scripts"\n')
    return root


def _start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "workbench", "device", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=cli_env(), stdin=subprocess.DEVNULL)


def test_the_output_shows_while_the_script_runs_and_its_exit_status_is_the_commands(phone, project,
                                                                                   tmp_path):
    go = tmp_path / "go"
    script = project / "checks" / "wait.py"
    script.write_text(f'''
import os, sys, time
print("ready", flush=True)
deadline = time.time() + 60
while not os.path.exists({str(go)!r}):
    if time.time() > deadline:
        sys.exit("nobody saw the first line")
    time.sleep(0.02)
print("in", os.path.relpath(__file__, os.environ["WORKBENCH_SESSION_DIR"]))
print("bad news", file=sys.stderr)
sys.exit(3)
''')
    command = _start("script", phone.address, str(script))
    first = command.stdout.readline()
    assert first == "ready\n"  # shown while the script still runs: it waits for the next step
    go.touch()
    out, err = command.communicate(timeout=120)
    assert command.returncode == 3, err
    # It ran from the project's layout on the device; stderr has its own and the summary.
    assert out == "in checks/wait.py\n"
    assert "bad news" in err and "wait.py on Script Phone exited with 3 in" in err
    assert "Traceback" not in err


def test_json_gives_the_result_and_keeps_the_output_off_stdout(phone, project):
    script = project / "checks" / "ok.py"
    script.write_text('import json\nprint("working")\nprint(json.dumps({"accuracy": 0.97}))\n')
    done = run_cli("script", "Script Phone", str(script), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["exit_code"] == 0 and result["result"] == {"accuracy": 0.97}
    assert result["path"] == "checks/ok.py" and result["device"] == "Script Phone"
    assert result["timed_out"] is False and result["seconds"] > 0
    assert "working" in done.stderr


def test_a_model_is_pushed_and_its_file_given_to_the_script(phone, project, digits_onnx):
    script = project / "checks" / "model.py"
    script.write_text('import hashlib, os\n'
                      'print(hashlib.sha256(open(os.environ["WORKBENCH_MODEL"], "rb").read())'
                      '.hexdigest())\n')
    done = run_cli("script", phone.address, str(script), "--model", str(digits_onnx), "--json")
    assert done.returncode == 0, done.stderr
    import hashlib

    assert json.loads(done.stdout)["stdout"].strip() == hashlib.sha256(
        digits_onnx.read_bytes()).hexdigest()


def test_a_script_past_its_time_is_stopped_with_status_124(phone, tmp_path):
    script = tmp_path / "slow.py"  # outside any project: it goes under its own name
    script.write_text("import time\nprint('started', flush=True)\ntime.sleep(600)\n")
    done = run_cli("script", phone.address, str(script), "--timeout", "1")
    assert done.returncode == 124, done.stderr
    assert done.stdout == "started\n"
    assert "slow.py on Script Phone was stopped after" in done.stderr


def test_ctrl_c_stops_the_script_on_the_device(phone, tmp_path):
    pid_file = tmp_path / "pid"
    script = tmp_path / "sleeper.py"
    script.write_text(f'''
import os, time
open({str(pid_file)!r}, "w").write(str(os.getpid()))
print("sleeping", flush=True)
time.sleep(600)
''')
    command = _start("script", phone.address, str(script))
    assert command.stdout.readline() == "sleeping\n"
    pid = int(pid_file.read_text())
    command.send_signal(signal.SIGINT)
    _out, err = command.communicate(timeout=60)
    assert command.returncode == 130, err
    assert err.strip().splitlines()[-1] == "workbench: cancelled"
    deadline = time.monotonic() + 30
    while pid_alive(pid):
        assert time.monotonic() < deadline, "the script went on running on the device"
        time.sleep(0.05)


def test_errors_are_one_line(phone, tmp_path):
    missing = run_cli("script", phone.address, str(tmp_path / "missing.py"))
    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines() == [
        f"workbench: {tmp_path / 'missing.py'} does not exist: give the script to run"]
    script = tmp_path / "s.py"
    script.write_text("print(1)\n")
    nobody = run_cli("script", "127.0.0.1:1", str(script))
    assert nobody.returncode == 1 and len(nobody.stderr.strip().splitlines()) == 1
    assert nobody.stderr.startswith("workbench: nothing answers at 127.0.0.1:1")

"""A script's output reaches the host while the script runs (script.output events), bounded in
size and rate, and a script whose host hangs up is stopped."""

from __future__ import annotations

import os
import time

from workbench_device.protocol import Msg
from workbench_device.scripts import OUTPUT_BACKLOG_BYTES, OUTPUT_EVENT_BYTES

from .conftest import connect


def _waits_for(go_file) -> bytes:
    """A script that prints, then waits (up to 30 s) for ``go_file`` before it prints again:
    it finishes early only if its first line reached the host while it ran."""
    return f'''
import os, sys, time
print("ready")
print("to stderr", file=sys.stderr)
deadline = time.time() + 30
while not os.path.exists({str(go_file)!r}):
    if time.time() > deadline:
        print("nobody answered", file=sys.stderr)
        raise SystemExit(3)
    time.sleep(0.02)
print("done")
'''.encode()


def test_output_reaches_the_host_while_the_script_runs(device, tmp_path):
    go_file = tmp_path / "go"
    device.put_file("wait.py", _waits_for(go_file))
    seen = []

    def on_output(stream: str, text: str) -> None:
        seen.append((stream, text))
        if "ready" in text:
            go_file.touch()  # only now may the script finish

    reply = device.run_script("wait.py", on_output=on_output, timeout_s=60)
    assert reply["exit_code"] == 0, reply["stderr"]
    stdout = "".join(text for stream, text in seen if stream == "stdout")
    stderr = "".join(text for stream, text in seen if stream == "stderr")
    assert stdout == "ready\ndone\n" and stderr == "to stderr\n"
    # The reply still carries the end of each stream, as before.
    assert reply["stdout"] == stdout and reply["stderr"] == stderr


def test_events_name_their_request_and_carry_no_id(device):
    device.put_file("hi.py", b"print('hello')\n")
    events = []
    device.on_event[Msg.SCRIPT_OUTPUT] = events.append
    request_id = device.send(Msg.SCRIPT_RUN, path="hi.py", stream=True)
    reply = device.receive(request_id)
    assert reply.header["exit_code"] == 0
    assert events and all("id" not in e and e["request"] == request_id for e in events)
    assert {e["stream"] for e in events} == {"stdout"}
    assert "".join(e["text"] for e in events) == "hello\n"


def test_without_stream_nothing_comes_before_the_reply(device):
    device.put_file("hi.py", b"import sys\nprint('hello'); print('oops', file=sys.stderr)\n")
    events = []
    device.on_event[Msg.SCRIPT_OUTPUT] = events.append
    reply = device.run_script("hi.py")
    assert reply["stdout"] == "hello\n" and events == [] and device.skipped_events == 0


def test_a_flood_of_output_is_cut_to_bounded_events_that_say_what_they_skipped(device):
    total = 3 * 1024 * 1024
    device.put_file("flood.py", f"import sys\nsys.stdout.write('x' * {total})\n".encode())
    events = []
    device.on_event[Msg.SCRIPT_OUTPUT] = events.append
    request_id = device.send(Msg.SCRIPT_RUN, path="flood.py", stream=True, timeout_s=60)
    assert device.receive(request_id).header["exit_code"] == 0
    sizes = [len(e["text"].encode()) for e in events]
    skipped = sum(e.get("skipped", 0) for e in events)
    assert max(sizes) <= OUTPUT_EVENT_BYTES
    # Every byte either came or was counted as skipped, and most of a fast flood is skipped:
    # the host never gets more than the backlog behind.
    assert sum(sizes) + skipped == total
    assert skipped >= total - 8 * OUTPUT_BACKLOG_BYTES


def test_characters_cut_between_events_arrive_whole(device):
    text = "é€😀" * 6000  # 2, 3 and 4 bytes each: event boundaries fall inside them
    device.put_file("utf8.py", f"print({text!r})\n".encode())
    got = []
    reply = device.run_script("utf8.py", on_output=lambda stream, chunk: got.append(chunk))
    assert reply["exit_code"] == 0
    assert "".join(got) == text + "\n"


def test_a_script_whose_host_hangs_up_is_stopped(agent, credential, tmp_path):
    client = connect(agent, credential)
    pid_file = tmp_path / "pid"
    client.put_file("sleeper.py", f'''
import os, time
open({str(pid_file)!r}, "w").write(str(os.getpid()))
print("sleeping", flush=True)
time.sleep(600)
'''.encode())
    client.send(Msg.SCRIPT_RUN, path="sleeper.py", timeout_s=600, stream=True)
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()):
        assert time.monotonic() < deadline, "the script did not start"
        time.sleep(0.02)
    pid = int(pid_file.read_text())
    client.fs.close()  # the host vanishes without a word
    assert _gone(pid), "the script of a host that hung up still runs"
    again = connect(agent, credential)  # the agent serves on
    assert again.info()["name"] == agent.name
    again.close()


def _gone(pid: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False

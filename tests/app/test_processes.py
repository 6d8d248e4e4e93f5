"""The hub and project windows as real, separate OS processes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.waiting import wait_until

from workbench.ipc.client import HubClient
from workbench.ipc.endpoint import socket_path
from workbench.ipc.framing import FrameDecoder, encode_frame
from workbench.project import create_from_template

from .conftest import is_alive, processes_with_env, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture
def two_projects(tmp_path):
    first = create_from_template("digits", tmp_path / "digits").root
    second = create_from_template("empty", tmp_path / "notes").root
    return first, second


def test_two_projects_open_in_two_processes_and_opening_one_again_focuses_it(workbench, two_projects):
    first, second = two_projects
    workbench.run("open", str(first))
    workbench.run("open", str(second))
    a = workbench.wait_for_project(first)
    b = workbench.wait_for_project(second)
    assert a["pid"] != b["pid"]
    assert a["kind"] == b["kind"] == "project"

    again = workbench.run("open", str(first), "--json")
    assert '"already_open": true' in again.stdout
    projects = [w for w in workbench.windows() if w["kind"] == "project"]
    assert sorted(w["pid"] for w in projects) == sorted([a["pid"], b["pid"]])


def test_a_window_process_loads_no_heavy_module_on_start(workbench, two_projects):
    first, _ = two_projects
    workbench.run("open", str(first))
    entry = workbench.wait_for_project(first)
    with workbench.hub() as hub:
        assert hub.hub_info["heavy_modules_loaded"] == []
    description = workbench.command(entry["window_id"], "editor.describe")
    assert description["path"].endswith("train.py")  # the project's main file is showing
    described = workbench.call("hub.describe_window", {"window_id": entry["window_id"]})
    assert described["pid"] == entry["pid"]
    # What the start-up loaded, up to the capabilities installed; a language server they start
    # afterwards loads its client library off that path.
    wait_until(lambda: workbench.call("hub.describe_window", {"window_id": entry["window_id"]})
               ["heavy_modules_at_start"] is not None, timeout=30)
    described = workbench.call("hub.describe_window", {"window_id": entry["window_id"]})
    assert described["heavy_modules_at_start"] == []


def test_killing_a_window_leaves_hub_and_others_working_and_reopen_restores_unsaved_edits(workbench, two_projects):
    first, second = two_projects
    workbench.run("open", str(first))
    workbench.run("open", str(second))
    a = workbench.wait_for_project(first)
    b = workbench.wait_for_project(second)

    workbench.command(a["window_id"], "editor.insertText", text="# tuned by hand\n")
    from workbench.editor import HotExitStore

    # A whole copy holding the edit, not merely a file in the folder (a write under way is a
    # temporary file there too).
    wait_until(lambda: any("# tuned by hand" in entry.text for entry in HotExitStore(first).entries()),
               30, what="the hot-exit copy")

    os.kill(a["pid"], signal.SIGKILL)
    crashed = workbench.wait_for_project(first, state="crashed")
    assert crashed["pid"] == a["pid"]
    assert is_alive(workbench.hub_pid())
    assert workbench.command(b["window_id"], "editor.describe")["modified"] is False

    reopened = workbench.call("hub.reopen_window", {"window_id": a["window_id"]})
    assert reopened["pid"] != a["pid"]
    entry = workbench.wait_for_project(first)
    editor = workbench.command(entry["window_id"], "editor.describe")
    assert editor["modified"] is True
    assert "# tuned by hand" in editor["text"]
    assert "# tuned by hand" not in (first / "train.py").read_text()  # nothing written behind the user's back


def test_killing_the_hub_leaves_windows_working_and_they_register_with_the_next_hub(workbench, two_projects):
    first, _ = two_projects
    workbench.run("open", str(first))
    entry = workbench.wait_for_project(first)
    old_hub = workbench.hub_pid()

    os.kill(old_hub, signal.SIGKILL)
    wait_until(lambda: not is_alive(old_hub), 30, what="the hub to die")
    assert is_alive(entry["pid"])

    workbench.run("windows", check=False)  # no hub: a clear error, not a hang
    workbench.run()  # the next `workbench` starts a hub
    again = workbench.wait_for_project(first)
    assert again["pid"] == entry["pid"] and again["window_id"] == entry["window_id"]
    assert workbench.hub_pid() != old_hub
    workbench.command(entry["window_id"], "editor.insertText", text="x = 1\n")
    assert workbench.command(entry["window_id"], "editor.describe")["modified"] is True

    # The spare left by the old hub and the new hub's own spare do not both stay.
    def spare_processes():
        return [pid for pid in processes_with_env("WORKBENCH_RUNTIME_DIR", os.environ["WORKBENCH_RUNTIME_DIR"])
                if is_alive(pid) and b"window_process" in Path(f"/proc/{pid}/cmdline").read_bytes()
                and b"--project" not in Path(f"/proc/{pid}/cmdline").read_bytes()]

    wait_until(lambda: [w for w in workbench.windows(include_spares=True) if w["kind"] == "spare"
                        and w["state"] == "ready"], 30, what="a ready spare")
    wait_until(lambda: len(spare_processes()) == 1, 10, what="one spare process")
    assert len([w for w in workbench.windows(include_spares=True) if w["kind"] == "spare"]) == 1


def test_two_workbench_calls_at_the_same_moment_end_with_exactly_one_hub(workbench):
    env = {**os.environ, "WORKBENCH_NO_SPARE": "1"}
    calls = [subprocess.Popen([sys.executable, "-m", "workbench"], env=env, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    for call in calls:
        assert call.wait(timeout=60) == 0, call.stderr.read()
    hubs = [pid for pid in processes_with_env("WORKBENCH_RUNTIME_DIR", os.environ["WORKBENCH_RUNTIME_DIR"])
            if b"workbench.app.hub_process" in Path(f"/proc/{pid}/cmdline").read_bytes() and is_alive(pid)]
    assert hubs == [workbench.hub_pid()]


def test_a_socket_left_by_a_dead_hub_is_replaced(workbench):
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(socket_path()))
    stale.close()  # the file stays, nobody listens: what a killed hub leaves
    assert socket_path().exists()
    result = workbench.run("windows", check=False)
    assert result.returncode == 1 and "no Workbench hub is running" in result.stderr
    workbench.run()
    assert workbench.call("hub.ping") == {}


def test_a_foreign_program_on_the_socket_gets_a_clear_message_and_the_next_hub_replaces_it(workbench):
    foreign = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    foreign.bind(str(socket_path()))
    foreign.listen(1)

    def answer_nonsense():
        connection, _ = foreign.accept()
        connection.recv(1024)
        connection.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
        connection.close()

    threading.Thread(target=answer_nonsense, daemon=True).start()
    result = workbench.run("windows", check=False)
    assert result.returncode == 1
    assert "not a Workbench hub" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1

    # No hub owns the socket, so starting Workbench takes it back, and says so.
    threading.Thread(target=answer_nonsense, daemon=True).start()
    started = workbench.run()
    foreign.close()
    assert "replacing a socket" in started.stderr
    assert workbench.call("hub.ping") == {}


def test_a_peer_that_sends_garbage_is_dropped_and_the_hub_keeps_serving(workbench):
    workbench.run()
    raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    raw.connect(str(socket_path()))
    raw.sendall(b"\x00\x00\x00\x05notjs")
    raw.settimeout(30)
    answer = FrameDecoder().feed(raw.recv(65536))
    assert answer[0]["error"]["code"] == -32700
    assert raw.recv(65536) == b""  # dropped
    raw.close()

    huge = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    huge.connect(str(socket_path()))
    huge.sendall(b"\xff\xff\xff\xff")
    huge.settimeout(30)
    assert FrameDecoder().feed(huge.recv(65536))[0]["error"]["code"] == -32700
    huge.close()

    assert workbench.call("hub.ping") == {}
    with workbench.hub() as hub:
        with pytest.raises(Exception, match="Unknown method"):
            hub.call("hub.no_such_thing")


def test_a_broadcast_reaches_every_other_window_but_not_the_sender(workbench):
    workbench.run()
    sender, receiver = HubClient.connect(timeout=30.0), HubClient.connect(timeout=30.0)
    sender.call("window.register", {"window_id": "tool-a", "pid": os.getpid(), "kind": "tool"})
    receiver.call("window.register", {"window_id": "tool-b", "pid": os.getpid(), "kind": "tool"})
    sender.notify("broadcast", {"event": "model.produced", "data": {"path": "/tmp/m.onnx"}})
    # The hub reads each socket in order, not the two in the order they were written: the
    # sender's ping answered says the broadcast went out, before the receiver's ping's answer.
    sender.call("hub.ping")
    receiver.call("hub.ping")

    def produced(client):
        return [n for n in client.notifications
                if n.get("method") == "event" and n["params"]["event"] == "model.produced"]

    assert produced(receiver)[0]["params"] == {"event": "model.produced", "data": {"path": "/tmp/m.onnx"},
                                               "sender": "tool-a"}
    assert produced(sender) == []
    sender.close()
    receiver.close()


def test_open_without_a_hub_starts_one_and_the_window(workbench, two_projects):
    first, _ = two_projects
    result = workbench.run("open", str(first / "model.py"), "--line", "3")
    assert "Opened" in result.stdout
    entry = workbench.wait_for_project(first)
    editor = workbench.command(entry["window_id"], "editor.describe")
    assert editor["path"] == str(first / "model.py") and editor["line"] == 3


def test_closing_a_window_is_not_a_crash_and_its_process_ends(workbench, two_projects):
    first, second = two_projects
    workbench.run("open", str(first))
    workbench.run("open", str(second))
    a = workbench.wait_for_project(first)
    workbench.wait_for_project(second)
    workbench.command(a["window_id"], "file.closeWindow")
    wait_until(lambda: not is_alive(a["pid"]), 10, what="the closed window's process to end")
    wait_until(lambda: [w["project"] for w in workbench.windows()] == [str(second.resolve())], 10,
               what="the registry to forget the closed window")


@pytest.mark.parametrize("route", ["reopen", "workbench open", "window started on its own"])
def test_a_project_reopened_after_a_crash_leaves_no_crash_notice_or_crashed_entry(workbench, two_projects, route):
    from workbench.app import launcher

    first, _ = two_projects
    workbench.run("open", str(first))
    crashed = workbench.wait_for_project(first)
    os.kill(crashed["pid"], signal.SIGKILL)
    workbench.wait_for_project(first, state="crashed")
    assert "digits closed unexpectedly" in workbench.call("hub.describe_welcome")["notice"]

    if route == "reopen":
        workbench.call("hub.reopen_window", {"window_id": crashed["window_id"]})
    elif route == "workbench open":
        workbench.run("open", str(first))
    else:
        # As `workbench open` starts one when it cannot reach the hub: it registers by itself.
        launcher.spawn_window(launcher.new_window_id(), first)
    reopened = workbench.wait_for_project(first)
    assert reopened["pid"] != crashed["pid"]

    wait_until(lambda: workbench.call("hub.describe_welcome")["notice"] == "", 10, what="the crash notice to go")
    assert [(w["pid"], w["state"]) for w in workbench.windows() if w["project"] == str(first.resolve())] == [
        (reopened["pid"], "ready")]
    assert all("crashed" not in line for line in workbench.call("hub.describe_welcome")["windows"])

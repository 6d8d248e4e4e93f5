"""Quitting Workbench as a whole, and a hub that is stopped: real hub, window and tool window
processes."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from workbench.ipc.client import HubClient
from workbench.ipc.endpoint import socket_path
from workbench.project import create_from_template

from .conftest import is_alive, processes_with_env, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture
def two_projects(tmp_path):
    first = create_from_template("digits", tmp_path / "digits").root
    second = create_from_template("empty", tmp_path / "notes").root
    return first, second


def ready_spare(workbench) -> dict:
    return wait_until(lambda: next((w for w in workbench.windows(include_spares=True)
                                    if w["kind"] == "spare" and w["state"] == "ready"), None),
                      30, 0.1, "a ready spare window")


def window_processes() -> list[int]:
    return [pid for pid in processes_with_env("WORKBENCH_RUNTIME_DIR", os.environ["WORKBENCH_RUNTIME_DIR"])
            if is_alive(pid) and b"window_process" in Path(f"/proc/{pid}/cmdline").read_bytes()]


def test_quit_workbench_closes_every_window_keeps_unsaved_edits_and_ends_the_hub(workbench, two_projects):
    first, second = two_projects
    workbench.run("open", str(first))
    workbench.run("open", str(second))
    a = workbench.wait_for_project(first)
    b = workbench.wait_for_project(second)
    spare = ready_spare(workbench)
    hub = workbench.hub_pid()
    workbench.command(b["window_id"], "editor.insertText", text="# for next time\n")
    hot_exit = second / ".workbench" / "hot-exit"
    wait_until(lambda: hot_exit.is_dir() and any(hot_exit.iterdir()), 30, what="the hot-exit copy")

    workbench.command(a["window_id"], "workbench.quit")  # File ▸ Quit Workbench in one window

    for pid, what in ((a["pid"], "the first window"), (b["pid"], "the second window"),
                      (spare["pid"], "the spare window"), (hub, "the hub")):
        wait_until(lambda pid=pid: not is_alive(pid), 20, 0.1, f"{what} to end")
    assert not socket_path().exists()  # the hub quit cleanly
    assert window_processes() == []

    # The unsaved edit was kept for the next window, not written behind the user's back.
    workbench.run("open", str(second))
    editor = workbench.command(workbench.wait_for_project(second)["window_id"], "editor.describe")
    assert editor["modified"] and editor["text"].startswith("# for next time\n")
    assert "# for next time" not in (second / "main.py").read_text()


def test_a_window_that_stays_open_stops_the_quit_and_the_hub_and_the_windows_not_asked_stay(workbench,
                                                                                           two_projects):
    first, _ = two_projects
    workbench.run()
    # A window whose user answers Cancel; it registered first, so it is asked first.
    cancelling = HubClient.connect(timeout=30.0)  # the hub may be slow to answer on a loaded machine
    cancelling.call("window.register", {"window_id": "cancelling", "pid": os.getpid(), "kind": "project",
                                         "project": "/elsewhere/unsaved"})
    workbench.run("open", str(first))
    a = workbench.wait_for_project(first)
    hub = workbench.hub_pid()

    outcome: dict = {}
    asking = threading.Thread(target=lambda: outcome.update(workbench.call("hub.quit_all", timeout=60)))
    asking.start()

    def quit_request():
        cancelling.call("hub.ping")  # reads what the hub sent meanwhile
        return next((n for n in cancelling.notifications if n.get("method") == "window.quit"), None)

    request = wait_until(quit_request, 20, 0.1, "the hub to ask the window to close")
    assert request["params"] == {}  # as its user would close it, not forced
    cancelling.send({"jsonrpc": "2.0", "id": request["id"], "result": {"closed": False}})
    asking.join(30)

    assert outcome == {"quit": False, "kept_open": "cancelling"}
    assert is_alive(hub) and workbench.call("hub.ping") == {}
    assert is_alive(a["pid"])  # not asked: still open
    assert {w["window_id"] for w in workbench.windows()} == {"cancelling", a["window_id"]}
    cancelling.close()


def test_sigterm_ends_the_hub_cleanly_with_its_spare_and_project_windows_go_on(workbench, two_projects):
    first, _ = two_projects
    workbench.run("open", str(first))
    entry = workbench.wait_for_project(first)
    spare = ready_spare(workbench)
    hub = workbench.hub_pid()

    os.kill(hub, signal.SIGTERM)
    wait_until(lambda: not is_alive(hub), 30, 0.05, "the hub to end")
    assert not socket_path().exists()  # it quit, rather than being cut short
    wait_until(lambda: not is_alive(spare["pid"]), 30, 0.05, "the spare to end with its hub")
    assert is_alive(entry["pid"])

    workbench.run()
    again = workbench.wait_for_project(first)
    assert (again["pid"], again["window_id"]) == (entry["pid"], entry["window_id"])


def test_a_spare_left_without_a_hub_ends_by_itself_and_project_windows_go_on(workbench, two_projects):
    first, _ = two_projects
    workbench.run("open", str(first))
    entry = workbench.wait_for_project(first)
    spare = ready_spare(workbench)
    hub = workbench.hub_pid()

    os.kill(hub, signal.SIGKILL)  # no chance to tell anyone
    wait_until(lambda: not is_alive(spare["pid"]), 30, 0.1, "the spare to end by itself")
    assert window_processes() == [entry["pid"]]
    workbench.run()  # the project window registers with the next hub
    assert workbench.wait_for_project(first)["pid"] == entry["pid"]

"""The hub starts a project's pipeline trigger watcher when a window of the project opens and
its workbench.toml declares [pipeline.triggers]; not for a project that says
``start_with_workbench = false`` or declares no trigger; never a second one; and the watcher
outlives the window that was open when it started."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.pipeline.watcher import stop_watcher, watcher_status

from .conftest import is_alive, wait_until

pytestmark = pytest.mark.slow

STEPS = '[project]\nname = "{name}"\n\n[data]\ntrain = "data/train"\n\n[[pipeline.steps]]\ntool = "dataset"\n'
# A period no test waits for: the watcher runs, and starts nothing while the test looks at it.
TRIGGERS = '\n[pipeline.triggers]\nevery = "6h"\n'


def _project(root: Path, extra: str) -> Path:
    (root / "data" / "train").mkdir(parents=True)
    (root / "data" / "train" / "a.txt").write_text("a\n")
    (root / "workbench.toml").write_text(STEPS.format(name=root.name) + extra)
    return root


@pytest.fixture
def projects(tmp_path):
    made = {"watched": _project(tmp_path / "watched", TRIGGERS),
            "opted_out": _project(tmp_path / "opted_out", TRIGGERS + "start_with_workbench = false\n"),
            "plain": _project(tmp_path / "plain", "")}
    yield made
    for root in made.values():
        stop_watcher(root)


def test_opening_a_project_with_triggers_starts_one_watcher_that_outlives_its_window(workbench, projects):
    watched, opted_out, plain = projects["watched"], projects["opted_out"], projects["plain"]
    workbench.run("open", str(opted_out))
    workbench.run("open", str(plain))
    workbench.run("open", str(watched))
    window = workbench.wait_for_project(watched)
    status = wait_until(lambda: watcher_status(watched)["running"] and watcher_status(watched), 60, 0.2,
                        "the hub to start the watched project's trigger watcher")
    pid = status["pid"]
    assert status["started_by"] == "Workbench, on opening the project"
    assert status["triggers"] == ["every 6h"]
    assert pid not in {window["pid"], workbench.hub_pid()}
    # Asked for before the watched one, with the same delay: had it been started, it would run by now.
    workbench.wait_for_project(opted_out)
    workbench.wait_for_project(plain)
    assert not watcher_status(opted_out)["running"] and not watcher_status(plain)["running"]
    assert not (opted_out / ".workbench" / "pipeline" / "watcher-on-open.log").exists()

    # Opening it again focuses the window: the same watcher goes on, alone.
    assert '"already_open": true' in workbench.run("open", str(watched), "--json").stdout
    # A start on opening while one runs (another hub, a window opened twice at once) ends at once.
    again = subprocess.run([sys.executable, "-m", "workbench.pipeline.watcher", str(watched), "--on-open"],
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and f"a trigger watcher already runs (pid {pid}); it goes on" in again.stdout
    assert watcher_status(watched)["pid"] == pid and watcher_status(watched)["running"]

    # The watcher is not the window's: closing the window leaves it running.
    workbench.command(window["window_id"], "file.closeWindow")
    wait_until(lambda: not is_alive(window["pid"]), 30, 0.1, "the window to close")
    assert is_alive(pid) and watcher_status(watched)["running"] and watcher_status(watched)["pid"] == pid

    # Opened again: the hub asks again, and the watcher's lock keeps the one that runs.
    workbench.run("open", str(watched))
    workbench.wait_for_project(watched)
    on_open = watched / ".workbench" / "pipeline" / "watcher-on-open.log"
    wait_until(lambda: f"a trigger watcher already runs (pid {pid}); it goes on" in on_open.read_text(),
               60, 0.2, "the second start on opening to find the watcher running")
    assert watcher_status(watched)["pid"] == pid and watcher_status(watched)["running"]


def test_a_project_that_opted_out_is_left_alone_by_the_start_on_opening(projects):
    opted_out = projects["opted_out"]
    result = subprocess.run([sys.executable, "-m", "workbench.pipeline.watcher", str(opted_out), "--on-open"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert "not started on opening the project: [pipeline.triggers] says start_with_workbench = false" in result.stdout
    assert not watcher_status(opted_out)["running"]
    # `pipeline watch` is still the user's own way to start it.
    started = subprocess.run([sys.executable, "-m", "workbench", "pipeline", "watch", str(opted_out), "--detach",
                              "--json"], capture_output=True, text=True, timeout=60)
    assert started.returncode == 0, started.stderr
    assert json.loads(started.stdout)["started"] is True and watcher_status(opted_out)["running"]

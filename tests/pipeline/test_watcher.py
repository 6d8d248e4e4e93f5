"""The trigger watcher as real processes on projects whose one step cuts a dataset version: a
periodic trigger starts iterations, a data-growth trigger fires only once files are added, a
second watcher is refused, --status and --stop, and a watcher killed with SIGKILL together with
its iteration's process resumes that iteration when it is started again. Broken trigger
declarations name their line and key; the trigger clock is driven directly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.pipeline import PipelineError, PipelineService
from workbench.pipeline.triggers import EVERY, SCHEDULE, TriggerClock, next_daily, parse_triggers
from workbench.platform.locks import is_locked

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
FILES_PROJECT = """[project]
name = "watched"

[data]
train = "data/train"

[[pipeline.steps]]
tool = "dataset"

[pipeline.triggers]
"""


def _files_project(root: Path, triggers: str, samples: int = 4) -> Path:
    for index in range(samples):
        _add_sample(root, index)
    (root / "workbench.toml").write_text(FILES_PROJECT + triggers)
    return root


def _add_sample(root: Path, index: int) -> None:
    sample = root / "data" / "train" / f"{index:02d}.txt"
    sample.parent.mkdir(parents=True, exist_ok=True)
    sample.write_text(f"sample {index}\n")


def _watch(project: Path, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", "pipeline", "watch", str(project), *args],
                          capture_output=True, text=True, env=ENV, timeout=timeout)


def _wait_for(condition, timeout: float = 20.0, what: str = ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"waited {timeout:.0f} s for {what}")


def _iteration_state(project: Path, version: str) -> str | None:
    path = project / "registry" / "pipeline" / f"iteration_{version}.json"
    try:
        return json.loads(path.read_text())["state"]
    except (OSError, ValueError):
        return None


@pytest.fixture
def stop_watchers():
    started: list[Path] = []
    yield started
    for project in started:
        _watch(project, "--stop")


# --- declaration and clock ---------------------------------------------------------------

@pytest.mark.parametrize("triggers, line, words", [
    ('every = "6 hours"\n', 11, ["'every'", "\"45s\""]),
    ('schedule = "25:00"\n', 11, ["'schedule'", "HH:MM"]),
    ('every = "1h"\non_data_grwth = { samples = 3 }\n', 12, ["'on_data_grwth'", "did you mean on_data_growth"]),
    ('check_every = "1m"\non_data_growth = { samples = -1 }\n', 12, ["'samples'", "more than 0"]),
    ('on_data_growth = { precent = 5 }\n', 11, ["'precent'", "did you mean percent"]),
    ('every = "1h"\nstart_with_workbench = "no"\n', 12, ["'start_with_workbench'", "true or false"]),
    ('every = "1h"\nretrain_unchanged = 1\n', 12, ["'retrain_unchanged'", "true or false"]),
])
def test_a_broken_trigger_is_one_error_naming_its_line_and_key(triggers, line, words):
    with pytest.raises(PipelineError) as raised:
        parse_triggers(FILES_PROJECT + triggers)
    message = str(raised.value)
    assert message.startswith(f"workbench.toml line {line}: key "), message
    assert all(word in message for word in words), message


def test_start_with_workbench_is_on_unless_the_project_says_false():
    from workbench.pipeline.triggers import watcher_wanted_on_open

    assert parse_triggers(FILES_PROJECT + 'every = "1h"\n').start_with_workbench is True
    assert parse_triggers(FILES_PROJECT + 'every = "1h"\nstart_with_workbench = false\n').start_with_workbench is False
    assert watcher_wanted_on_open({"pipeline": {"triggers": {"every": "1h"}}})
    assert not watcher_wanted_on_open({"pipeline": {"triggers": {"every": "1h", "start_with_workbench": False}}})
    assert not watcher_wanted_on_open({"pipeline": {"triggers": {"start_with_workbench": True}}})  # no trigger
    assert not watcher_wanted_on_open({"pipeline": {"steps": []}})


def test_the_clock_counts_a_period_from_its_last_firing_and_a_schedule_from_its_time_of_day():
    triggers = parse_triggers(FILES_PROJECT + 'every = "30m"\nschedule = "02:00"\non_data_growth = { percent = 5 }\n')
    clock = TriggerClock(triggers, now=1000.0, last_fired={EVERY: 400.0})
    assert clock.due[EVERY] == 400.0 + 1800  # a restart does not push the period back
    assert clock.due_now(1000.0) == ["data growth"]  # the data is looked at once at start
    clock.passed(EVERY, 2200.0)
    assert clock.due[EVERY] == 4000.0
    due = clock.due[SCHEDULE]
    assert 1000.0 < due <= 1000.0 + 86400 and time.localtime(due)[3:6] == (2, 0, 0)
    assert next_daily(due, 2, 0) > due  # fired at 02:00: due again the next day, not at once


# --- real watchers -----------------------------------------------------------------------

def test_a_periodic_trigger_starts_iterations_and_a_second_watcher_is_refused(tmp_path, stop_watchers):
    # Each firing retrains though the data stays as it is (without it, a firing after the first is skipped).
    project = _files_project(tmp_path / "periodic", 'every = "1s"\nretrain_unchanged = true\n')
    stop_watchers.append(project)
    started = _watch(project, "--detach", "--json")
    assert started.returncode == 0, started.stderr
    pid = json.loads(started.stdout)["pid"]
    assert json.loads(started.stdout)["started"] is True
    # Asked right after the start, the status already says since when and what it watches.
    status = json.loads(_watch(project, "--status", "--json").stdout)
    assert status["running"] and status["since"] and status["triggers"] == ["every 1s"]

    _wait_for(lambda: _iteration_state(project, "0000") == "done", what="the first iteration to be done")
    service = PipelineService(project)
    assert service.get("0000").steps[0].outputs["dataset_version"] == "0000"
    trigger = service.get("0000").trigger
    assert (trigger["kind"], trigger["reason"]) == ("every", "every 1s") and service.get("0000").resumes == []
    listed = subprocess.run([sys.executable, "-m", "workbench", "pipeline", "list", str(project), "--json"],
                            capture_output=True, text=True, env=ENV, timeout=60)
    assert json.loads(listed.stdout)[0]["trigger"]["kind"] == "every"

    again = _watch(project)
    assert again.returncode == 1 and f"a trigger watcher already runs for {project} (pid {pid}" in again.stderr
    detached_again = _watch(project, "--detach")
    assert detached_again.returncode == 0 and f"already runs for this project (pid {pid})" in detached_again.stdout

    status = json.loads(_watch(project, "--status", "--json").stdout)
    assert status["running"] is True and status["pid"] == pid and status["triggers"] == ["every 1s"]
    assert EVERY in status["next_due"] and status["last_trigger"]["reason"] == "every 1s"
    assert status["last_trigger"]["kind"] == "every"
    assert status["started_by"] == "`workbench pipeline watch --detach`"
    _wait_for(lambda: json.loads(_watch(project, "--status", "--json").stdout)["last_trigger"].get("iteration"),
              what="the status to name the iteration the trigger started")

    text = _watch(project, "--status").stdout
    assert f"trigger watcher: pid {pid}, since " in text and ", started by `workbench pipeline watch --detach`" in text
    assert "last trigger " in text and ": every: every 1s → `pipeline start` iteration 0" in text
    stopped = _watch(project, "--stop")
    assert stopped.returncode == 0 and f"stopped the trigger watcher (pid {pid})" in stopped.stdout
    assert not is_locked(project / "registry" / "pipeline" / ".watcher.lock")
    after = _watch(project, "--status")
    assert after.returncode == 0 and "no trigger watcher runs" in after.stdout
    assert "trigger fired: every 1s" in (project / "registry" / "pipeline" / "watcher.log").read_text()


def test_a_data_growth_trigger_fires_only_once_files_are_added(tmp_path, stop_watchers):
    project = _files_project(tmp_path / "growth", 'on_data_growth = { samples = 3 }\ncheck_every = "1s"\n')
    assert PipelineService(project).start().state == "done"  # version 0000 holds the four samples
    stop_watchers.append(project)
    assert _watch(project, "--detach").returncode == 0
    log = project / "registry" / "pipeline" / "watcher.log"
    time.sleep(2.5)  # two looks at the data with nothing new
    assert _iteration_state(project, "0001") is None and "trigger fired" not in log.read_text()

    _add_sample(project, 10)
    _add_sample(project, 11)
    time.sleep(1.5)
    assert _iteration_state(project, "0001") is None  # two new samples are not three
    _add_sample(project, 12)
    _wait_for(lambda: _iteration_state(project, "0001") == "done", what="the data-growth iteration")
    assert "trigger fired: data growth: 3 new samples (75.0 %) since dataset version 0000" in log.read_text()
    assert PipelineService(project).versions.datasets.latest().samples == 7
    trigger = PipelineService(project).get("0001").trigger
    assert trigger["kind"] == "data growth"
    assert trigger["reason"] == "3 new samples (75.0 %) since dataset version 0000 (trigger: 3 samples)"
    assert PipelineService(project).get("0000").trigger["kind"] == "manual"  # started by the test itself


SLOW_DATA = """import time
from pathlib import Path


def sample_ids(hp):
    # Held while the file "hold" exists, so a test can kill the iteration in the middle of this step.
    while Path(__file__).with_name("hold").exists():
        time.sleep(0.05)
    return {"train": ["a", "b", "c"], "val": []}
"""


def test_a_watcher_killed_with_its_iteration_resumes_the_iteration_when_started_again(tmp_path, stop_watchers):
    project = tmp_path / "killed"
    project.mkdir()
    (project / "slowdata.py").write_text(SLOW_DATA)
    (project / "hold").write_text("")
    (project / "workbench.toml").write_text('[project]\nname = "killed"\n\n[data]\nsamples = "slowdata:sample_ids"\n'
                                            '\n[[pipeline.steps]]\ntool = "dataset"\n\n[pipeline.triggers]\n'
                                            'every = "1s"\n')
    stop_watchers.append(project)
    started = _watch(project, "--detach", "--json")
    assert started.returncode == 0, started.stderr
    watcher_pid = json.loads(started.stdout)["pid"]
    record = project / "registry" / "pipeline" / "iteration_0000.json"
    iteration_pid = _wait_for(lambda: record.exists() and json.loads(record.read_text())["pid"],
                              what="the triggered iteration to run")
    assert _iteration_state(project, "0000") == "running"

    os.kill(watcher_pid, signal.SIGKILL)
    os.killpg(iteration_pid, signal.SIGKILL)  # the iteration and the step's own process
    _wait_for(lambda: PipelineService(project).get("0000").state == "failed",
              what="the killed iteration to show as failed")
    assert not is_locked(project / "registry" / "pipeline" / ".watcher.lock")

    (project / "hold").unlink()
    again = _watch(project, "--detach", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["started"] is True, again.stderr
    _wait_for(lambda: _iteration_state(project, "0000") == "done", what="the resumed iteration to be done")
    log = (project / "registry" / "pipeline" / "watcher.log").read_text()
    assert f"iteration 0000 was running in process {iteration_pid}, which is gone" in log
    assert "resuming iteration 0000 at step 1" in log
    status = json.loads(_watch(project, "--status", "--json").stdout)
    assert status["resumed"]["version"] == "0000" and status["resumed"]["dead_pid"] == iteration_pid
    resumed = PipelineService(project).get("0000")
    assert resumed.trigger["kind"] == "every"  # what started it stays
    assert [resume["kind"] for resume in resumed.resumes] == ["resume"]
    assert f"the process running it (pid {iteration_pid}) was gone" in resumed.resumes[0]["reason"]
    shown = subprocess.run([sys.executable, "-m", "workbench", "pipeline", "status", str(project)],
                           capture_output=True, text=True, env=ENV, timeout=60).stdout
    assert "started by every: every 1s" in shown and "by resume: the process running it" in shown


def test_a_schedule_that_comes_due_starts_an_iteration_that_records_it(tmp_path):
    """The watcher's tick at the moment the schedule is due (the clock driven, not waited for):
    the iteration it starts in its own process records kind "schedule" and the time of day."""
    from workbench.pipeline.triggers import DataGrowthCheck
    from workbench.pipeline.watcher import TriggerWatcher

    project = _files_project(tmp_path / "nightly", 'schedule = "02:00"\n')
    watcher = TriggerWatcher(project)
    watcher.service.store.folder.mkdir(parents=True)  # as run() does first
    watcher.state = {"last_fired": {}, "last_trigger": None}
    now = time.time()
    clock = TriggerClock(watcher.triggers, now)
    clock.due[SCHEDULE] = now  # 02:00 has come
    watcher._tick(clock, DataGrowthCheck(watcher.service.versions.datasets, watcher.triggers), now)
    _wait_for(lambda: _iteration_state(project, "0000") == "done", what="the scheduled iteration")
    trigger = PipelineService(project).get("0000").trigger
    assert (trigger["kind"], trigger["reason"]) == ("schedule", "daily at 02:00")
    assert watcher.state["last_trigger"]["kind"] == "schedule" and clock.due[SCHEDULE] > now
    watcher.child.wait(timeout=30)


def _tick_when_due(watcher, name: str) -> None:
    """One tick of ``watcher`` at the moment its ``name`` trigger comes due."""
    from workbench.pipeline.triggers import DataGrowthCheck

    now = time.time()
    clock = TriggerClock(watcher.triggers, now)
    clock.due[name] = now
    watcher._tick(clock, DataGrowthCheck(watcher.service.versions.datasets, watcher.triggers), now)


def test_a_schedule_that_finds_the_data_unchanged_since_a_done_iteration_starts_nothing(tmp_path):
    from workbench.pipeline.watcher import TriggerWatcher

    project = _files_project(tmp_path / "nightly", 'schedule = "02:00"\n')
    assert PipelineService(project).start().state == "done"  # dataset version 0000 holds the four samples
    watcher = TriggerWatcher(project)
    watcher.state = {"last_fired": {}, "last_trigger": None}

    _tick_when_due(watcher, SCHEDULE)
    assert watcher.child is None and _iteration_state(project, "0001") is None
    skipped = watcher.state["last_trigger"]
    assert (skipped["kind"], skipped["state"], skipped["iteration"]) == ("schedule", "skipped", None)
    assert skipped["skipped"] == "the data has not changed since dataset version 0000 and iteration 0000 is done"
    log = (project / "registry" / "pipeline" / "watcher.log").read_text()
    assert ("no iteration started (daily at 02:00): the data has not changed since dataset version 0000 and "
            "iteration 0000 is done; retrain_unchanged = true in [pipeline.triggers] retrains all the same") in log
    text = _watch(project, "--status").stdout
    assert ": schedule: daily at 02:00 → no iteration: the data has not changed since dataset version 0000" in text

    _add_sample(project, 10)  # new data: the next night retrains
    _tick_when_due(watcher, SCHEDULE)
    _wait_for(lambda: _iteration_state(project, "0001") == "done", what="the iteration on the new data")
    watcher.child.wait(timeout=30)
    assert PipelineService(project).versions.datasets.latest().samples == 5

    (project / "workbench.toml").write_text((project / "workbench.toml").read_text() + "retrain_unchanged = true\n")
    watcher = TriggerWatcher(project)
    watcher.state = {"last_fired": {}, "last_trigger": None}
    _tick_when_due(watcher, SCHEDULE)  # the data as 0001 has it, but the project asks to retrain
    _wait_for(lambda: _iteration_state(project, "0002") == "done", what="the iteration on unchanged data")
    watcher.child.wait(timeout=30)


def test_a_watcher_that_could_not_start_on_opening_says_why_until_one_runs(tmp_path, stop_watchers):
    from workbench.pipeline.triggers import ON_OPEN_LOG
    from workbench.pipeline.watcher import status_line, watcher_status

    project = _files_project(tmp_path / "misdeclared", 'every = "6h"\n')
    good = (project / "workbench.toml").read_text()
    (project / "workbench.toml").write_text(good.replace('tool = "dataset"', 'tool = "datasett"'))
    log = project / ON_OPEN_LOG
    log.parent.mkdir(parents=True)
    with open(log, "w", encoding="utf-8") as stream:  # as the hub starts it: detached, its words in the log
        subprocess.run([sys.executable, "-m", "workbench.pipeline.watcher", str(project), "--on-open"],
                       stdout=stream, stderr=subprocess.STDOUT, env=ENV, timeout=60)
    _wait_for(lambda: "Error" in log.read_text(), what="the watcher's error in its on-open log")

    status = watcher_status(project)
    assert not status["running"]
    assert status["failed_on_open"].startswith("workbench.toml line 8: key 'tool': step 1's tool 'datasett'")
    assert "did you mean dataset?" in status["failed_on_open"]
    assert status_line(status).startswith("Trigger watcher: not running; it could not start when the project "
                                          "opened: workbench.toml line 8: key 'tool'")
    text = _watch(project, "--status").stdout
    assert "  it could not start when the project opened: workbench.toml line 8: key 'tool'" in text

    # Mended, and a watcher ran since: the old failure is history, not the state.
    (project / "workbench.toml").write_text(good)
    stop_watchers.append(project)
    assert _watch(project, "--detach").returncode == 0
    assert _watch(project, "--stop").returncode == 0
    status = watcher_status(project)
    assert "failed_on_open" not in status and status_line(status).startswith("Trigger watcher: not running (the last")

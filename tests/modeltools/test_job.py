"""The tool job process and its parent side: events, errors, cancel and kill, with real child
processes running a small tool of the tests' own (tests/modeltools/job_helpers.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.modeltools.job_helpers import TOOLS, child_tools_path
from workbench.modeltools import ModelToolError, ToolCancelled, ToolInvocation
from workbench.modeltools import registry
from workbench.modeltools.job import EVENTS
from workbench.modeltools.job_client import (JobEvents, ToolJob, invocation_bytes, job_command,
                                             parse_event_line, signal_job)

pytestmark = pytest.mark.slow

WAIT_S = 60


@pytest.fixture
def tools(monkeypatch, tmp_path):
    """The test tools as the built-in ones, here and in every child process."""
    monkeypatch.setattr(registry, "BUILT_IN", TOOLS)
    monkeypatch.setenv("PYTHONPATH", child_tools_path(tmp_path / "site", TOOLS))


@pytest.fixture
def source(tmp_path) -> Path:
    path = tmp_path / "numbers.txt"
    path.write_text("1 2 3\n")
    return path


class Recorder:
    """Collects a job's events and log lines; ``wait_for(kind)`` until one such event came."""

    def __init__(self):
        self.events: list[dict] = []
        self.stderr: list[str] = []
        self._arrived = threading.Condition()

    def on_event(self, event: dict) -> None:
        with self._arrived:
            self.events.append(event)
            self._arrived.notify_all()

    def on_stderr(self, line: str) -> None:
        self.stderr.append(line)

    def kinds(self) -> list[str]:
        return [event["event"] for event in self.events]

    def wait_for(self, kind: str, timeout: float = WAIT_S) -> dict:
        with self._arrived:
            found = self._arrived.wait_for(lambda: any(e["event"] == kind for e in self.events), timeout)
        assert found, f"no {kind} event; got {self.kinds()}"
        return next(e for e in self.events if e["event"] == kind)

    def job(self, **options) -> ToolJob:
        return ToolJob(self.on_event, self.on_stderr, **options)


def start(recorder: Recorder, source: Path, **values) -> ToolJob:
    job = recorder.job()
    job.start(ToolInvocation("count", {"model": str(source), **values}))
    return job


def partial_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.partial")) + sorted(folder.glob(".*.partial"))


def test_events_stream_in_order_and_the_result_carries_the_report(tools, source):
    recorder = Recorder()
    report = start(recorder, source, steps=3).wait(WAIT_S)
    assert report.title == "Counted 3 steps" and report.figures["steps"] == 3
    target = source.with_name("numbers.count.txt")
    assert report.outputs == [str(target)] and target.read_text() == "1\n2\n3\n"
    stages = [(e["name"], e["index"], e["count"]) for e in recorder.events if e["event"] == "stage"]
    assert stages == [("Reading", 0, 3), ("Counting", 1, 3), ("Checking", 2, 3)]
    fractions = [e["fraction"] for e in recorder.events if e["event"] == "progress"]
    assert fractions == pytest.approx([1 / 3, 2 / 3, 1.0])
    logs = [e["text"] for e in recorder.events if e["event"] == "log"]
    assert logs == ["step 1 of 3", "step 2 of 3", "step 3 of 3"]
    # Everything comes between the first stage and the result, which is last.
    kinds = recorder.kinds()
    assert kinds[0] == "stage" and kinds[-1] == "result"
    assert kinds.index("partial") < kinds.index("progress")
    assert set(kinds) <= set(EVENTS) and partial_files(source.parent) == []


def test_the_job_runs_at_a_lower_priority_than_its_parent(tools, source):
    report = start(Recorder(), source).wait(WAIT_S)
    assert report.figures["niceness"] >= min(19, os.nice(0) + 10)


def test_what_a_tool_prints_on_stdout_goes_to_the_log_not_into_the_events(tools, source):
    invocation = {"tool": "count", "values": {"model": str(source), "behaviour": "print"}, "project": None}
    done = subprocess.run(job_command(), input=json.dumps(invocation).encode(), capture_output=True,
                          timeout=WAIT_S)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [e["event"] for e in events][-1] == "result" and all(e["event"] in EVENTS for e in events)
    assert b"noise written to fd 1 by a C library" in done.stderr
    assert b"noise printed by Python" in done.stderr
    assert b"noise" not in done.stdout


def test_a_line_that_is_not_an_event_becomes_a_log_line():
    assert parse_event_line(b"") is None and parse_event_line(b"  \n") is None
    assert parse_event_line(b'{"event": "progress", "fraction": 0.5}\n') == {"event": "progress", "fraction": 0.5}
    for garbage in (b"Converting model...\n", b"[1, 2]\n", b'{"no": "event"}\n', b"\xff\xfe broken\n", b"{\n"):
        event = parse_event_line(garbage)
        assert event["event"] == "log" and event["text"]


def test_a_job_that_writes_garbage_among_its_events_still_gives_its_report(tools):
    script = ("import json, sys; sys.stdin.read(); print('Converting... 10%'); "
              "print(json.dumps({'event': 'log', 'text': 'real'})); print('{not json'); "
              "print(json.dumps({'event': 'result', 'report': {'tool': 'count', 'title': 'Done'}}))")
    recorder = Recorder()
    job = recorder.job(command=[sys.executable, "-c", script])
    job.start(ToolInvocation("count", {}))
    assert job.wait(WAIT_S).title == "Done"
    assert [(e["event"], e.get("text")) for e in recorder.events] == [
        ("log", "Converting... 10%"), ("log", "real"), ("log", "{not json"), ("result", None)]


def test_an_error_the_user_can_act_on_exits_1_with_its_message(tools, source):
    job = start(Recorder(), source, behaviour="fail")
    with pytest.raises(ModelToolError, match="numbers.txt is not a text file to count; give a .txt file") as caught:
        job.wait(WAIT_S)
    assert not isinstance(caught.value, ToolCancelled)
    assert job.returncode == 1 and "Traceback" not in job.stderr_tail


def test_a_bad_value_is_the_same_error_in_the_job(tools, source):
    job = start(Recorder(), source, steps="many")
    with pytest.raises(ModelToolError, match="--steps: 'many' is not a whole number"):
        job.wait(WAIT_S)
    assert job.returncode == 1


def test_an_unknown_tool_exits_1_naming_the_tools(tools):
    job = Recorder().job()
    job.start(ToolInvocation("cuont", {}))
    with pytest.raises(ModelToolError, match="no model tool 'cuont'.*Did you mean count"):
        job.wait(WAIT_S)
    assert job.returncode == 1


def test_a_bug_exits_2_with_a_message_and_the_traceback_in_the_log(tools, source):
    recorder = Recorder()
    job = start(recorder, source, behaviour="bug")
    with pytest.raises(ModelToolError) as caught:
        job.wait(WAIT_S)
    assert str(caught.value) == ("the count tool failed unexpectedly: KeyError: 'no such key'; "
                                 "the log has the details")
    assert job.returncode == 2
    assert "Traceback (most recent call last):" in recorder.stderr and "KeyError: 'no such key'" in recorder.stderr
    assert 'in run_count' in job.stderr_tail


def test_a_job_without_a_valid_invocation_exits_2(tools):
    done = subprocess.run(job_command(), input=b"[1, 2", capture_output=True, timeout=WAIT_S)
    assert done.returncode == 2
    event = json.loads(done.stdout)
    assert event["event"] == "error" and "no tool invocation" in event["message"]


@pytest.mark.parametrize("explicit_output", [False, True])
def test_cancel_ends_a_long_loop_and_leaves_no_partial_file(tools, source, tmp_path, explicit_output):
    recorder = Recorder()
    values = {"steps": 100_000, "delay": 0.01}
    target = tmp_path / "out" / "counted.txt" if explicit_output else source.with_name("numbers.count.txt")
    if explicit_output:
        values["output"] = str(target)
    job = start(recorder, source, **values)
    recorder.wait_for("progress")
    assert partial_files(target.parent) != []  # it is writing
    job.cancel()
    with pytest.raises(ToolCancelled, match="Cancelled; no output was written"):
        job.wait(WAIT_S)
    assert job.returncode == 1  # it stopped by itself, at its next check, before any kill
    assert recorder.events[-1] == {"event": "error", "message": "Cancelled; no output was written.",
                                   "cancelled": True}
    assert partial_files(target.parent) == [] and not target.exists()


@pytest.mark.parametrize("behaviour", ["stuck", "ignore_cancel"])
def test_a_job_that_does_not_stop_when_cancelled_is_killed_and_its_partial_file_removed(tools, source, behaviour):
    recorder = Recorder()
    job = start(recorder, source, behaviour=behaviour, steps=100_000, delay=0.01)
    announced = Path(recorder.wait_for("partial")["path"])
    recorder.wait_for("log")
    assert announced.is_file() and announced.parent == source.parent
    job.cancel()
    with pytest.raises(ToolCancelled):
        job.wait(WAIT_S)
    assert job.returncode == -signal.SIGKILL
    assert partial_files(source.parent) == [] and not source.with_name("numbers.count.txt").exists()


def test_a_job_killed_from_outside_is_an_error_and_leaves_no_partial_file(tools, source):
    recorder = Recorder()
    job = start(recorder, source, behaviour="stuck")
    recorder.wait_for("log")
    os.kill(job.pid, signal.SIGKILL)
    with pytest.raises(ModelToolError, match="killed by SIGKILL") as caught:
        job.wait(WAIT_S)
    assert not isinstance(caught.value, ToolCancelled)
    assert partial_files(source.parent) == []


def test_the_job_ends_as_soon_as_it_has_said_its_outcome(tools, source):
    """A thread the tool leaves running (or the interpreter's slow teardown with torch loaded)
    keeps nobody waiting at 100 %: the job ends itself right after its result."""
    job = start(Recorder(), source, behaviour="linger")
    job.grace = 30.0  # the parent would wait this long before killing a lingering job
    started = time.monotonic()
    report = job.wait(WAIT_S)
    assert report.title == "Counted 3 steps" and source.with_name("numbers.count.txt").is_file()
    assert job.returncode == 0 and time.monotonic() - started < job.grace


def test_a_job_that_lingers_after_its_report_is_ended_and_its_report_kept(tools):
    script = ("import json, sys, time; sys.stdin.read(); "
              "print(json.dumps({'event': 'result', 'report': {'tool': 'count', 'title': 'Done'}}), "
              "flush=True); time.sleep(600)")
    job = Recorder().job(command=[sys.executable, "-c", script], grace=0.5)
    job.start(ToolInvocation("count", {}))
    report = job.wait(WAIT_S)
    assert report.title == "Done" and job.returncode == -signal.SIGKILL


def test_a_job_whose_reader_went_away_cancels_itself(tools, source):
    invocation = {"tool": "count", "values": {"model": str(source), "steps": 100_000, "delay": 0.01},
                  "project": None}
    process = subprocess.Popen(job_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
    process.stdin.write(json.dumps(invocation).encode())
    process.stdin.close()
    assert json.loads(process.stdout.readline())["event"] == "stage"
    process.stdout.close()  # the window closed
    assert process.wait(WAIT_S) == 1
    assert partial_files(source.parent) == [] and not source.with_name("numbers.count.txt").exists()


def test_a_job_driven_through_the_pure_parts_like_a_window_does(tools, source):
    """A tool window starts the job with QProcess, which makes no new session, and reads its
    events itself: the job leads its own process group, so signal_job reaches it (and what it
    started) and never the window; JobEvents removes what the killed job was writing."""
    invocation = ToolInvocation("count", {"model": str(source), "behaviour": "stuck"})
    process = subprocess.Popen(job_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
    process.stdin.write(invocation_bytes(invocation))
    process.stdin.close()
    events = JobEvents(invocation)
    while not events.partials:
        events.add(parse_event_line(process.stdout.readline()))
    assert parse_event_line(process.stdout.readline())["event"] == "log"  # it is stuck now
    assert os.getpgid(process.pid) == process.pid != os.getpgid(0)
    assert Path(events.partials[0]).is_file()
    signal_job(process.pid, signal.SIGTERM)
    with pytest.raises(subprocess.TimeoutExpired):
        process.wait(0.5)  # the stuck tool does not listen…
    signal_job(process.pid, signal.SIGKILL)
    assert process.wait(WAIT_S) == -signal.SIGKILL
    with pytest.raises(ToolCancelled):
        events.outcome(process.returncode, cancel_requested=True)
    assert partial_files(source.parent) == []
    process.stdout.close()


def test_the_outcome_of_a_job_that_said_nothing_names_its_exit(tools):
    events = JobEvents(ToolInvocation("count", {}))
    with pytest.raises(ModelToolError, match="exit status 3"):
        events.outcome(3)
    with pytest.raises(ToolCancelled):
        events.outcome(-signal.SIGKILL, cancel_requested=True)

"""The follower of a cluster run with this machine as the cluster: a job that ends while the
cluster is out of reach keeps its own start and end, a stop's note from Slurm is no error, the
outage reads as such in the runs list, and a cancelled job's status is not made up."""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from tests.cluster.this_machine import LocalSftp, ThisMachine, program_of
from workbench.cli import cli
from workbench.cluster import follower as follower_module
from workbench.cluster.errors import ConnectionLost
from workbench.cluster.follower import BACKOFF_S, Follower, FollowerLock
from workbench.cluster.jobs import JobSpec
from workbench.cluster.mirror import start_mirror_at
from workbench.cluster.slurm import SlurmBackend
from workbench.cluster.ssh_backend import SshBackend
from workbench.training.run_folder import RunFolder
from workbench.training.run_info import RunInfo
from workbench.training.service import RunService
from tests.project_files import write_project_file


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch):
    monkeypatch.setattr(follower_module, "BACKOFF_S", (0.3,))
    monkeypatch.setattr(SlurmBackend, "state_interval", 0.0)  # Slurm is asked at every poll


def cluster_run(tmp_path, backend: str, job_id: str = "7", state: str = "running", **fields):
    """A project with one cluster run (its folder here, an empty one "there") as a follower finds it."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    write_project_file(project)
    folder = RunFolder(project / "runs" / "20260101-120000-000")
    folder.path.mkdir(parents=True)
    remote = tmp_path / "remote"
    remote.mkdir(exist_ok=True)
    for name in ("stdout.log", "stderr.log"):
        (folder.path / name).touch()
        (remote / name).touch()
    folder.write_info(RunInfo(id=folder.id, state=state, run_dir=str(folder.path), project_dir=str(project),
                              created_at=time.time(), backend=backend, cluster="lab", job_id=job_id,
                              remote_run_dir=str(remote), **fields))
    start_mirror_at(folder)
    return project, folder, remote


class Outage:
    """Cuts a connection off for ``seconds`` once ``begins()`` is true; connecting fails meanwhile."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.until: float | None = None
        self.tries = 0

    def start(self) -> None:
        if self.until is None:
            self.until = time.monotonic() + self.seconds

    @property
    def on(self) -> bool:
        return self.until is not None and time.monotonic() < self.until

    def check(self) -> None:
        if self.on:
            raise ConnectionLost("Lost the connection to lab (No existing session).")

    def connect(self, conn):
        def connect(_info, _folder):
            if self.on:
                self.tries += 1
                raise ConnectionLost("Could not reach lab: the server did not complete the SSH handshake "
                                     "(Error reading SSH protocol banner).")
            return conn
        return connect


class FlakySftp(LocalSftp):
    def __init__(self, outage: Outage):
        self.outage = outage

    def stat(self, path):
        self.outage.check()
        return super().stat(path)

    def open(self, path, mode="rb"):
        self.outage.check()
        return super().open(path, mode)


class HostOutOfReach(ThisMachine):
    """A plain SSH host (this machine) that goes out of reach for a while once the job is seen running."""

    def __init__(self, outage: Outage):
        self.outage = outage

    def run(self, command, timeout=None, check=True):
        self.outage.check()
        result = super().run(command, timeout, check)
        if result.stdout.strip().endswith("running"):
            self.outage.start()
        return result

    def sftp(self):
        return FlakySftp(self.outage)


def test_a_job_that_ended_while_the_host_was_out_of_reach_keeps_its_own_duration(tmp_path):
    project, folder, remote = cluster_run(tmp_path, "ssh", job_id="")
    (remote / "code").mkdir()
    (remote / "code" / "train.py").write_text("import time\nprint('training', flush=True)\ntime.sleep(1.2)\n")
    outage = Outage(seconds=4.0)
    conn = HostOutOfReach(outage)
    job = JobSpec(run_id=folder.id, remote_run_dir=str(remote), workdir=str(remote / "code"),
                  script_args=["train.py"], python=sys.executable)
    group = SshBackend().submit(ThisMachine(), job)
    info = folder.read_info()
    info.job_id = group
    folder.write_info(info)

    assert Follower(folder, connect=outage.connect(conn)).run() == 0

    done = RunService(project).get(folder.id)
    ended_there = (remote / "exit_code").stat().st_mtime
    assert outage.tries >= 2, "the follower never met the outage"
    assert done.state == "completed"
    # The job's 1.2 s (whole seconds on the host), not the 4 s the host could not be reached.
    assert 0 <= done.duration <= 2.5, (done.started_at, done.ended_at)
    assert done.ended_at <= ended_there + 1.0
    assert done.outage == {} and done.error == ""


class SlurmAnswers(ThisMachine):
    """Slurm's answers about job 7, played in turn (the last one repeats); ``after_scancel`` once a
    scancel was sent, when it also writes ``scancel_note`` to the job's stderr there. Commands
    fail while ``outage`` is on; the outage starts after ``outage_after`` answers."""

    def __init__(self, answers, after_scancel=(), remote: Path | None = None, scancel_note: str = "",
                 outage: Outage | None = None, outage_after: int | None = None):
        self.answers, self.after_scancel = list(answers), list(after_scancel)
        self.remote, self.scancel_note = remote, scancel_note
        self.outage, self.outage_after = outage or Outage(0), outage_after
        self.asked = 0
        self.commands: list[str] = []

    def run(self, command, timeout=None, check=True):
        self.outage.check()
        self.commands.append(command)
        if "scancel" in command:
            if self.after_scancel:
                self.answers = list(self.after_scancel)
            if self.scancel_note:
                with open(self.remote / "stderr.log", "a") as out:
                    out.write(self.scancel_note)
            return SimpleNamespace(code=0, stdout="", stderr="")
        if program_of(command).startswith("squeue"):
            line, record = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
            self.asked += 1
            if self.outage_after is not None and self.asked >= self.outage_after:
                self.outage.start()
            return SimpleNamespace(code=0, stdout=f"{line}--squeue 0\n{record}--scontrol 0\n", stderr="")
        if program_of(command).startswith("sacct"):
            return SimpleNamespace(code=1, stdout="", stderr="Slurm accounting storage is disabled\n")
        return super().run(command, timeout, check)

    def sftp(self):
        return FlakySftp(self.outage)


def test_a_slurm_run_takes_its_start_and_end_from_slurm_not_from_when_it_was_seen(tmp_path):
    """The job ran 33 s (StartTime to EndTime); the link was down across its end."""
    project, folder, remote = cluster_run(tmp_path, "slurm", state="pending")
    start = int(time.time()) - 120
    outage = Outage(seconds=2.0)
    record = (f"JobId=7 JobState=COMPLETED Reason=None ExitCode=0:0 StartTime={start} EndTime={start + 33} "
              f"WorkDir=/w\n")
    slurm = SlurmAnswers([(f"RUNNING|{start}|None\n", ""), ("", record)], outage=outage, outage_after=1)

    assert Follower(folder, connect=outage.connect(slurm)).run() == 0

    done = RunService(project).get(folder.id)
    assert outage.tries >= 2
    assert (done.state, done.started_at, done.ended_at, done.duration) == ("completed", start, start + 33, 33)
    listed = CliRunner().invoke(cli, ["runs", "list", str(project)])
    assert listed.output.splitlines()[1].split()[:3] == [folder.id, "completed", "33.0s"], listed.output
    from workbench.training.widgets.runs_table import format_duration
    assert format_duration(done.duration) == "0:33"


def test_a_resumed_run_adds_the_new_jobs_own_time_to_what_it_trained_before(tmp_path):
    created = time.time() - 600
    project, folder, remote = cluster_run(tmp_path, "slurm", state="starting", started_at=created,
                                          active_seconds=100.0, resumes=[{"step": 40, "time": created + 200}])
    start = int(time.time()) - 60
    record = f"JobId=7 JobState=COMPLETED Reason=None ExitCode=0:0 StartTime={start} EndTime={start + 20}\n"
    slurm = SlurmAnswers([(f"RUNNING|{start}|None\n", ""), ("", record)])

    assert Follower(folder, connect=lambda _info, _folder: slurm).run() == 0

    done = RunService(project).get(folder.id)
    assert (done.started_at, done.segment_started_at, done.ended_at) == (created, start, start + 20)
    assert done.duration == 120.0


STEP_NOTE = "slurmstepd-vm: error: *** STEP 7.0 ON vm CANCELLED AT 2026-05-09T12:14:59 ***\n"


def test_after_a_stop_asked_for_here_slurms_note_of_the_cancelled_step_is_no_error(tmp_path):
    project, folder, remote = cluster_run(tmp_path, "slurm")
    (remote / "stdout.log").write_text("step=1 loss=0.5\n")
    (folder.path / "stop-requested").touch()
    ended = f"JobId=7 JobState=COMPLETED Reason=None ExitCode=0:0 StartTime={int(time.time()) - 9}\n"
    slurm = SlurmAnswers([("RUNNING|N/A|None\n", "")], after_scancel=[("", ended)], remote=remote,
                         scancel_note=STEP_NOTE)

    assert Follower(folder, connect=lambda _info, _folder: slurm).run() == 0

    done = RunService(project).get(folder.id)
    assert done.state == "stopped"
    errors = folder.stderr_log.read_text()
    assert "CANCELLED" not in errors and "error" not in errors
    assert errors.rstrip() == "workbench: job step 7.0 stopped on request"
    # The copy stays as long as the file there: a follower started again goes on from the right byte.
    assert folder.stderr_log.stat().st_size == (remote / "stderr.log").stat().st_size
    logs = CliRunner().invoke(cli, ["runs", "logs", str(project), folder.id])
    assert "slurmstepd" not in logs.output and "stopped on request" in logs.output


@pytest.mark.parametrize("note", [STEP_NOTE, "slurmstepd-vm: error: *** JOB 7 ON vm CANCELLED AT "
                                             "2026-05-09T12:14:59 DUE TO TIME LIMIT ***\n"])
def test_a_cancel_no_one_here_asked_for_still_shows_slurms_note(tmp_path, note):
    project, folder, remote = cluster_run(tmp_path, "slurm")
    (remote / "stderr.log").write_text(note)
    record = "JobId=7 JobState=CANCELLED Reason=None ExitCode=0:15\n"
    slurm = SlurmAnswers([("", record)])

    assert Follower(folder, connect=lambda _info, _folder: slurm).run() == 0

    assert folder.stderr_log.read_text() == note
    assert RunService(project).get(folder.id).state == "cancelled"


def test_a_time_limit_after_a_stop_still_shows_slurms_note(tmp_path):
    project, folder, remote = cluster_run(tmp_path, "slurm")
    (folder.path / "stop-requested").touch()
    note = "slurmstepd-vm: error: *** STEP 7.0 ON vm CANCELLED AT 2026-05-09T12:14:59 DUE TO TIME LIMIT ***\n"
    slurm = SlurmAnswers([("RUNNING|N/A|None\n", "")], remote=remote, scancel_note=note,
                         after_scancel=[("", "JobId=7 JobState=TIMEOUT Reason=TimeLimit ExitCode=0:15\n")])
    assert Follower(folder, connect=lambda _info, _folder: slurm).run() == 0
    assert folder.stderr_log.read_text() == note


def follow_as_its_follower(folder, connect) -> None:
    """Follow the run in this process, holding its follower's lock as its follower would, so
    that the service starts no other follower; the run must end well."""
    lock = FollowerLock(folder)
    assert lock.acquire()
    try:
        assert Follower(folder, connect=connect).run() == 0
    finally:
        lock.release()


def test_while_the_link_is_lost_the_run_says_reconnecting_in_words_for_people(tmp_path, capsys):
    project, folder, remote = cluster_run(tmp_path, "slurm")
    (remote / "exit_code").write_text("0 1796041554\n")
    seen = []
    tries = []

    def connect(_info, _folder):
        tries.append(time.time())
        if len(tries) == 3:
            # The third try: what the run says now, after two failed ones.
            info = RunService(project).get(folder.id)
            listed = CliRunner().invoke(cli, ["runs", "list", str(project)]).output
            shown = CliRunner().invoke(cli, ["runs", "show", str(project), folder.id]).output
            seen.append((info, listed, shown))
            return SlurmAnswers([("", "JobId=7 JobState=COMPLETED Reason=None ExitCode=0:0\n")])
        raise ConnectionLost("Could not reach lab: the server did not complete the SSH handshake "
                             "(Error reading SSH protocol banner).")

    follow_as_its_follower(folder, connect)

    [(info, listed, shown)] = seen
    assert info.state == "running" and info.outage["kind"] == "connection"
    since = datetime.fromtimestamp(tries[0]).strftime("%H:%M")
    last = datetime.fromtimestamp(tries[1]).strftime("%H:%M")
    assert info.error.startswith(f"Lost the connection to lab at {since}; reconnecting (last try {last}, next in ")
    assert info.error.endswith(" s). The job keeps running on the cluster.")
    assert "SSH" not in info.error and "banner" not in info.error
    assert listed.splitlines()[1].split()[:4] == [folder.id, "running", "·", "reconnecting"], listed
    assert "state:          running · reconnecting" in shown
    assert f"note:           Lost the connection to lab at {since}; reconnecting" in shown
    # The library's own words are kept for whoever reads the follower's log.
    assert "Error reading SSH protocol banner" in capsys.readouterr().err
    done = RunService(project).get(folder.id)
    assert (done.state, done.outage, done.error) == ("completed", {}, "")


def test_a_stop_asked_for_while_the_cluster_is_out_of_reach_waits_out_the_back_off(tmp_path, monkeypatch):
    monkeypatch.setattr(follower_module, "BACKOFF_S", (0.5,))
    project, folder, remote = cluster_run(tmp_path, "slurm")
    folder.stop_requested.touch()  # asked for here; it cannot reach the cluster yet
    tries = []

    def connect(_info, _folder):
        tries.append(time.monotonic())
        if len(tries) == 5:
            (remote / "exit_code").write_text("0 1796041554\n")
            return SlurmAnswers([("", "JobId=7 JobState=COMPLETED Reason=None ExitCode=0:0\n")])
        raise ConnectionLost("Could not reach lab: the server did not complete the SSH handshake.")

    follow_as_its_follower(folder, connect)
    gaps = [later - earlier for earlier, later in zip(tries, tries[1:])]
    assert len(tries) == 5 and min(gaps) >= 0.45, gaps


def test_the_reconnect_back_off_is_at_most_ten_seconds():
    assert max(BACKOFF_S) <= 10


def test_a_cancelled_job_has_no_made_up_exit_code(tmp_path):
    """scancel of a running job: Slurm says "ExitCode=0:0", which is not the trainer's status."""
    project, folder, remote = cluster_run(tmp_path, "slurm")
    (folder.path / "terminate-requested").touch()
    slurm = SlurmAnswers([("RUNNING|N/A|None\n", "")],
                         after_scancel=[("", "JobId=7 JobState=CANCELLED Reason=None ExitCode=0:0\n")])

    assert Follower(folder, connect=lambda _info, _folder: slurm).run() == 0

    done = RunService(project).get(folder.id)
    assert (done.state, done.exit_code) == ("cancelled", None)
    shown = CliRunner().invoke(cli, ["runs", "show", str(project), folder.id]).output
    assert "exit code:      -\n" in shown and "scheduler:      cancelled\n" in shown


class NoSignals(ThisMachine):
    """This machine, where the job's process group is made up: nothing is signalled."""

    def run(self, command, timeout=None, check=True):
        if "kill -KILL" in command or "kill -TERM" in command:
            return SimpleNamespace(code=0, stdout="", stderr="")
        return super().run(command, timeout, check)


def test_a_stop_that_ended_the_job_before_the_terminate_came_is_a_stop(tmp_path):
    """Ctrl+C, then Ctrl+C again: the trainer had checkpointed and exited 0 before the kill."""
    project, folder, remote = cluster_run(tmp_path, "ssh", job_id="4242")
    (folder.path / "stop-requested").touch()
    (folder.path / "terminate-requested").touch()
    (folder.path / "checkpoints").mkdir()
    (folder.path / "checkpoints" / "latest.json").write_text(json.dumps({"file": "step-5.pt", "step": 5}))
    (remote / "exit_code").write_text("0\n")

    assert Follower(folder, connect=lambda _info, _folder: NoSignals()).run() == 0

    done = RunService(project).get(folder.id)
    assert (done.state, done.exit_code) == ("stopped", 0)
    shown = CliRunner().invoke(cli, ["runs", "show", str(project), folder.id]).output
    assert "scheduler:      exited (stopped on request)" in shown


def test_runs_logs_prints_a_cluster_runs_notes_where_they_came(tmp_path):
    import subprocess

    from workbench.cluster.mirror import LogMirror

    project, folder, remote = cluster_run(tmp_path, "slurm", state="stopped")
    mirror = LogMirror(folder, str(remote))
    for name, text in [("stdout.log", "step=1\nstopped at step 1\n"), ("stderr.log", "first note\n"),
                       ("stdout.log", "resumed from step 1\nstopped at step 2\n"), ("stderr.log", "second note\n")]:
        with open(remote / name, "a") as out:
            out.write(text)
        mirror.poll(LocalSftp())

    shown = subprocess.run([sys.executable, "-m", "workbench", "runs", "logs", str(project), folder.id],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    assert shown.stdout == ("step=1\nstopped at step 1\nfirst note\nresumed from step 1\nstopped at step 2\n"
                            "second note\n")


def test_stopping_a_queued_job_says_that_it_leaves_the_queue(tmp_path):
    project, folder, remote = cluster_run(tmp_path, "slurm", state="pending", scheduler_state="PENDING",
                                          scheduler_reason="Resources")
    lock = FollowerLock(folder)  # its follower, which carries the stop out
    assert lock.acquire()
    try:
        stopped = CliRunner().invoke(cli, ["runs", "stop", str(project), folder.id])
    finally:
        lock.release()
    assert stopped.exit_code == 0, stopped.output
    assert "job 7 is removed from the queue; it had not started" in stopped.output
    assert "checkpoints and exits" not in stopped.output
    assert (folder.path / "stop-requested").exists()


def test_following_a_run_in_a_terminal_says_when_the_link_is_lost_and_back(tmp_path):
    import queue
    import subprocess
    import threading

    project, folder, remote = cluster_run(tmp_path, "slurm")
    lock = FollowerLock(folder)
    assert lock.acquire()
    follow = subprocess.Popen([sys.executable, "-m", "workbench", "runs", "logs", "-f", str(project), folder.id],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    said: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [said.put(line) for line in follow.stderr] + [said.put(None)],
                     daemon=True).start()
    lines: list[str] = []

    def until_said(text: str) -> None:
        # Each change is made once the command has told the last one: a fixed pause could pass
        # before a slow machine's command had even started looking.
        while not any(text in line for line in lines):
            line = said.get(timeout=60)
            assert line is not None, f"the command ended before saying {text!r}: {lines}"
            lines.append(line.rstrip("\n"))

    try:
        info = folder.read_info()
        now = time.time()
        info.outage = {"kind": "connection", "since": now, "last_try": now, "next_try": now + 10}
        folder.write_info(info)
        until_said("Lost the connection")
        info.outage = {}
        folder.write_info(info)
        until_said("connected to lab again")
        info.state = "completed"
        folder.write_info(info)
        follow.wait(timeout=30)
        lines.extend(line.rstrip("\n") for line in iter(lambda: said.get(timeout=30), None))
    finally:
        lock.release()
        if follow.poll() is None:
            follow.kill()
    errors = "\n".join(lines)
    since = datetime.fromtimestamp(now).strftime("%H:%M")
    assert lines[0].startswith(f"workbench: Lost the connection to lab at {since}; reconnecting"), errors
    assert lines[1:] == ["workbench: connected to lab again."], errors

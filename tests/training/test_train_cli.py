"""`workbench train` and `workbench runs …`, as a user types them."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.training.conftest import wait_for
from workbench.cli import cli
from workbench.training import RunService

pytestmark = pytest.mark.slow


def workbench(*args: str, cwd=None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout)


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def _set(project: Path, text: str) -> None:
    (project / "hparams" / "tiny.hparams").write_text(text)


def test_train_in_the_foreground_prints_the_log_and_exits_by_the_outcome(project):
    _set(project, "stop_at_step=5\nstep_seconds=0\n")
    done = workbench("train", str(project), "--set", "stop_at_step=6", "--json")
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)  # with --json the log goes to stderr and stdout is the run
    assert info["state"] == "completed" and info["final_metrics"]["step"] == 6 and "step=6 loss=" in done.stderr

    _set(project, "stop_at_step=5\nstep_seconds=0\nfail_at_step=2\n")
    failed = workbench("train", cwd=project / "hparams")  # the project that holds the current folder
    assert failed.returncode == 1
    assert failed.stdout.startswith("Run ") and "step=1 loss=" in failed.stdout
    summary = failed.stderr.strip().splitlines()[-1]
    assert summary.startswith("Run ") and " failed after " in summary and "ValueError: boom at step 2" in summary


def test_a_malformed_hparams_file_is_one_line_naming_the_file_line_and_key(project):
    (project / "bad.hparams").write_text("# tries\nstop_at_step=5\noptimizer=adamm\n")
    result = workbench("train", str(project), "--hparams", str(project / "bad.hparams"))
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("workbench: Not started: bad.hparams:3: ")
    assert "optimizer" in lines[0] and "adam" in lines[0]
    assert not (project / "runs").exists() or not any((project / "runs").iterdir())


def test_ctrl_c_stops_the_run_and_a_second_ctrl_c_terminates_it(project):
    _set(project, "stop_at_step=100000\nstep_seconds=0.03\n")
    cli_process = subprocess.Popen([sys.executable, "-m", "workbench", "train", str(project)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert cli_process.stdout.readline().startswith("Run ")
    assert "step=" in cli_process.stdout.readline() + cli_process.stdout.readline()
    cli_process.send_signal(signal.SIGINT)
    out, err = cli_process.communicate(timeout=30)
    assert cli_process.returncode == 1 and "Stopping run" in err
    assert "stopped" in err.strip().splitlines()[-1] and "stopped at step" in out
    assert "workbench runs resume" in err

    _set(project, "stop_at_step=100000\nstep_seconds=0.03\nignore_sigterm=true\n")
    cli_process = subprocess.Popen([sys.executable, "-m", "workbench", "train", str(project)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cli_process.stdout.readline()
    assert "step=" in cli_process.stdout.readline() + cli_process.stdout.readline()
    cli_process.send_signal(signal.SIGINT)  # the trainer ignores the stop …
    # … and once the first press is taken (two signals that come before Python's handler has run
    # are one press) …
    for line in cli_process.stderr:
        if line.startswith("Stopping run"):
            break
    cli_process.send_signal(signal.SIGINT)  # … the second Ctrl+C kills it
    out, err = cli_process.communicate(timeout=30)
    assert cli_process.returncode == 1 and "Terminating run" in err and "terminated" in err.strip().splitlines()[-1]


def test_runs_commands_list_show_follow_stop_resume_and_terminate(project, monkeypatch):
    _set(project, "stop_at_step=100000\nstep_seconds=0.03\n")
    code, output = invoke("train", str(project), "--detach", "--json")
    assert code == 0
    started = json.loads(output)
    assert started["state"] == "running" and started["is_active"]
    run_id = started["id"]
    monkeypatch.chdir(project / "hparams")  # the project is found from inside it

    code, output = invoke("runs", "list", "--json")
    assert code == 0 and [run["id"] for run in json.loads(output)] == [run_id]
    metrics = Path(started["run_dir"]) / "metrics.jsonl"
    wait_for(lambda: metrics.exists() and metrics.read_text().count("\n") >= 3)
    code, output = invoke("runs", "stop", run_id[:-2])
    assert code == 0 and f"Stopping run {run_id}" in output
    code, output = invoke("runs", "logs", "-f", run_id, "--project", str(project))
    assert code == 0 and "stopped at step" in output  # followed until the run ended
    code, output = invoke("runs", "show", run_id, "--json")
    assert json.loads(output)["state"] == "stopped" and json.loads(output)["can_resume"]
    code, output = invoke("runs", "show", run_id)
    assert "state:          stopped" in output and "can resume:     yes" in output

    code, output = invoke("runs", "resume", run_id, "--new", "--json")
    assert code == 0
    resumed = json.loads(output)
    assert resumed["resumed_from"].startswith(run_id + "@") and resumed["state"] == "running"
    code, output = invoke("runs", "terminate", resumed["id"])
    assert code == 0 and "terminated" in output
    code, output = invoke("runs", "list")
    lines = output.splitlines()
    assert lines[0].split()[:3] == ["ID", "STATE", "DURATION"]
    assert lines[1].split()[:2] == [resumed["id"], "terminated"] and f"(from {run_id}@" in lines[1]
    assert lines[2].split()[:2] == [run_id, "stopped"] and "loss=" in lines[2]
    code, output = invoke("runs", "logs", run_id)
    assert "step=1 loss=" in output


def test_runs_commands_say_in_one_line_what_is_wrong(project):
    _set(project, "stop_at_step=2\nstep_seconds=0\n")
    info = RunService(project).wait(RunService(project).start().id, timeout=30)
    for args, fragment in ((["runs", "show", "nope"], "There is no run nope"),
                           (["runs", "stop", info.id], "is not running (it is completed)"),
                           (["runs", "resume", info.id], "has no checkpoint")):
        code, output = invoke(*args, "--project", str(project))
        assert code == 1 and output.strip().startswith("workbench: ") and fragment in output, output
    assert "train" in workbench("--help").stdout and workbench("runs", "--help").returncode == 0


def test_runs_commands_take_the_project_before_the_run_as_train_does(project, tmp_path):
    _set(project, "stop_at_step=2\nstep_seconds=0\n")
    info = RunService(project).wait(RunService(project).start().id, timeout=30)

    code, output = invoke("runs", "list", str(project))
    assert code == 0 and output.splitlines()[1].split()[:2] == [info.id, "completed"]
    code, output = invoke("runs", "show", str(project), info.id[:-3], "--json")
    assert code == 0 and json.loads(output)["id"] == info.id
    code, output = invoke("runs", "logs", str(project), info.id)
    assert code == 0 and "step=2 loss=" in output
    # --project stays, with RUN before or after it; given both ways, it must be the same folder.
    for args in (["show", info.id, "--project", str(project)], ["show", "--project", str(project), info.id],
                 ["show", str(project), info.id, "--project", str(project)]):
        code, output = invoke("runs", *args, "--json")
        assert code == 0 and json.loads(output)["id"] == info.id, args

    result = CliRunner().invoke(cli, ["runs", "show", str(project)])
    assert result.exit_code == 2 and "Missing argument 'RUN'" in result.output
    result = CliRunner().invoke(cli, ["runs", "show", str(tmp_path), info.id, "--project", str(project)])
    assert result.exit_code == 2 and "Two projects were given" in result.output


def test_a_refused_start_prints_every_problem_and_the_warnings(project):
    (project / "bad.hparams").write_text("stop_at_step=5\nstop_at_step=6\noptimizer=adamm\nlerning_rate=0.1\n")
    result = workbench("train", str(project), "--hparams", str(project / "bad.hparams"))
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("warning: bad.hparams:2: stop_at_step is set again")
    assert lines[1].startswith("bad.hparams:3: ") and "adam" in lines[1]
    assert lines[2].startswith("bad.hparams:4: ") and "learning_rate" in lines[2]
    assert lines[3] == "workbench: Not started: 2 problems with the hyper-parameters (above). Fix them and start again."
    assert len(lines) == 4

    (project / "twice.hparams").write_text("stop_at_step=2\nstep_seconds=0\nstop_at_step=3\n")
    started = workbench("train", str(project), "--hparams", str(project / "twice.hparams"))
    assert started.returncode == 0, started.stderr
    assert started.stderr.splitlines()[0].startswith("warning: twice.hparams:3: stop_at_step is set again")
    assert "step=3 loss=" in started.stdout


def test_outside_a_project_the_commands_say_so_and_how_to_make_one(tmp_path):
    for args in (["runs", "list"], ["train"]):
        result = workbench(*args, cwd=tmp_path)
        assert result.returncode == 1, result
        message = result.stderr.strip()
        assert message.startswith(f"workbench: {tmp_path} is not a Workbench project"), message
        assert "workbench.toml" in message and "workbench new" in message and len(message.splitlines()) == 1
        assert "`workbench init`" in message  # a folder of one's own training code
    (tmp_path / "workbench.toml").write_text('[project]\nname = "no-script"\n')
    result = workbench("train", cwd=tmp_path)
    assert result.returncode == 1 and "no [training] script" in result.stderr


def test_runs_show_tells_the_resumes_and_a_completed_run_goes_on_as_a_new_run(project):
    _set(project, "stop_at_step=30\nstep_seconds=0.05\n")
    service = RunService(project)
    info = service.start()
    wait_for(lambda: "step=6 " in (Path(info.run_dir) / "stdout.log").read_text())
    service.stop(info.id)
    first = service.wait(info.id, timeout=20)
    service.wait(service.resume(info.id).id, timeout=30)
    code, output = invoke("runs", "show", info.id, "--project", str(project))
    rows = dict(line.split(":", 1) for line in output.splitlines())
    step = service.get(info.id).resumes[0]["step"]
    assert rows["resumes"].strip().startswith(f"at step {step} on ")
    assert rows["started"].strip() == time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(first.started_at))
    assert rows["can resume"].strip() == "as a new run"

    code, output = invoke("runs", "resume", info.id, "--project", str(project))
    assert code == 1 and "--new --set num_epochs=" in output
    code, output = invoke("runs", "resume", info.id, "--new", "--set", "stop_at_step=33", "--set", "step_seconds=0",
                          "--json", "--project", str(project))
    assert code == 0, output
    more = service.wait(json.loads(output)["id"], timeout=30)
    assert more.state == "completed" and more.final_metrics["step"] == 33
    assert more.overrides == ["stop_at_step=33", "step_seconds=0"]


def test_a_run_stopped_while_starting_is_told_as_not_resumable(project):
    _set(project, "stop_at_step=20\nstep_seconds=0.01\nstartup_seconds=5\n")
    service = RunService(project)
    info = service.start()
    code, output = invoke("runs", "stop", info.id, "--project", str(project))
    assert code == 0 and "no checkpoint yet" in output and "after its current step and checkpoint" not in output
    service.wait(info.id, timeout=20)
    code, output = invoke("runs", "show", info.id, "--project", str(project))
    assert "state:          stopped" in output and "can resume:     no" in output
    assert "error:          stopped before its first checkpoint, so it cannot be resumed; start it again" in output


def test_the_progress_of_a_cluster_start_redraws_one_line_on_a_terminal_and_is_sparse_elsewhere():
    import io

    from workbench.training.backends import RunProgress
    from workbench.clikit import PROGRESS_EVERY_S, ProgressLine

    def sync(done: int, total: int = 80) -> RunProgress:
        return RunProgress(f"Syncing data: 0 of 1 files, {done} MB of {total} MB", done / total, stage="data")

    screen = io.StringIO()
    terminal = ProgressLine(screen, interactive=True)
    terminal(RunProgress("Uploading the code", 0.2, stage="code"))
    for done in range(0, 81, 10):
        terminal(sync(done))
    terminal.close()
    text = screen.getvalue()
    # Every command's progress line: the bar and percentage after the text, cleared at the end.
    assert "\n" not in text and text.count("\r") == 11
    assert text.endswith("80 MB of 80 MB [####################] 100%\x1b[K\r\x1b[K")

    now = [0.0]
    log = io.StringIO()
    elsewhere = ProgressLine(log, interactive=False, clock=lambda: now[0])
    for done in range(0, 81):   # one report a megabyte, a tenth of a second apart
        elsewhere(sync(done))
        now[0] += 0.1
    lines = log.getvalue().splitlines()
    assert [line.split(", ")[-1] for line in lines] == ["0 MB of 80 MB", "20 MB of 80 MB", "40 MB of 80 MB",
                                                        "60 MB of 80 MB", "80 MB of 80 MB"]
    log.truncate(0)
    log.seek(0)
    slow = ProgressLine(log, interactive=False, clock=lambda: now[0])
    for done in range(0, 12):   # a slow link: a megabyte every PROGRESS_EVERY_S / 5 seconds
        slow(sync(done, 100))
        now[0] += PROGRESS_EVERY_S / 5
    assert [line.split(", ")[-1] for line in log.getvalue().splitlines()] == ["0 MB of 100 MB", "5 MB of 100 MB",
                                                                             "10 MB of 100 MB"]


def test_the_commands_the_cli_suggests_name_the_project_when_typed_outside_it(project):
    """`workbench train tiny` from the folder above the project: every command it suggests
    works from there; inside the project they leave the project out."""
    _set(project, "stop_at_step=100000\nstep_seconds=0.03\n")
    above = project.parent
    assert "Start one with `workbench train tiny`." in workbench("runs", "list", "tiny", cwd=above).stdout

    started = workbench("train", "tiny", "--detach", cwd=above)
    run_id = started.stdout.split()[2]
    assert f"`workbench runs logs -f tiny {run_id}`" in started.stdout, started.stdout
    assert f"`workbench runs stop tiny {run_id}`" in started.stdout
    wait_for(lambda: "step=2 " in (project / "runs" / run_id / "stdout.log").read_text())
    assert workbench("runs", "stop", "tiny", run_id, cwd=above).returncode == 0
    RunService(project).wait(run_id, timeout=20)

    resumed = workbench("runs", "resume", "tiny", run_id, cwd=above)
    assert f"Follow it with `workbench runs logs -f tiny {run_id}`." in resumed.stdout, resumed.stdout + resumed.stderr
    inside = workbench("runs", "terminate", run_id, cwd=project / "hparams")
    assert inside.returncode == 0
    wrong = workbench("runs", "show", "tiny", "nope", cwd=above)
    assert "`workbench runs list tiny` shows the runs." in wrong.stderr

    # The summary of a run followed in the foreground, and what the service suggests.
    cli_process = subprocess.Popen([sys.executable, "-m", "workbench", "train", "tiny"], cwd=above,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    second = cli_process.stdout.readline().split()[1]
    assert "step=" in cli_process.stdout.readline() + cli_process.stdout.readline()
    cli_process.send_signal(signal.SIGINT)
    out, err = cli_process.communicate(timeout=30)
    assert f"Resume it with `workbench runs resume tiny {second}`" in err.strip().splitlines()[-1]
    refused = workbench("runs", "resume", "tiny", second, "--set", "step_seconds=0", cwd=above)
    assert f"(`workbench runs resume tiny {second} --new --set …`)" in refused.stderr


def test_a_suggested_command_has_the_project_only_when_needed_and_as_short_as_it_goes(tmp_path):
    from workbench.training.hints import workbench_command

    project = tmp_path / "my runs" / "digits"
    (project / "src").mkdir(parents=True)
    assert workbench_command(project, "runs resume", "R1", cwd=project / "src") == "workbench runs resume R1"
    assert workbench_command(project, "runs resume", "R1", cwd=tmp_path / "my runs") == \
        "workbench runs resume digits R1"
    assert workbench_command(project, "runs resume", "R1", cwd=tmp_path) == "workbench runs resume 'my runs/digits' R1"
    # From elsewhere, "../../../tmp/…" would be longer than the path itself.
    assert workbench_command(project, "train", cwd=Path("/x/y/z")) == f"workbench train '{project}'"

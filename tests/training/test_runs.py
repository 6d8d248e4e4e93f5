"""Runs as real child processes: start, metrics, stop, resume, terminate, failures, crashes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.training.conftest import git, kill_quietly, make_project, process_alive, wait_for
from workbench.training import RunService, TrainingError, read_metrics
from workbench.training.run_spec import trainkit_root
from tests.project_files import write_project_file

pytestmark = pytest.mark.slow


def _steps(path) -> list:
    return [record.get("step") for record in read_metrics(path) if "loss" in record]


def _set(project: Path, text: str) -> None:
    (project / "hparams" / "tiny.hparams").write_text(text)


def test_a_run_completes_with_its_metrics_from_stdout_and_its_folder_filled_in(make_repo):
    project = make_project(make_repo("tiny", files={"README.md": "tiny\n"}))
    service = RunService(project)
    started = service.start(overrides=["step_seconds=0.01"])
    assert started.state in ("running", "completed") and started.pid and started.pgid == started.pid
    info = service.wait(started.id, timeout=30)

    assert info.state == "completed" and info.exit_code == 0 and info.error == ""
    assert info.git_commit == git(project, "rev-parse", "HEAD").strip() and info.git_dirty
    folder = Path(info.run_dir)
    assert _steps(folder / "metrics.jsonl") == list(range(1, 21))
    assert info.final_metrics["step"] == 20 and info.final_metrics["val_acc"] == 0.9
    assert info.metrics_source == "stdout" and info.duration > 0
    assert (folder / "outputs" / "model.pt").read_text() == "weights"
    patch = (folder / "git.patch").read_text()
    assert "+++ b/train.py" in patch and "+++ b/runs/" not in patch  # untracked code in, the runs out
    hparams = (folder / "tiny.hparams").read_text()
    assert "stop_at_step=20" in hparams and "step_seconds=0.01" in hparams
    assert info.hparams["stop_at_step"] == 20 and info.hparams["learning_rate"] > 0  # defaults resolved
    command = json.loads((folder / "command.json").read_text())
    assert command["argv"][1:] == ["train.py", "--hparams", f"runs/{info.id}/tiny.hparams"]
    assert command["env"]["WORKBENCH_RUN_DIR"] == str(folder) and command["env"]["WORKBENCH_RUN_ID"] == info.id
    assert command["env"]["PYTHONPATH"].split(os.pathsep)[0] == str(trainkit_root())
    assert (trainkit_root() / "workbench_trainkit").is_dir()
    assert f"run id {info.id} unbuffered=1" in (folder / "stdout.log").read_text()
    assert [run.id for run in service.list_runs()] == [info.id]
    assert service.get(info.id[:-2]).id == info.id  # a prefix finds it


def test_a_trainer_that_writes_metrics_itself_is_not_counted_twice(service, project):
    _set(project, "stop_at_step=10\nwrite_metrics_file=true\nstep_seconds=0.01\n")
    info = service.wait(service.start().id, timeout=30)
    assert info.state == "completed" and info.metrics_source == "trainer"
    assert _steps(Path(info.run_dir) / "metrics.jsonl") == list(range(1, 11))  # the trainer's lines only


def test_stop_checkpoints_and_resume_continues_in_the_same_run(service, project):
    _set(project, "stop_at_step=40\nstep_seconds=0.05\n")
    info = service.start()
    metrics = Path(info.run_dir) / "metrics.jsonl"
    wait_for(lambda: len(_steps(metrics)) >= 7)
    assert service.stop(info.id).state == "stopping"
    stopped = service.wait(info.id, timeout=20)
    assert stopped.state == "stopped" and stopped.exit_code == 0 and stopped.can_resume
    step = json.loads((Path(info.run_dir) / "checkpoints" / "latest.json").read_text())["step"]
    assert 7 <= step < 40 and _steps(metrics)[-1] == step

    # Steps after the checkpoint would be trained again: a resume drops them, then goes on.
    resumed = service.resume(info.id)
    assert resumed.id == info.id and resumed.state in ("running", "completed")
    done = service.wait(info.id, timeout=30)
    assert done.state == "completed" and done.final_metrics["step"] == 40
    assert _steps(metrics) == list(range(1, 41))
    log = (Path(info.run_dir) / "stdout.log").read_text()
    assert f"stopped at step {step}" in log and f"resumed from step {step}" in log  # appended, not replaced
    assert [run.id for run in service.list_runs()] == [info.id]


def test_resume_as_a_new_run_copies_the_curve_up_to_the_checkpoint(service, project):
    _set(project, "stop_at_step=12\nstep_seconds=0.01\nfail_at_step=11\n")
    first = service.wait(service.start().id, timeout=30)
    assert first.state == "failed" and first.can_resume  # checkpoints at steps 5 and 10
    _set(project, "stop_at_step=12\nstep_seconds=0.01\n")
    (Path(first.run_dir) / "tiny.hparams").write_text("stop_at_step=12\nstep_seconds=0.01\n")  # the fix

    second = service.resume(first.id, new_run=True)
    assert second.id != first.id and second.resumed_from == f"{first.id}@10"
    done = service.wait(second.id, timeout=30)
    assert done.state == "completed"
    assert _steps(Path(done.run_dir) / "metrics.jsonl") == list(range(1, 13))
    assert _steps(Path(first.run_dir) / "metrics.jsonl") == list(range(1, 11))  # the old run is as it was
    assert "resumed from step 10" in (Path(done.run_dir) / "stdout.log").read_text()
    assert [run.id for run in service.list_runs()] == [second.id, first.id]


def test_terminate_kills_the_whole_process_group_with_grandchildren(service, project):
    _set(project, "stop_at_step=100000\nstep_seconds=0.05\nspawn_child=true\nignore_sigterm=true\n")
    info = service.start()
    log = Path(info.run_dir) / "stdout.log"
    grandchild = int(wait_for(lambda: "grandchild pid" in log.read_text() and log.read_text()
                              .split("grandchild pid ")[1].split()[0]))
    assert process_alive(grandchild)
    ended = service.terminate(info.id)
    assert ended.state == "terminated"
    wait_for(lambda: not process_alive(info.pid) and not process_alive(grandchild))
    assert not ended.can_resume and service.list_runs()[0].state == "terminated"


def test_an_exception_in_user_code_fails_the_run_with_its_error_line(service, project):
    _set(project, "stop_at_step=10\nfail_at_step=3\nstep_seconds=0.01\n")
    info = service.wait(service.start().id, timeout=30)
    assert info.state == "failed" and info.exit_code == 1
    assert info.error == "ValueError: boom at step 3"
    assert "Traceback" in (Path(info.run_dir) / "stderr.log").read_text()


def test_a_malformed_hparams_file_refuses_to_start_and_creates_no_run(service, project):
    _set(project, "stop_at_step=10\nlerning_rate=0.1\n")
    with pytest.raises(TrainingError) as raised:
        service.start()
    message = str(raised.value)
    assert "hparams/tiny.hparams:2" in message and "lerning_rate" in message and "learning_rate" in message
    assert message.startswith("Not started: hparams/tiny.hparams:2: ") and raised.value.diagnostics[0].line == 2
    _set(project, "stop_at_step=10\n")
    with pytest.raises(TrainingError, match="--set"):
        service.start(overrides=["stop_at_step=many"])
    assert not (project / "runs").exists() or not any((project / "runs").iterdir())
    assert service.list_runs() == []


def test_a_missing_dataset_folder_refuses_to_start_naming_its_line(service, project):
    _set(project, "stop_at_step=10\ndataset_dir=data/not-synced-yet\n")
    with pytest.raises(TrainingError) as raised:
        service.start()
    assert str(raised.value).startswith(
        "Not started: hparams/tiny.hparams:2: dataset_dir data/not-synced-yet does not exist")
    assert service.list_runs() == []
    (project / "data" / "not-synced-yet").mkdir(parents=True)
    assert service.wait(service.start().id, timeout=60).state == "completed"


def test_a_killed_supervisor_leaves_a_run_the_list_reconciles(service, project):
    _set(project, "stop_at_step=25\nstep_seconds=0.04\n")
    info = service.start()
    os.kill(info.supervisor_pid, signal.SIGKILL)
    # The trainer never needed its supervisor: it trains on, and the run shows as running.
    assert service.list_runs()[0].state == "running"
    wait_for(lambda: not process_alive(info.pid), timeout=20)
    lost = service.list_runs()[0]
    assert lost.state == "lost" and "supervisor was killed" in lost.error and lost.ended_at
    assert "end was not seen" in lost.error and "outputs are kept" in lost.error
    assert "step=25" in (Path(info.run_dir) / "stdout.log").read_text()


def test_the_history_survives_a_crash_mid_run(service, project):
    _set(project, "stop_at_step=100000\nstep_seconds=0.02\n")
    info = service.start()
    wait_for(lambda: _steps(Path(info.run_dir) / "metrics.jsonl"))
    # A crash: the supervisor and the whole trainer group die at once, mid-write.
    os.kill(info.supervisor_pid, signal.SIGKILL)
    os.killpg(info.pgid, signal.SIGKILL)
    wait_for(lambda: not process_alive(info.pid))
    with sqlite3.connect(project / ".workbench" / "runs.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    history = RunService(project).list_runs()  # as a window opened afterwards sees it
    assert [(run.id, run.state) for run in history] == [(info.id, "lost")]
    assert history[0].final_metrics["step"] >= 1


def test_deleting_a_run_folder_drops_the_run_from_the_history(service, project):
    import shutil

    _set(project, "stop_at_step=2\nstep_seconds=0\n")
    first = service.wait(service.start().id, timeout=30)
    second = service.wait(service.start().id, timeout=30)
    shutil.rmtree(first.run_dir)
    assert [run.id for run in RunService(project).list_runs()] == [second.id]
    with pytest.raises(TrainingError, match="no run"):
        service.get(first.id)
    service.delete(second.id)
    assert service.list_runs() == [] and not Path(second.run_dir).exists()


def test_a_run_outlives_the_cli_that_started_it(project):
    _set(project, "stop_at_step=30\nstep_seconds=0.03\n")
    cli = subprocess.Popen([sys.executable, "-m", "workbench", "train", str(project)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    first_line = cli.stdout.readline()
    assert first_line.startswith("Run "), first_line + cli.stderr.read()
    run_id = first_line.split()[1]
    cli.kill()
    cli.wait()
    service = RunService(project)
    info = service.wait(run_id, timeout=30)
    assert info.state == "completed" and info.final_metrics["step"] == 30


def test_more_than_one_process_runs_under_torchrun(service, project):
    _set(project, "stop_at_step=4\nstep_seconds=0\n")
    info = service.wait(service.start(nproc=2).id, timeout=60)
    assert info.state == "completed", (Path(info.run_dir) / "stderr.log").read_text()
    assert info.command[1:5] == ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    log = (Path(info.run_dir) / "stdout.log").read_text()
    assert "rank 0 of 2" in log and "rank 1 of 2" in log
    assert _steps(Path(info.run_dir) / "metrics.jsonl") == [1, 2, 3, 4]


def test_a_pid_that_now_belongs_to_another_process_is_never_signalled():
    from workbench.platform.processes import process_start, signal_group

    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        start = wait_for(lambda: process_start(other.pid))
        assert not signal_group(other.pid, start + 1, signal.SIGKILL)  # a recorded start that differs
        assert other.poll() is None
        assert signal_group(other.pid, start, signal.SIGKILL)
        assert other.wait(timeout=5) == -signal.SIGKILL
    finally:
        kill_quietly(other.pid)


def test_the_supervisor_imports_only_the_standard_library_the_platform_layer_and_the_training_service():
    code = ("import sys; before = set(sys.modules); import workbench.training.supervisor; "
            "print('\\n'.join(sorted(set(sys.modules) - before)))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    outside = [name for name in loaded if name.split(".")[0] not in sys.stdlib_module_names
               and not name.startswith(("workbench.training", "workbench.platform")) and name not in
               ("workbench", "workbench.project", "workbench.project.lazy_exports")]
    assert outside == []


def test_resuming_in_the_same_run_keeps_its_start_and_adds_up_the_time_it_trained(service, project):
    _set(project, "stop_at_step=30\nstep_seconds=0.05\n")
    info = service.start()
    wait_for(lambda: len(_steps(Path(info.run_dir) / "metrics.jsonl")) >= 7)
    service.stop(info.id)
    stopped = service.wait(info.id, timeout=20)
    first_part = stopped.duration
    assert stopped.state == "stopped" and first_part > 0 and stopped.resumes == []
    time.sleep(1.5)  # the run waits to be resumed: not training time

    resumed = service.resume(info.id)
    step = resumed.resumes[0]["step"]
    assert resumed.started_at == stopped.started_at and resumed.resumes == [{"step": step,
                                                                             "time": pytest.approx(time.time(), abs=5)}]
    assert resumed.duration >= first_part  # it goes on from the time trained so far
    done = service.wait(info.id, timeout=30)
    assert done.state == "completed" and done.started_at == stopped.started_at
    assert done.segment_started_at > stopped.ended_at and done.active_seconds == pytest.approx(first_part)
    second_part = done.ended_at - done.segment_started_at
    assert done.duration == pytest.approx(first_part + second_part)
    assert done.duration < done.ended_at - done.started_at - 1.0  # the pause is not counted
    assert service.list_runs()[0].resumes == done.resumes  # the history has them too


def test_a_run_json_from_before_resumes_were_recorded_still_loads():
    from workbench.training import RunInfo

    old = {"id": "20260101-000000-000", "state": "stopped", "run_dir": "/x", "project_dir": "/",
           "started_at": 100.0, "ended_at": 130.0, "resumed_from": None}
    info = RunInfo.from_json(old)
    assert info.resumes == [] and info.active_seconds == 0.0 and info.duration == 30.0


def test_a_completed_run_is_resumed_only_as_a_new_run_with_more_steps(service, project, monkeypatch):
    _set(project, "stop_at_step=10\nstep_seconds=0.01\n")
    monkeypatch.chdir(project)  # the command it suggests is typed in the project
    done = service.wait(service.start().id, timeout=30)
    model = Path(done.run_dir) / "outputs" / "model.pt"
    model.write_text("trained weights")
    assert done.state == "completed" and not done.can_resume and done.can_resume_as_new

    with pytest.raises(TrainingError) as refused:
        service.resume(done.id)
    message = str(refused.value)
    assert "cannot be resumed in the same run" in message and "as a new run" in message
    assert f"workbench runs resume {done.id} --new --set num_epochs=" in message
    assert model.read_text() == "trained weights" and service.get(done.id).state == "completed"
    with pytest.raises(TrainingError, match="--new"):
        service.resume(done.id, overrides=["stop_at_step=15"])  # the same run keeps its hyper-parameters
    with pytest.raises(TrainingError, match="stop_at_stepp"):
        service.resume(done.id, new_run=True, overrides=["stop_at_stepp=15"])
    assert [run.id for run in service.list_runs()] == [done.id]  # a refused resume leaves nothing

    more = service.resume(done.id, new_run=True, overrides=["stop_at_step=15"])
    finished = service.wait(more.id, timeout=30)
    assert finished.state == "completed" and finished.resumed_from == f"{done.id}@10"
    assert finished.overrides == ["stop_at_step=15"] and finished.hparams["stop_at_step"] == 15
    assert "stop_at_step=15" in (Path(finished.run_dir) / "tiny.hparams").read_text()
    assert _steps(Path(finished.run_dir) / "metrics.jsonl") == list(range(1, 16))
    assert "resumed from step 10" in (Path(finished.run_dir) / "stdout.log").read_text()
    assert model.read_text() == "trained weights"  # the completed run is as it was


def test_a_stop_before_the_trainer_catches_it_says_why_the_run_cannot_resume(service, project):
    _set(project, "stop_at_step=20\nstep_seconds=0.01\nstartup_seconds=5\n")
    info = service.start()
    service.stop(info.id)
    stopped = service.wait(info.id, timeout=20)
    assert stopped.state == "stopped" and stopped.exit_code == -signal.SIGTERM
    assert "before its first checkpoint" in stopped.error and "start it again" in stopped.error
    assert not stopped.can_resume and not stopped.can_resume_as_new


def test_after_a_resume_the_error_and_the_log_hold_only_that_segment_s_own_lines(service, project):
    message = "error: could not write checkpoint step-7 (free some space, then resume)"
    _set(project, f"stop_at_step=10\nstep_seconds=0.01\nfail_at_step=7\nfail_message={message}\n")
    first = service.wait(service.start().id, timeout=30)
    assert first.state == "failed" and first.error == message and first.can_resume
    again = service.wait(service.resume(first.id).id, timeout=30)  # the disk is still full
    assert again.state == "failed" and again.error == message
    assert (Path(first.run_dir) / "stderr.log").read_text().splitlines() == [message, message]


def test_a_script_that_takes_no_arguments_gets_none(tmp_path):
    project = tmp_path / "plain"
    project.mkdir()
    write_project_file(project, "plain")
    (project / "train.py").write_text(
        "import argparse\nargparse.ArgumentParser().parse_args()\nprint('step=1 loss=0.5')\n")
    service = RunService(project)
    info = service.wait(service.start().id, timeout=30)
    assert info.state == "completed", (Path(info.run_dir) / "stderr.log").read_text()
    assert info.command[1:] == ["train.py"] and info.final_metrics["loss"] == 0.5

    # With a hyper-parameter file the script gets --hparams; one that does not know it fails
    # with argparse's own words.
    (project / "my.hparams").write_text("batch_size=8\n")
    failed = service.wait(service.start(hparams_file="my.hparams").id, timeout=30)
    assert failed.state == "failed" and failed.exit_code == 2
    assert failed.error == f"train.py: error: unrecognized arguments: --hparams runs/{failed.id}/my.hparams"


def test_training_args_name_the_hparams_file_and_the_run_folder(tmp_path):
    project = tmp_path / "args"
    project.mkdir()
    (project / "workbench.toml").write_text(
        '[project]\nname = "args"\n\n[training]\nscript = "train.py"\nhparams = "my.hparams"\n'
        'args = ["--config", "{hparams}", "--out={run_dir}/outputs"]\n')
    (project / "my.hparams").write_text("batch_size=8\n")
    (project / "train.py").write_text(
        "import argparse, pathlib\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--config')\nparser.add_argument('--out')\n"
        "args = parser.parse_args()\n"
        "text = pathlib.Path(args.config).read_text()\n"
        "(pathlib.Path(args.out) / 'config.txt').write_text(text)\n")
    service = RunService(project)
    info = service.wait(service.start(overrides=["batch_size=4"]).id, timeout=30)
    assert info.state == "completed", (Path(info.run_dir) / "stderr.log").read_text()
    assert info.command[1:] == ["train.py", "--config", f"runs/{info.id}/my.hparams",
                                f"--out=runs/{info.id}/outputs"]
    assert "batch_size=4" in (Path(info.run_dir) / "outputs" / "config.txt").read_text()

    (project / "workbench.toml").write_text(
        '[project]\nname = "args"\n\n[training]\nscript = "train.py"\nargs = ["--fast"]\n')
    with pytest.raises(TrainingError, match=r"\{hparams\}"):
        service.start(overrides=["batch_size=4"])  # the override could not reach the script
    (project / "workbench.toml").write_text('[project]\nname = "args"\n\n[training]\nargs = "--fast"\n')
    with pytest.raises(TrainingError, match="list of strings"):
        service.start()


def test_outside_a_project_or_without_a_script_the_start_says_what_is_missing(tmp_path):
    with pytest.raises(TrainingError, match="not a Workbench project.*workbench new"):
        RunService(tmp_path).start()
    (tmp_path / "workbench.toml").write_text('[project]\nname = "x"\n')
    with pytest.raises(TrainingError, match=r"no \[training\] script"):
        RunService(tmp_path).start()


def test_a_run_being_resumed_long_after_its_creation_is_not_taken_for_lost(service, project):
    _set(project, "stop_at_step=10\nstep_seconds=0.01\nfail_at_step=7\n")
    failed = service.wait(service.start().id, timeout=30)
    folder = Path(failed.run_dir)
    # Resumed a day after it was created, listed before its supervisor has recorded itself.
    data = json.loads((folder / "run.json").read_text())
    data.update(state="starting", created_at=time.time() - 86400, supervisor_pid=None, supervisor_start=None,
                pid=None, pgid=None, resumes=[{"step": 5, "time": time.time()}])
    (folder / "run.json").write_text(json.dumps(data))
    assert service.get(failed.id).state == "starting"


def test_a_run_that_stopped_cleanly_before_the_terminate_reached_it_is_stopped_not_terminated(service, project):
    """Ctrl+C, then Ctrl+C again while the trainer was already saving and exiting with 0: the
    terminate came too late to change anything (simulated: asked for, with no kill sent)."""
    _set(project, "stop_at_step=400\nstep_seconds=0.3\n")
    info = service.start()
    metrics = Path(info.run_dir) / "metrics.jsonl"
    wait_for(lambda: len(_steps(metrics)) >= 2)
    service.stop(info.id)
    (Path(info.run_dir) / "terminate-requested").touch()
    ended = service.wait(info.id, timeout=20)
    assert (ended.state, ended.exit_code) == ("stopped", 0) and ended.can_resume

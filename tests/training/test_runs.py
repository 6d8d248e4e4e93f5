"""Runs as real child processes: start, metrics, stop, resume, terminate, failures, crashes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.training.conftest import git, kill_quietly, make_project, process_alive, wait_for
from workbench.training import RunService, TrainingError, read_metrics
from workbench.training.run_spec import trainkit_root

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
    wait_for(lambda: not process_alive(info.pid) and not process_alive(grandchild), timeout=5)
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
    from workbench.training.processes import process_start, signal_group

    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        start = wait_for(lambda: process_start(other.pid))
        assert not signal_group(other.pid, start + 1, signal.SIGKILL)  # a recorded start that differs
        assert other.poll() is None
        assert signal_group(other.pid, start, signal.SIGKILL)
        assert other.wait(timeout=5) == -signal.SIGKILL
    finally:
        kill_quietly(other.pid)


def test_the_supervisor_imports_only_the_standard_library_and_the_training_service():
    code = ("import sys; before = set(sys.modules); import workbench.training.supervisor; "
            "print('\\n'.join(sorted(set(sys.modules) - before)))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    outside = [name for name in loaded if name.split(".")[0] not in sys.stdlib_module_names
               and not name.startswith("workbench.training") and name not in
               ("workbench", "workbench.project", "workbench.project.atomic_file")]
    assert outside == []

"""Cluster runs end to end through the real sshd: on a plain SSH host (a small fake trainer), and
the digits project on the real single-node Slurm behind it. The run folder here mirrors the
one on the cluster: logs, metrics, state, and at the end the checkpoints and outputs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest

from tests.cluster.run_helpers import (committed, connection_of, end_followers, fake_trainer_project, follower_pid,
                                       save_test_profile, wait_until)
from tests.git.conftest import git_identity  # noqa: F401  (fixture: commits need an author)
from tests.training.conftest import make_project
from workbench.training import RunService, read_metrics

pytestmark = pytest.mark.slow


@pytest.fixture
def ssh_cluster(sshd_server, tmp_path):
    return save_test_profile("box", sshd_server, tmp_path / "remote", scheduler="ssh")


@pytest.fixture
def project(tmp_path):
    root = fake_trainer_project(tmp_path / "tiny", "stop_at_step=20\nstep_seconds=0.01\n")
    yield root
    end_followers(root)


def test_a_run_on_a_plain_ssh_host_is_mirrored_here_and_brings_its_model_back(project, ssh_cluster):
    service = RunService(project)
    stages = []
    started = service.start(cluster="box", progress=lambda report: stages.append(report.stage))

    assert started.backend == "ssh" and started.cluster == "box" and started.job_id
    assert started.state == "pending" and started.remote_run_dir.endswith(f"/runs/{started.id}")
    assert [stage for stage in dict.fromkeys(stages)] == ["connect", "code", "trainkit", "submit", "follow"]
    job_script = (Path(started.run_dir) / "job.sh").read_text()
    assert "setsid" not in job_script and f"{started.remote_run_dir}/tiny.hparams" in job_script

    done = service.wait(started.id, timeout=60)

    folder = Path(done.run_dir)
    assert done.state == "completed", (done.error, (folder / "stderr.log").read_text())
    assert done.exit_code == 0 and done.started_at and done.ended_at
    assert "step=20 loss=0.0500 acc=1.000" in (folder / "stdout.log").read_text()
    steps = [record["step"] for record in read_metrics(folder / "metrics.jsonl") if "loss" in record]
    assert steps == list(range(1, 21))
    assert done.metrics_source == "stdout" and done.final_metrics["val_acc"] == 0.9
    assert (folder / "outputs" / "model.pt").read_text() == "weights"
    assert done.products == ["outputs/model.pt"] and done.pulled_at
    assert json.loads((folder / "checkpoints" / "latest.json").read_text())["step"] == 20
    assert service.list_runs()[0].state == "completed"
    wait_until(lambda: follower_pid(folder) is None, 10, what="the follower to exit")


def test_a_script_of_the_users_own_runs_on_the_host_with_its_changed_flag(tmp_path, ssh_cluster):
    """An adopted project (its script takes argparse flags) is shipped and run as a template's."""
    from tests.training.test_adopted_runs import PROJECT_FILE, SCRIPT

    root = tmp_path / "mine"
    root.mkdir()
    (root / "train.py").write_text(SCRIPT)
    (root / "workbench.toml").write_text(PROJECT_FILE)
    committed(root)
    try:
        service = RunService(root)
        started = service.start(cluster="box", overrides=["lr=0.5", "epochs=2"])
        done = service.wait(started.id, timeout=60)
        folder = Path(done.run_dir)
        assert done.state == "completed", (done.error, (folder / "stderr.log").read_text())
        printed = json.loads((folder / "stdout.log").read_text().splitlines()[0])  # as the script read them
        assert printed["lr"] == 0.5 and printed["epochs"] == 2 and done.hparams["optimizer"] == "adam"
    finally:
        end_followers(root)


def test_a_job_that_fails_on_the_host_shows_its_error_line_and_exit_code(project, ssh_cluster):
    service = RunService(project)
    info = service.start(cluster="box", overrides=["fail_at_step=3"])
    done = service.wait(info.id, timeout=60)
    assert done.state == "failed"
    assert done.error == "ValueError: boom at step 3" and done.exit_code == 1


def test_an_untracked_file_left_out_of_the_code_is_a_warning_on_the_run(project, ssh_cluster):
    (project / "weights_dump.bin").write_bytes(b"\0" * 10_000_001)
    info = RunService(project).start(cluster="box")
    assert [w for w in info.warnings if w.startswith("weights_dump.bin was left out of the code")]
    assert json.loads((Path(info.run_dir) / "git.json").read_text())["branch"]
    assert RunService(project).wait(info.id, timeout=60).state == "completed"


def test_stop_checkpoints_on_the_host_and_the_run_resumes_there(project, ssh_cluster):
    service = RunService(project)
    info = service.start(cluster="box", overrides=["stop_at_step=60", "step_seconds=0.05"])
    metrics = Path(info.run_dir) / "metrics.jsonl"
    wait_until(lambda: len(read_metrics(metrics)) >= 8, 60, what="a few steps")
    assert service.get(info.id).state == "running"

    assert service.stop(info.id).state == "stopping"
    stopped = service.wait(info.id, timeout=60)
    assert stopped.state == "stopped" and stopped.can_resume, stopped.error
    step = json.loads((Path(info.run_dir) / "checkpoints" / "latest.json").read_text())["step"]
    assert 8 <= step < 60

    resumed = service.resume(info.id)
    assert resumed.id == info.id and resumed.job_id != info.job_id
    done = service.wait(info.id, timeout=60)
    assert done.state == "completed", done.error
    steps = [record["step"] for record in read_metrics(metrics) if "loss" in record]
    assert steps == list(range(1, 61)), steps
    assert f"resumed from step {step}" in (Path(info.run_dir) / "stdout.log").read_text()


def test_terminate_kills_the_job_on_the_host(project, ssh_cluster):
    service = RunService(project)
    info = service.start(cluster="box", overrides=["stop_at_step=1000", "step_seconds=0.05", "ignore_sigterm=true"])
    wait_until(lambda: service.get(info.id).state == "running", 60, what="the job to run")
    done = service.terminate(info.id)
    assert done.state == "terminated"


def test_a_run_refused_here_closes_the_connection_made_meanwhile_and_leaves_no_run(project, ssh_cluster,
                                                                                 sshd_server):
    """The connection to the cluster is made while the run is prepared here; hyper-parameters
    that do not check out end both."""
    from workbench.training import TrainingError

    def open_transports():
        return {thread for thread in threading.enumerate() if type(thread).__name__ == "Transport"
                and thread.is_active()}

    service = RunService(project)
    before = open_transports()
    with pytest.raises(TrainingError):
        service.start(cluster="box", hparams_file="missing.hparams")
    time.sleep(1)  # time enough for a connection left to itself to come up

    assert open_transports() <= before
    assert service.list_runs() == [] and not list((project / "runs").glob("*/run.json"))


def test_a_killed_follower_is_started_again_when_the_runs_are_listed(project, ssh_cluster):
    service = RunService(project)
    info = service.start(cluster="box", overrides=["stop_at_step=80", "step_seconds=0.05"])
    first = wait_until(lambda: follower_pid(info.run_dir), 20, what="the follower")
    os.kill(first, signal.SIGKILL)
    wait_until(lambda: follower_pid(info.run_dir) is None, 10, what="the follower to die")

    assert service.list_runs()[0].is_active
    # Listed as the Runs panel lists them (a follower started moments ago is given time first).
    second = wait_until(lambda: service.list_runs() and follower_pid(info.run_dir), 20, interval=0.5,
                        what="a new follower")
    assert second != first
    done = service.wait(info.id, timeout=60)
    assert done.state == "completed", done.error
    steps = [record["step"] for record in read_metrics(Path(info.run_dir) / "metrics.jsonl") if "loss" in record]
    assert steps == list(range(1, 81))


def test_the_follower_reconnects_when_its_connection_is_cut(project, ssh_cluster, sshd_server):
    service = RunService(project)
    info = service.start(cluster="box", overrides=["stop_at_step=80", "step_seconds=0.05"])
    pid = wait_until(lambda: follower_pid(info.run_dir), 20, what="the follower")
    wait_until(lambda: service.get(info.id).state == "running", 20, what="the job to run")
    served = wait_until(lambda: connection_of(pid, sshd_server), 20, what="the follower's connection")
    for child in served:
        os.kill(child, signal.SIGKILL)

    # The run says so while the follower reconnects, and keeps its state.
    noted = wait_until(lambda: (lambda current: current if current.error.startswith("Lost the connection to box")
                                else None)(service.get(info.id)), 20, interval=0.02, what="the lost connection noted")
    assert noted.state == "running"
    done = service.wait(info.id, timeout=60)
    assert done.state == "completed" and done.error == ""
    assert follower_pid(info.run_dir) in (None, pid)  # the same follower carried on
    steps = [record["step"] for record in read_metrics(Path(info.run_dir) / "metrics.jsonl") if "loss" in record]
    assert steps == list(range(1, 81))


def workbench(*args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], capture_output=True, text=True, timeout=timeout)


def test_runs_logs_follow_and_stop_work_on_a_cluster_run_from_the_command_line(project, ssh_cluster):
    started = workbench("train", str(project), "--cluster", "box", "--detach", "--json",
                        "--set", "stop_at_step=400", "--set", "step_seconds=0.05")
    assert started.returncode == 0, started.stderr
    run = json.loads(started.stdout)
    assert run["cluster"] == "box" and run["job_id"] and run["state"] == "pending"
    follow = subprocess.Popen([sys.executable, "-m", "workbench", "runs", "logs", "-f", run["id"],
                               "--project", str(project)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: len(read_metrics(Path(run["run_dir"]) / "metrics.jsonl")) >= 5, 60, what="a few steps")
        stopped = workbench("runs", "stop", run["id"], "--project", str(project))
        assert stopped.returncode == 0 and "on box" in stopped.stdout, stopped.stderr
        output, _ = follow.communicate(timeout=60)
    finally:
        if follow.poll() is None:
            follow.kill()
    assert follow.returncode == 0 and "step=3 loss=" in output and "stopped at step" in output
    listed = workbench("runs", "list", "--project", str(project))
    assert f"(on box, job {run['job_id']})" in listed.stdout and " stopped " in listed.stdout


def test_the_data_sync_progress_is_a_few_lines_when_stderr_is_not_a_terminal(tmp_path, ssh_cluster):
    project = make_project(tmp_path / "tiny", "stop_at_step=2\nstep_seconds=0.01\n")
    with open(project / "workbench.toml", "a") as toml:
        toml.write('\n[cluster]\ndata = ["data/"]\n')
    (project / "data").mkdir()
    (project / "data" / "big.bin").write_bytes(os.urandom(24_000_000))
    (project / ".gitignore").write_text("data/\nruns/\n.workbench/\n")
    committed(project)
    try:
        started = workbench("train", str(project), "--cluster", "box", "--detach")
        assert started.returncode == 0, started.stderr
        assert RunService(project).wait(RunService(project).list_runs()[0].id, timeout=60).state == "completed"
    finally:
        end_followers(project)
    progress = [line for line in started.stderr.splitlines() if line.startswith("data: Syncing data: ")]
    # The first report, then one a quarter of the way (or every few seconds): not one a megabyte.
    assert 2 <= len(progress) <= 6, started.stderr
    assert progress[-1].endswith("24.0 MB of 24.0 MB"), progress


def test_a_run_goes_on_as_a_new_run_on_another_cluster_with_other_resources(project, ssh_cluster, sshd_server,
                                                                          tmp_path):
    save_test_profile("box2", sshd_server, tmp_path / "remote2", scheduler="ssh")
    service = RunService(project)
    local = service.wait(service.start().id, timeout=60)
    assert local.state == "completed" and not local.is_cluster

    moved = workbench("runs", "resume", str(project), local.id, "--new", "--cluster", "box", "--cpus", "2",
                      "--set", "stop_at_step=30", "--json")
    assert moved.returncode == 0, moved.stderr
    first = json.loads(moved.stdout)
    assert (first["cluster"], first["backend"], first["resumed_from"]) == ("box", "ssh", f"{local.id}@20")
    assert first["resources"]["cpus"] == 2 and "submit: " in moved.stderr
    done = service.wait(first["id"], timeout=60)
    assert done.state == "completed", done.error
    assert "resumed from step 20" in (Path(done.run_dir) / "stdout.log").read_text()

    again = workbench("runs", "resume", done.id, "--new", "--cluster", "box2", "--set", "stop_at_step=35",
                      "--project", str(project), "--json")
    assert again.returncode == 0, again.stderr
    second = json.loads(again.stdout)
    assert second["cluster"] == "box2" and second["resources"]["cpus"] == 2
    assert second["remote_run_dir"].startswith(str(tmp_path / "remote2"))
    finished = service.wait(second["id"], timeout=60)
    assert finished.state == "completed", finished.error
    steps = [r["step"] for r in read_metrics(Path(finished.run_dir) / "metrics.jsonl") if "loss" in r]
    assert steps == list(range(1, 36))

    refused = workbench("runs", "resume", done.id, "--cluster", "box2", "--project", str(project))
    assert refused.returncode == 2 and "are for a new run: add --new" in refused.stderr


def test_removing_a_profile_that_active_runs_use_asks_first(project, ssh_cluster):
    from click.testing import CliRunner

    from workbench.cli import cli
    from workbench.cluster.profiles import load_profiles
    from workbench.project import RecentProjects

    RecentProjects().add(project)
    service = RunService(project)
    info = service.start(cluster="box", overrides=["stop_at_step=1000", "step_seconds=0.05"])
    try:
        kept = CliRunner().invoke(cli, ["cluster", "remove", "box"], input="n\n")
        assert kept.exit_code == 1 and "1 run(s) still use box:" in kept.output
        assert info.id in kept.output and str(project) in kept.output
        assert "Remove the cluster profile box anyway? [y/N]" in kept.output
        assert [p.name for p in load_profiles()] == ["box"]

        removed = CliRunner().invoke(cli, ["cluster", "remove", "box", "--yes"])
        assert removed.exit_code == 0 and "still use" not in removed.output
        assert load_profiles() == []
    finally:
        # Followed with the copy of the profile kept in the run folder, the run can still be ended.
        assert service.terminate(info.id).state == "terminated"
    assert CliRunner().invoke(cli, ["cluster", "remove", "box"]).exit_code == 1  # gone: named as such


# ---------------------------------------------------------------------------------------------
# Slurm, through the same sshd


@pytest.fixture
def slurm(slurm_over_ssh, slurm_clean, tmp_path):
    return save_test_profile("hpc", slurm_over_ssh.ssh, tmp_path / "remote", scheduler="slurm",
                             env=slurm_over_ssh.env, partition=slurm_over_ssh.partition)


def digits_project(root: Path) -> Path:
    """The digits template, made as a user makes it (`workbench new --template digits`): a Git
    repository with the template committed, ready to run on a cluster as it is."""
    from click.testing import CliRunner

    from workbench.cli import cli

    result = CliRunner().invoke(cli, ["new", "--template", "digits", str(root)])
    assert result.exit_code == 0, result.output
    return root


def test_the_digits_project_trains_on_slurm_from_the_cli_and_its_model_comes_back(tmp_path, slurm, slurm_over_ssh):
    project = digits_project(tmp_path / "digits")
    memory = f"{min(1024, slurm_over_ssh.cluster.memory_mb)}M"
    try:
        result = subprocess.run([sys.executable, "-m", "workbench", "train", str(project), "--cluster", "hpc",
                                 "--set", "num_epochs=1", "--cpus", "1", "--mem", memory, "--time", "10"],
                                capture_output=True, text=True, timeout=150)
    finally:
        end_followers(project)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert "code: " in result.stderr and "submit: " in result.stderr
    assert "test_acc=" in result.stdout

    [info] = RunService(project).list_runs()
    folder = Path(info.run_dir)
    assert (info.backend, info.cluster, info.state, info.scheduler_state) == ("slurm", "hpc", "completed", "COMPLETED")
    assert info.exit_code == 0 and info.metrics_source == "trainer"
    records = read_metrics(folder / "metrics.jsonl")
    assert [r for r in records if "loss" in r] and records[-1].get("test_acc", 0) > 0.5
    assert info.final_metrics["test_acc"] == records[-1]["test_acc"]
    assert (folder / "outputs" / "model.pt").stat().st_size > 1000
    assert "outputs/model.pt" in info.products and (folder / "checkpoints" / "latest.json").is_file()
    script = (folder / "job.sh").read_text()
    assert f"#SBATCH --mem={memory}" in script and "#SBATCH --time=10" in script
    assert f"#SBATCH --partition={slurm_over_ssh.partition}" in script and "srun " in script

    shown = subprocess.run([sys.executable, "-m", "workbench", "runs", "show", info.id, "--project", str(project)],
                           capture_output=True, text=True, timeout=60)
    assert f"job:            {info.job_id}" in shown.stdout and "hpc (slurm)" in shown.stdout
    pulled = subprocess.run([sys.executable, "-m", "workbench", "runs", "pull", info.id, "--project", str(project)],
                            capture_output=True, text=True, timeout=60)
    assert pulled.returncode == 0 and "0 file(s) fetched" in pulled.stdout, pulled.stdout + pulled.stderr


def test_a_job_that_fails_on_slurm_shows_its_error_line_and_exit_code(project, slurm):
    service = RunService(project)
    info = service.start(cluster="hpc", overrides=["fail_at_step=3"])
    done = service.wait(info.id, timeout=90)
    assert (done.state, done.scheduler_state) == ("failed", "FAILED")
    assert done.error == "ValueError: boom at step 3" and done.exit_code == 1


def test_stop_on_slurm_checkpoints_and_terminate_cancels(project, slurm, slurm_over_ssh):
    service = RunService(project)
    first = service.start(cluster="hpc", overrides=["stop_at_step=1000", "step_seconds=0.05"])
    second = service.start(cluster="hpc", overrides=["stop_at_step=1000", "step_seconds=0.05"])
    metrics = Path(first.run_dir) / "metrics.jsonl"
    wait_until(lambda: len(read_metrics(metrics)) >= 6, 90, what="a few steps")

    service.stop(first.id)
    stopped = service.wait(first.id, timeout=60)
    assert stopped.state == "stopped" and stopped.error == "" and stopped.can_resume
    assert "stopped at step" in (Path(first.run_dir) / "stdout.log").read_text()
    # A stop asked for is a clean end, for the scheduler too: one process runs without torchrun.
    assert (stopped.scheduler_state, stopped.exit_code) == ("COMPLETED", 0)
    job = slurm_over_ssh.cluster.job(first.job_id)
    assert (job["JobState"], job["ExitCode"]) == ("COMPLETED", "0:0")
    assert "torch.distributed.run" not in (Path(first.run_dir) / "job.sh").read_text()
    errors = (Path(first.run_dir) / "stderr.log").read_text()
    assert "Traceback" not in errors
    # Slurm's note that it ended the step is the stop asked for, not an error of the run.
    assert "CANCELLED" not in errors and "error" not in errors, errors
    assert f"workbench: job step {first.job_id}.0 stopped on request" in errors
    # The job's own times, as Slurm recorded them (this machine is the cluster: the same time zone).
    assert stopped.started_at == datetime.fromisoformat(job["StartTime"]).timestamp()
    assert stopped.ended_at == datetime.fromisoformat(job["EndTime"]).timestamp()

    wait_until(lambda: service.get(second.id).state == "running", 60, what="the second job to run")
    cancelled = service.terminate(second.id)
    assert (cancelled.state, cancelled.scheduler_state, cancelled.exit_code) == ("cancelled", "CANCELLED", None)


def test_a_stop_on_slurm_reaches_the_workers_of_torchrun_and_the_job_completes(project, slurm, slurm_over_ssh):
    service = RunService(project)
    info = service.start(cluster="hpc", resources={"cpus": 2, "processes_per_node": 2},
                         overrides=["stop_at_step=1000", "step_seconds=0.05"])
    assert info.nproc == 2
    folder = Path(info.run_dir)
    wait_until(lambda: len(read_metrics(folder / "metrics.jsonl")) >= 6, 120, what="a few steps")

    service.stop(info.id)
    stopped = service.wait(info.id, timeout=90)
    errors = (folder / "stderr.log").read_text()
    assert stopped.state == "stopped" and stopped.error == "" and stopped.can_resume, errors
    output = (folder / "stdout.log").read_text()
    assert "rank 1 of 2" in output and "stopped at step" in output
    assert (stopped.scheduler_state, stopped.exit_code) == ("COMPLETED", 0), errors
    job = slurm_over_ssh.cluster.job(info.job_id)
    assert (job["JobState"], job["ExitCode"]) == ("COMPLETED", "0:0")
    assert "Traceback" not in errors and "SignalException" not in errors


def test_the_job_finds_the_synced_data_and_the_referenced_data_where_the_project_has_them(tmp_path, ssh_cluster):
    shared = tmp_path / "remote-shared" / "labels"
    shared.mkdir(parents=True)
    (shared / "names.txt").write_text("cat dog\n")
    project = tmp_path / "reader"
    (project / "data").mkdir(parents=True)
    (project / "data" / "values.txt").write_text("0.25\n")
    (project / "workbench.toml").write_text(
        '[project]\nname = "reader"\n\n[training]\nscript = "train.py"\n\n'
        f'[cluster]\ndata = ["data/"]\n\n[cluster.data_refs]\n"data/labels" = "{shared}"\n')
    (project / "train.py").write_text(
        "from pathlib import Path\n"
        "import os\n"
        "value = float(Path('data/values.txt').read_text())\n"
        "print(f'step=1 loss={value} names={len(Path(\"data/labels/names.txt\").read_text().split())}')\n"
        "print(f'step=1 loss={value}')\n"
        "out = Path(os.environ['WORKBENCH_RUN_DIR']) / 'outputs'\n"
        "out.mkdir(exist_ok=True)\n"
        "(out / 'model.pt').write_text('w')\n")
    (project / ".gitignore").write_text("data/\nruns/\n.workbench/\n")
    committed(project)
    service = RunService(project)
    stages = []
    try:
        info = service.start(cluster="box", progress=lambda report: stages.append(report.stage))
        done = service.wait(info.id, timeout=60)
    finally:
        end_followers(project)
    assert "data" in stages
    assert done.state == "completed", (done.error, (Path(done.run_dir) / "stderr.log").read_text())
    assert "step=1 loss=0.25 names=2" in (Path(done.run_dir) / "stdout.log").read_text()
    assert done.final_metrics["loss"] == 0.25 and done.products == ["outputs/model.pt"]


def test_a_completed_cluster_run_goes_on_as_a_new_run_from_its_checkpoint(project, ssh_cluster):
    service = RunService(project)
    first = service.wait(service.start(cluster="box").id, timeout=60)
    assert first.state == "completed" and first.can_resume_as_new

    second = service.resume(first.id, new_run=True, overrides=["stop_at_step=30"])
    assert second.id != first.id and second.resumed_from == f"{first.id}@20" and second.cluster == "box"
    done = service.wait(second.id, timeout=60)
    assert done.state == "completed", done.error
    assert "resumed from step 20" in (Path(done.run_dir) / "stdout.log").read_text()
    steps = [record["step"] for record in read_metrics(Path(done.run_dir) / "metrics.jsonl") if "loss" in record]
    assert steps == list(range(1, 31))

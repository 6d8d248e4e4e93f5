"""The job backends without a network: the sbatch and SSH scripts made from the resources, the
scheduler's answers read into states, the remote folder mirrored by offsets and the products
pulled, with a "cluster" that is this machine (commands run by bash, files read directly)."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.cluster.this_machine import LocalSftp, ThisMachine, program_of
from workbench.cluster.errors import ClusterError
from workbench.cluster.jobs import JobSpec, JobState, Resources
from workbench.cluster.mirror import LogMirror, pull_products, start_mirror_at
from workbench.cluster.slurm import NODE_SHELL, SlurmBackend, parse_scontrol
from workbench.cluster.ssh_backend import SshBackend
from workbench.training.metrics import read_metrics
from workbench.training.run_folder import RunFolder
from tests.project_files import write_project_file


def spec(remote: Path | str = "/w/runs/r1", **resources) -> JobSpec:
    remote = str(remote)
    return JobSpec(run_id="r1", remote_run_dir=remote, workdir=f"{remote}/code",
                   script_args=["train.py", "--hparams", f"{remote}/digits.hparams"],
                   resources=Resources(**resources), env={"WORKBENCH_RUN_DIR": remote, "PYTHONPATH": "/w/trainkit/v1"},
                   profile_env={"SLURM_CONF": "/etc/slurm test/slurm.conf"},
                   setup="module load cuda\nsource ~/venv/bin/activate",
                   links={"data": "/shared/data/key/data"})


def sbatch_options(script: str) -> list[str]:
    return [line.split(" ", 1)[1] for line in script.splitlines() if line.startswith("#SBATCH ")]


# ---------------------------------------------------------------------------------------------
# scripts


def test_the_sbatch_script_asks_for_the_resources_and_runs_torchrun_through_srun():
    script = SlurmBackend().script(spec(nodes=2, gpus_per_node=4, cpus=16, mem="64G", time="02:00:00",
                                        partition="gpu", account="vision", qos="high"))
    assert sbatch_options(script) == [
        "--job-name=workbench-r1", "--nodes=2", "--ntasks-per-node=1", "--cpus-per-task=16", "--gpus-per-node=4",
        "--mem=64G", "--time=02:00:00", "--partition=gpu", "--account=vision", "--qos=high",
        "--chdir=/w/runs/r1/code", "--output=/w/runs/r1/stdout.log", "--error=/w/runs/r1/stderr.log",
        "--open-mode=append"]
    srun = next(line for line in script.splitlines() if line.startswith("srun "))
    assert srun == (f"srun --kill-on-bad-exit=1 bash -c {shlex.quote(NODE_SHELL)} workbench-node "
                    'python3 -m torch.distributed.run "--nnodes=$SLURM_NNODES" '
                    '--nproc_per_node=4 "--rdzv_id=$SLURM_JOB_ID" --rdzv_backend=c10d "--rdzv_endpoint=$head:$port" '
                    'train.py --hparams /w/runs/r1/digits.hparams &')
    assert 'head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)' in script
    # The profile's variables come first (Slurm commands need SLURM_CONF), then the set-up lines.
    lines = script.splitlines()
    assert lines.index("export SLURM_CONF='/etc/slurm test/slurm.conf'") < lines.index("module load cuda") \
        < lines.index("source ~/venv/bin/activate") < lines.index(srun)
    assert 'export PYTHONPATH=/w/trainkit/v1"${PYTHONPATH:+:$PYTHONPATH}"' in lines


def test_on_cpus_one_process_a_node_unless_processes_are_asked_for():
    defaults = SlurmBackend().script(spec())
    assert "--gpus-per-node" not in defaults
    assert [o for o in sbatch_options(defaults) if o.startswith(("--mem", "--time", "--partition"))] == []
    assert "--nproc_per_node=4 " in SlurmBackend().script(spec(cpus=4, processes_per_node=4))
    assert "--nproc_per_node=1 " in SlurmBackend().script(spec(nodes=2))
    assert Resources(nodes=3, gpus_per_node=2).world_size == 6


def test_a_single_process_job_runs_the_script_itself_without_torchrun():
    script = SlurmBackend().script(spec(gpus_per_node=1))
    srun = next(line for line in script.splitlines() if line.startswith("srun "))
    assert srun == "srun --kill-on-bad-exit=1 python3 train.py --hparams /w/runs/r1/digits.hparams &"
    assert "torch.distributed.run" not in script and "scontrol show hostnames" not in script


def test_the_shell_around_torchrun_turns_the_stop_signal_into_sigterm_to_the_workers_only(tmp_path):
    """NODE_SHELL on this machine, around a stand-in for torchrun that starts two workers: the
    stop signal (SIGUSR2) reaches every process, as Slurm sends it to a whole step; the
    launcher ignores it and the workers get SIGTERM, exit 0, and the launcher with them."""
    worker = tmp_path / "worker.py"
    worker.write_text(
        "import os, signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: (os.write(1, b'worker stopped\\n'), sys.exit(0)))\n"
        "os.write(1, b'worker ready\\n')\n"
        "time.sleep(60)\n"
        "sys.exit(3)\n")
    launcher = tmp_path / "launcher.py"
    launcher.write_text(
        "import signal, subprocess, sys\n"
        "signal.signal(signal.SIGTERM, lambda *a: sys.exit('launcher got SIGTERM'))\n"
        f"workers = [subprocess.Popen([sys.executable, {str(worker)!r}], start_new_session=True) for _ in range(2)]\n"
        "sys.exit(max(w.wait() for w in workers))\n")
    shell = subprocess.Popen(["bash", "-c", NODE_SHELL, "workbench-node", sys.executable, str(launcher)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert [shell.stdout.readline() for _ in range(2)] == ["worker ready\n"] * 2
    tree = [shell.pid, *_descendants(shell.pid)]
    assert len(tree) == 4  # the shell, the launcher and its two workers
    for pid in tree:
        os.kill(pid, signal.SIGUSR2)
    output, errors = shell.communicate(timeout=20)
    assert shell.returncode == 0, errors
    assert output.count("worker stopped") == 2 and "launcher got SIGTERM" not in errors


def _descendants(pid: int) -> list[int]:
    found, pending = [], [pid]
    while pending:
        parent = pending.pop()
        children = subprocess.run(["pgrep", "-P", str(parent)], capture_output=True, text=True).stdout.split()
        found += [int(child) for child in children]
        pending += [int(child) for child in children]
    return found


def test_resources_a_scheduler_cannot_take_are_refused_before_anything_is_sent():
    for bad in (dict(nodes=0), dict(cpus=-1), dict(mem="lots"), dict(time="tomorrow"), dict(partition="a b"),
                dict(gpus_per_node=True)):
        with pytest.raises(ClusterError):
            SlurmBackend().script(spec(**bad))
    with pytest.raises(ClusterError, match="one machine"):
        SshBackend().script(spec(nodes=2))


def test_the_profile_gives_the_partition_account_and_qos_not_asked_for():
    profile = SimpleNamespace(partition="debug", account="lab", qos="")
    merged = Resources(partition="gpu").with_profile_defaults(profile)
    assert (merged.partition, merged.account, merged.qos) == ("gpu", "lab", "")


def test_the_ssh_script_records_its_group_and_status_and_uses_torchrun_only_for_several_processes():
    single = SshBackend().script(spec())
    assert "python3 train.py --hparams /w/runs/r1/digits.hparams < /dev/null &" in single
    assert "torch.distributed.run" not in single
    assert "--standalone --nproc_per_node=2" in SshBackend().script(spec(processes_per_node=2))
    lines = single.splitlines()
    assert lines.index("trap '' TERM") > next(i for i, line in enumerate(lines) if line.endswith("< /dev/null &"))
    assert lines[-1] == 'exit "$status"'
    assert lines[-2].startswith('echo "$status $(date +%s)" > /w/runs/r1/exit_code.part')


# ---------------------------------------------------------------------------------------------
# the scheduler's answers


class Answers:
    """A connection whose commands get canned answers, by the program they start with."""

    def __init__(self, **answers):
        self.answers = answers
        self.commands: list[str] = []

    def run(self, command, timeout=None, check=True):
        self.commands.append(command)
        for program, (code, stdout) in self.answers.items():
            if program_of(command).startswith(program):
                return SimpleNamespace(code=code, stdout=stdout, stderr="")
        return SimpleNamespace(code=1, stdout="", stderr="")


def squeue(line: str = "", record: str = "") -> tuple[int, str]:
    return 0, f"{line}--squeue 0\n{record}--scontrol 0\n"


def test_slurm_states_come_from_squeue_then_scontrol():
    slurm = SlurmBackend()
    assert slurm.state(Answers(squeue=squeue("PENDING|N/A|Resources\n")), "7") == \
        JobState("pending", "Resources", None, 0, "PENDING")
    assert slurm.state(Answers(squeue=squeue("RUNNING|1796041521|None\n")), "7").state == "running"
    record = "JobId=7 JobName=x JobState=FAILED Reason=NonZeroExitCode Dependency=(null) ExitCode=3:0 Command=/a b\n"
    failed = slurm.state(Answers(squeue=squeue(record=record)), "7")
    assert (failed.state, failed.exit_code, failed.reason) == ("failed", 3, "NonZeroExitCode")
    timed_out = record.replace("FAILED", "TIMEOUT").replace("NonZeroExitCode", "TimeLimit")
    timeout = slurm.state(Answers(squeue=squeue(record=timed_out)), "7")
    assert timeout.state == "failed" and timeout.reason.startswith("the job ran past its time limit")
    assert slurm.state(Answers(squeue=squeue(record="JobId=7 JobState=CANCELLED Reason=None ExitCode=0:15\n")),
                       "7") == JobState("cancelled", "", 0, 15, "CANCELLED")
    assert parse_scontrol("JobId=7 Command=/x y z WorkDir=/w")["Command"] == "/x y z"


def test_slurm_says_when_the_job_started_and_ended_in_seconds_whatever_its_time_zone():
    slurm = SlurmBackend()
    conn = Answers(squeue=squeue("RUNNING|1796041521|None\n"))
    assert slurm.state(conn, "7").started_at == 1796041521
    assert conn.commands[0].startswith("export SLURM_TIME_FORMAT=%s; squeue -h -j 7 -o '%T|%S|%r'")
    record = ("JobId=7 JobState=COMPLETED Reason=None ExitCode=0:0 StartTime=1796041521 EndTime=1796041554 "
              "WorkDir=/w\n")
    done = slurm.state(Answers(squeue=squeue(record=record)), "7")
    assert (done.state, done.started_at, done.ended_at) == ("completed", 1796041521, 1796041554)
    # Pending, a start is only Slurm's guess: none is taken.
    guess = slurm.state(Answers(squeue=squeue("PENDING|1796049999|Priority\n")), "7")
    assert guess.started_at is None and guess.ended_at is None


def test_a_job_the_controller_forgot_has_its_times_from_accounting_or_else_from_its_own_files(tmp_path):
    invalid = "slurm_load_jobs error: Invalid job id specified\n"
    accounted = Forgotten(invalid, sacct=(0, "TIMEOUT|0:15|1796041521|1796041554\n"))
    timed_out = SlurmBackend().state(accounted, "7", str(tmp_path))
    assert (timed_out.state, timed_out.signal, timed_out.started_at, timed_out.ended_at) == \
        ("failed", 15, 1796041521, 1796041554)
    assert timed_out.reason == "the job ran past its time limit"
    assert any(program_of(command).startswith("sacct -n -X -P -j 7") for command in accounted.commands)

    files = Forgotten(invalid, cat=(0, "0 1796041554\n\n--started\n7 1796041521\n"))  # no accounting
    done = SlurmBackend().state(files, "7", str(tmp_path))
    assert (done.state, done.exit_code, done.started_at, done.ended_at) == ("completed", 0, 1796041521, 1796041554)
    other_job = Forgotten(invalid, cat=(0, "0 1796041554\n\n--started\n6 1796041000\n"))
    assert SlurmBackend().state(other_job, "7", str(tmp_path)).started_at is None


def test_the_scripts_record_when_the_job_began_and_ended():
    slurm = SlurmBackend().script(spec())
    assert 'echo "$SLURM_JOB_ID $(date +%s)" > /w/runs/r1/job_started' in slurm
    assert 'echo "$status $(date +%s)" > /w/runs/r1/exit_code.part' in slurm
    ssh = SshBackend().script(spec())
    assert 'echo "$$ ${pgid:-$$} $(date +%s)" > /w/runs/r1/pid.part' in ssh
    assert 'echo "$status $(date +%s)" > /w/runs/r1/exit_code.part' in ssh


class Forgotten(Answers):
    """Slurm answers "Invalid job id" (the job is long gone), or not at all."""

    def __init__(self, stderr: str, **answers):
        super().__init__(**answers)
        self.stderr = stderr

    def run(self, command, timeout=None, check=True):
        result = super().run(command, timeout, check)
        if program_of(command).startswith("squeue"):
            result = SimpleNamespace(code=0, stdout="--squeue 1\n--scontrol 1\n", stderr=self.stderr)
        return result


def test_a_job_slurm_forgot_ends_as_its_script_recorded_and_a_silent_slurm_is_no_end(tmp_path):
    invalid = "slurm_load_jobs error: Invalid job id specified\n" * 2
    assert SlurmBackend().state(Forgotten(invalid, cat=(0, "0\n")), "7", str(tmp_path)).state == "completed"
    assert SlurmBackend().state(Forgotten(invalid), "7", str(tmp_path)).state == "unknown"
    with pytest.raises(ClusterError, match="Unable to contact slurm controller"):
        SlurmBackend().state(Forgotten("slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n"),
                             "7", str(tmp_path))


def test_stop_signals_the_steps_not_srun_and_leaves_a_marker_for_a_job_still_setting_up():
    conn = Answers(touch=(0, ""))
    SlurmBackend().stop(conn, "7", "/w/runs/r1")
    assert conn.commands == ["touch /w/runs/r1/stop-requested; scancel --signal=TERM 7"]
    conn = Answers(touch=(0, ""))
    SlurmBackend().stop(conn, "7", "/w/runs/r1", processes=4)
    assert conn.commands == ["touch /w/runs/r1/stop-requested; scancel --signal=USR2 7"]
    conn = Answers(scancel=(0, ""))
    SlurmBackend().cancel(conn, "7")
    assert conn.commands == ["scancel 7"]


# ---------------------------------------------------------------------------------------------
# a plain SSH host that is this machine


def wait_for_end(backend, conn, job_id, remote, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = backend.state(conn, job_id, str(remote))
        if state.ended:
            return state
        time.sleep(0.05)
    raise AssertionError("the job did not end")


def test_a_detached_job_on_a_plain_host_runs_records_its_status_and_can_be_stopped(tmp_path):
    remote = tmp_path / "remote"
    (remote / "code").mkdir(parents=True)
    (remote / "code" / "train.py").write_text(
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: (print('stopping', flush=True), sys.exit(0)))\n"
        "print('training', flush=True)\n"
        "time.sleep(float(sys.argv[1]))\n"
        "sys.exit(int(sys.argv[2]))\n")
    job = JobSpec(run_id="r1", remote_run_dir=str(remote), workdir=str(remote / "code"),
                  script_args=["train.py", "0.2", "3"])
    backend, conn = SshBackend(), ThisMachine()
    group = backend.submit(conn, job)
    assert backend.quick_state(conn.sftp(), group, str(remote)).state in ("running", "failed")
    failed = wait_for_end(backend, conn, group, remote)
    assert (failed.state, failed.exit_code) == ("failed", 3)
    assert (remote / "stdout.log").read_text() == "training\n"

    job.script_args = ["train.py", "60", "0"]
    group = backend.submit(conn, job)
    assert backend.state(conn, group, str(remote)).state == "running"
    deadline = time.monotonic() + 10
    while "training" not in (remote / "stdout.log").read_text()[9:] and time.monotonic() < deadline:
        time.sleep(0.05)
    backend.stop(conn, group, str(remote))
    stopped = wait_for_end(backend, conn, group, remote)
    assert (stopped.state, stopped.exit_code) == ("completed", 0)
    assert (remote / "stdout.log").read_text().endswith("training\nstopping\n")

    group = backend.submit(conn, job)
    backend.cancel(conn, group, str(remote))
    gone = wait_for_end(backend, conn, group, remote)
    assert gone.state == "unknown" and not (remote / "exit_code").exists()


def test_a_stop_of_several_processes_on_a_plain_host_ends_the_job_cleanly(tmp_path):
    """Under torchrun the workers are signalled, not torchrun: they exit 0 and so does the job,
    with no traceback."""
    remote = tmp_path / "remote"
    (remote / "code").mkdir(parents=True)
    (remote / "code" / "train.py").write_text(
        "import os, signal, sys, time\n"
        "rank = os.environ['RANK']\n"
        "signal.signal(signal.SIGTERM, lambda *a: (print(f'rank {rank} stopping', flush=True), sys.exit(0)))\n"
        "print(f'rank {rank} training', flush=True)\n"
        "time.sleep(60)\n"
        "sys.exit(3)\n")
    job = JobSpec(run_id="r1", remote_run_dir=str(remote), workdir=str(remote / "code"), script_args=["train.py"],
                  resources=Resources(processes_per_node=2), python=sys.executable)
    backend, conn = SshBackend(), ThisMachine()
    group = backend.submit(conn, job)
    deadline = time.monotonic() + 60
    while (remote / "stdout.log").read_text().count(" training") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    backend.stop(conn, group, str(remote), processes=2)
    stopped = wait_for_end(backend, conn, group, remote, timeout=60)
    errors = (remote / "stderr.log").read_text()
    assert (stopped.state, stopped.exit_code) == ("completed", 0), errors
    output = (remote / "stdout.log").read_text()
    assert output.count("rank 0 stopping") == 1 and output.count("rank 1 stopping") == 1, output
    assert "Traceback" not in errors and "SignalException" not in errors


class FakeSbatch(ThisMachine):
    """This machine as a Slurm login node whose ``sbatch`` answers ``answer`` with ``status``;
    the commands sent and any use of SFTP are recorded."""

    def __init__(self, tmp_path: Path, answer: str, status: int = 0):
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        sbatch = bin_dir / "sbatch"
        sbatch.write_text(f"#!/bin/bash\necho \"$@\" >> {shlex.quote(str(tmp_path / 'sbatch.args'))}\n"
                          f"echo {shlex.quote(answer)} >&{2 if status else 1}\nexit {status}\n")
        sbatch.chmod(0o755)
        self.path = f"{bin_dir}:{os.environ['PATH']}"
        self.commands: list[str] = []
        self.sftp_used = False

    def run(self, command, timeout=None, check=True):
        self.commands.append(command)
        return super().run(f"export PATH={shlex.quote(self.path)}; {command}", timeout, check)

    def sftp(self):
        self.sftp_used = True
        return super().sftp()


def test_a_slurm_job_and_its_files_go_up_in_the_command_that_submits_it(tmp_path):
    """One round trip: the hyper-parameters and the script are written by the command that runs
    sbatch, with no SFTP session; the script stays in the run folder."""
    remote = tmp_path / "remote"
    remote.mkdir()
    job = spec(remote)
    slurm = FakeSbatch(tmp_path, "4242")
    hparams = "lr = 0.1\n# a comment with 'quotes' and $dollars\n"

    job_id = SlurmBackend().submit(slurm, job, "#!/bin/bash\necho hi\n", files={f"{remote}/digits.hparams": hparams})

    assert job_id == "4242"
    assert len(slurm.commands) == 1 and not slurm.sftp_used
    assert (remote / "digits.hparams").read_text() == hparams
    assert (remote / "job.sh").read_text() == "#!/bin/bash\necho hi\n"
    assert (tmp_path / "sbatch.args").read_text() == f"--parsable {remote}/job.sh\n"


def test_a_refused_sbatch_says_what_slurm_said(tmp_path):
    remote = tmp_path / "remote"
    remote.mkdir()
    slurm = FakeSbatch(tmp_path, "sbatch: error: Batch job submission failed: Invalid partition name specified", 1)

    with pytest.raises(ClusterError) as refused:
        SlurmBackend().submit(slurm, spec(remote))

    assert str(refused.value) == ("Could not submit the job with sbatch (exit status 1): sbatch: error: Batch job "
                                  "submission failed: Invalid partition name specified")
    assert (remote / "job.sh").is_file()


@pytest.mark.parametrize("backend", [SlurmBackend(), SshBackend()])
def test_job_files_that_cannot_be_written_are_named_as_the_failure(tmp_path, backend):
    slurm = FakeSbatch(tmp_path, "4242")

    with pytest.raises(ClusterError) as refused:
        backend.submit(slurm, spec(tmp_path / "gone"))

    assert str(refused.value).startswith("Could not write the job's files on the cluster: ")
    assert "gone/job.sh" in str(refused.value) and not (tmp_path / "sbatch.args").exists()


def test_job_files_too_big_for_a_command_line_go_over_sftp(tmp_path):
    from workbench.cluster.jobs import INLINE_FILES_MAX

    remote = tmp_path / "remote"
    remote.mkdir()
    slurm = FakeSbatch(tmp_path, "4242")
    big = "x" * (INLINE_FILES_MAX + 1)

    assert SlurmBackend().submit(slurm, spec(remote), "#!/bin/bash\n", files={f"{remote}/big.hparams": big}) == "4242"

    assert slurm.sftp_used and len(slurm.commands) == 1
    assert (remote / "big.hparams").read_text() == big and (remote / "job.sh").read_text() == "#!/bin/bash\n"


class SlurmOnThisMachine(ThisMachine):
    """This machine as the cluster (its files, bash), with Slurm's answers about job 7 played from
    ``answers``: one (squeue line, scontrol record) pair each time the job is asked about while it
    is queued, then ``after_scancel`` once it has been cancelled."""

    def __init__(self, answers: list[tuple[str, str]], after_scancel: list[tuple[str, str]]):
        self.answers, self.after_scancel = list(answers), list(after_scancel)
        self.commands: list[str] = []

    def run(self, command, timeout=None, check=True):
        self.commands.append(command)
        if command.startswith("scancel"):
            self.answers = self.after_scancel
            return SimpleNamespace(code=0, stdout="", stderr="")
        if program_of(command).startswith("squeue"):
            line, record = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
            return SimpleNamespace(code=0, stdout=f"{line}--squeue 0\n{record}--scontrol 0\n", stderr="")
        return super().run(command, timeout, check)

    def close(self):
        pass


WOUND_UP = [("COMPLETING|1796041521|None\n", ""), ("", "JobId=7 JobState=CANCELLED Reason=None ExitCode=0:15\n")]
FORGOTTEN = [("", "")]


@pytest.mark.parametrize("request_file, after_scancel", [("stop-requested", WOUND_UP),
                                                         ("terminate-requested", WOUND_UP),
                                                         ("stop-requested", FORGOTTEN)])
def test_a_job_cancelled_while_pending_has_no_duration(tmp_path, request_file, after_scancel):
    """Cancelled while its nodes were being set up (CONFIGURING, pending to the user), a job goes
    through COMPLETING; or Slurm has forgotten it by the time it is looked at. Either way it never
    ran, so the run has no start and no duration."""
    from click.testing import CliRunner

    from workbench.cli import cli
    from workbench.cluster.follower import Follower
    from workbench.training.run_info import RunInfo
    from workbench.training.service import RunService

    project = tmp_path / "project"
    folder = RunFolder(project / "runs" / "20260101-120000-000")
    folder.path.mkdir(parents=True)
    write_project_file(project)
    remote = tmp_path / "remote"
    remote.mkdir()
    for name in ("stdout.log", "stderr.log"):
        (folder.path / name).touch()
        (remote / name).touch()
    folder.write_info(RunInfo(id=folder.id, state="pending", run_dir=str(folder.path), project_dir=str(project),
                              created_at=time.time(), backend="slurm", cluster="hpc", job_id="7",
                              remote_run_dir=str(remote)))
    start_mirror_at(folder)
    (folder.path / request_file).touch()
    slurm = SlurmOnThisMachine([("CONFIGURING|N/A|None\n", "")], after_scancel)

    assert Follower(folder, connect=lambda info, _folder: slurm).run() == 0

    done = RunService(project).get(folder.id)
    assert any(command.startswith("scancel 7") for command in slurm.commands)
    assert done.state == "cancelled" and done.started_at is None and done.duration is None
    listed = CliRunner().invoke(cli, ["runs", "list", str(project)])
    assert listed.output.splitlines()[1].split()[:3] == [folder.id, "cancelled", "-"], listed.output


# ---------------------------------------------------------------------------------------------
# mirroring and pulling


def run_folder(tmp_path) -> RunFolder:
    folder = RunFolder(tmp_path / "local" / "runs" / "r1")
    folder.path.mkdir(parents=True)
    return folder


def test_the_mirror_appends_what_the_job_wrote_from_where_it_left_off(tmp_path):
    remote = tmp_path / "remote"
    remote.mkdir()
    folder = run_folder(tmp_path)
    start_mirror_at(folder)
    (remote / "stdout.log").write_text("step=1 loss=0.5\nstep=2 lo")
    mirror = LogMirror(folder, str(remote))
    assert mirror.poll(LocalSftp())
    assert folder.stdout_log.read_text() == "step=1 loss=0.5\nstep=2 lo"
    assert [r["loss"] for r in read_metrics(folder.metrics)] == [0.5]  # the cut line waits for its end

    with open(remote / "stdout.log", "a") as out:
        out.write("ss=0.25\n")
    (remote / "stderr.log").write_text("warning\n")
    # A new follower (the first one was killed) goes on from the local files.
    again = LogMirror(folder, str(remote), mirror.metrics_source)
    again.poll(LocalSftp())
    assert folder.stdout_log.read_text() == (remote / "stdout.log").read_text()
    assert folder.stderr_log.read_text() == "warning\n"
    assert [r["loss"] for r in read_metrics(folder.metrics)] == [0.5, 0.25]
    assert again.metrics_source == "stdout"
    assert not again.poll(LocalSftp())


def test_a_trainer_writing_its_own_metrics_is_mirrored_byte_for_byte_after_a_resumed_runs_records(tmp_path):
    remote = tmp_path / "remote"
    remote.mkdir()
    folder = run_folder(tmp_path)
    folder.metrics.write_text('{"step":1,"loss":1.0}\n')          # from the run this one resumes
    start_mirror_at(folder)
    (remote / "metrics.jsonl").write_text('{"step":2,"loss":0.5}\n')
    (remote / "stdout.log").write_text("step=2 loss=0.5\n")
    mirror = LogMirror(folder, str(remote))
    mirror.poll(LocalSftp(), final=True)
    assert mirror.metrics_source == "trainer"
    assert folder.metrics.read_text() == '{"step":1,"loss":1.0}\n{"step":2,"loss":0.5}\n'


def test_pulling_fetches_only_new_or_changed_files_and_the_checkpoint_index_last(tmp_path):
    remote = tmp_path / "remote"
    files = {"checkpoints/step-00000005.pt": "5", "checkpoints/latest.json": '{"file": "step-00000005.pt"}',
             "outputs/model.pt": "weights", "outputs/plots/loss.png": "png", "outcome.json": "{}",
             "code/train.py": "not a product", "outputs/half.pt.part": "partial"}
    for relative, text in files.items():
        (remote / relative).parent.mkdir(parents=True, exist_ok=True)
        (remote / relative).write_text(text)
    folder = run_folder(tmp_path)
    first = pull_products(ThisMachine(), str(remote), folder)
    assert first.fetched[-1] == "checkpoints/latest.json"
    assert sorted(first.fetched) == ["checkpoints/latest.json", "checkpoints/step-00000005.pt", "outcome.json",
                                     "outputs/model.pt", "outputs/plots/loss.png"]
    assert first.outputs == ["outputs/model.pt", "outputs/plots/loss.png"]
    assert (folder.outputs / "model.pt").read_text() == "weights"
    assert folder.latest_checkpoint()["path"].endswith("step-00000005.pt")

    (remote / "outputs" / "model.pt").write_text("better weights")
    second = pull_products(ThisMachine(), str(remote), folder)
    assert second.fetched == ["outputs/model.pt"] and second.unchanged == 4
    assert not list(folder.path.rglob("*.part"))


def test_the_mirror_notes_the_order_the_two_logs_came_in(tmp_path):
    """Stopped, resumed and stopped again: each note of the job comes where it came, not after
    all of the output."""
    from workbench.training.log_order import arrival_segments

    remote = tmp_path / "remote"
    remote.mkdir()
    folder = run_folder(tmp_path)
    start_mirror_at(folder)
    mirror = LogMirror(folder, str(remote))
    arrivals = [("stdout.log", "step=1 loss=0.5\nstopped at step 1\n"), ("stderr.log", "first note\n"),
                ("stdout.log", "workbench: resuming\nstep=2 loss=0.25\n"), ("stdout.log", "stopped at step 2\n"),
                ("stderr.log", "second note\n")]
    for name, text in arrivals:
        with open(remote / name, "a") as out:
            out.write(text)
        mirror.poll(LocalSftp())
    logs = {"stdout": folder.stdout_log.read_bytes(), "stderr": folder.stderr_log.read_bytes()}
    pieces = [logs[stream][start:end].decode() for stream, start, end in arrival_segments(folder.path)]
    assert pieces == ["step=1 loss=0.5\nstopped at step 1\n", "first note\n",
                      "workbench: resuming\nstep=2 loss=0.25\nstopped at step 2\n", "second note\n"]
    # From the middle on, as `workbench runs resume -f` shows only what the resume printed.
    offsets = {"stdout": len("step=1 loss=0.5\nstopped at step 1\n"), "stderr": len("first note\n")}
    assert [stream for stream, _, _ in arrival_segments(folder.path, offsets)] == ["stdout", "stderr"]


def test_a_stop_note_is_rewritten_in_place_only_once_whole_and_only_for_a_requested_cancel():
    from workbench.cluster.mirror import quiet_stop_notes

    note = b"slurmstepd-vm: error: *** STEP 2.0 ON vm CANCELLED AT 2026-05-09T12:14:59 ***"
    quiet = quiet_stop_notes(b"saved\n" + note + b"\n")
    assert quiet == b"saved\n" + b"workbench: job step 2.0 stopped on request".ljust(len(note)) + b"\n"
    job = b"slurmstepd: error: *** JOB 2 ON vm CANCELLED AT 2026-05-09T12:14:59 ***\n"
    assert quiet_stop_notes(job).startswith(b"workbench: job 2 stopped on request ")
    # Cut in two by the copy: the piece waits for the rest.
    assert quiet_stop_notes(b"saved\n" + note[:12], hold_partial=True) == b"saved\n"
    assert quiet_stop_notes(b"loss going down", hold_partial=True) == b"loss going down"
    for kept in (note.replace(b" ***", b" DUE TO TIME LIMIT ***") + b"\n", b"srun: error: vm: task 0: Killed\n"):
        assert quiet_stop_notes(kept) == kept

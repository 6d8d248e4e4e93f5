"""The test Slurm itself: jobs run, fail and are cancelled as on a real cluster, also through sshd."""

from __future__ import annotations

import shlex

import pytest

from tests.services import slurm as slurm_module

pytestmark = pytest.mark.slow


def test_a_submitted_job_completes_and_writes_its_output(slurm_clean, tmp_path):
    output = tmp_path / "out.txt"
    job_id = slurm_clean.submit("#!/bin/bash\necho hello from $SLURM_JOB_ID\nsrun echo step on $(hostname -s)\n",
                                "-o", str(output), "-p", slurm_clean.partition)

    info = slurm_clean.wait_for_job(job_id)

    assert info["JobState"] == "COMPLETED"
    assert info["ExitCode"] == "0:0"
    assert info["Partition"] == "debug"
    assert output.read_text().splitlines() == [f"hello from {job_id}", f"step on {slurm_clean.node}"]
    listed = slurm_clean.run("squeue", "-h", "-t", "all", "-j", job_id, "-o", "%i %T", check=True)
    assert listed.stdout.split() == [job_id, "COMPLETED"]


def test_a_job_submitted_over_ssh_completes(slurm_over_ssh, slurm_clean, tmp_path):
    output = tmp_path / "remote-out.txt"
    command = (f"sbatch --parsable -p {slurm_over_ssh.partition} -o {shlex.quote(str(output))} "
               f"--wrap 'echo over ssh; echo conf=$SLURM_CONF'")

    submitted = slurm_over_ssh.run(command)

    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip().split(";")[0]
    state = slurm_over_ssh.run(f"scontrol show job -o {job_id}")
    assert state.returncode == 0, state.stderr
    assert slurm_clean.wait_for_job(job_id)["JobState"] == "COMPLETED"
    assert output.read_text().splitlines() == ["over ssh", f"conf={slurm_clean.conf}"]


def test_the_profile_fields_reach_the_sshd(slurm_over_ssh, sshd_server, slurm_cluster):
    assert (slurm_over_ssh.host, slurm_over_ssh.port, slurm_over_ssh.user) == \
        (sshd_server.host, sshd_server.port, sshd_server.user)
    assert slurm_over_ssh.key_file.is_file()
    assert slurm_over_ssh.env == {"SLURM_CONF": str(slurm_cluster.conf)}
    assert slurm_over_ssh.known_hosts_line.startswith(f"[127.0.0.1]:{sshd_server.port} ssh-ed25519 ")
    answer = slurm_over_ssh.run("sinfo -h -o %P:%T")
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout.startswith("debug*:")  # the default partition


def test_scancel_leaves_the_job_cancelled(slurm_clean, tmp_path):
    output = tmp_path / "out.txt"
    job_id = slurm_clean.submit("#!/bin/bash\necho started\nsleep 300\n", "-o", str(output))
    slurm_clean.wait_for_job(job_id, states={"RUNNING"})

    slurm_clean.run("scancel", job_id, check=True)

    info = slurm_clean.wait_for_job(job_id)
    assert info["JobState"] == "CANCELLED"
    assert f"JOB {job_id} ON {slurm_clean.node} CANCELLED" in output.read_text()


def test_a_failing_job_is_failed_with_its_exit_code(slurm_clean, tmp_path):
    output = tmp_path / "out.txt"
    job_id = slurm_clean.submit("#!/bin/bash\necho about to fail >&2\nexit 3\n", "-o", str(output))

    info = slurm_clean.wait_for_job(job_id)

    assert info["JobState"] == "FAILED"
    assert info["ExitCode"] == "3:0"
    assert "about to fail" in output.read_text()
    shown = slurm_clean.run("scontrol", "show", "job", job_id, check=True).stdout
    assert "JobState=FAILED" in shown and "ExitCode=3:0" in shown


def test_missing_programs_fail_with_what_to_install(monkeypatch):
    monkeypatch.setitem(slurm_module._PROGRAMS, "no-such-slurm-daemon", "slurm-wlm")

    with pytest.raises(pytest.fail.Exception, match=r"apt-get install slurm-wlm"):
        slurm_module._check_prerequisites()


def test_scontrol_records_are_parsed_with_spaces_in_values():
    record = slurm_module.parse_scontrol(
        "JobId=7 JobName=my job JobState=PENDING Reason=Resources AllocNode:Sid=vm:12 ExitCode=0:0\n")

    assert record == {"JobId": "7", "JobName": "my job", "JobState": "PENDING", "Reason": "Resources",
                      "AllocNode:Sid": "vm:12", "ExitCode": "0:0"}

"""Jobs on a Slurm cluster: an sbatch script made from the resources, submitted with
``sbatch --parsable``, watched with ``squeue`` (and ``scontrol show job`` once squeue no longer
lists it; ``sacct``, where there is an accounting database, once the controller has forgotten the
job), stopped with ``scancel --signal=…`` (its job steps only, never the batch script) and
cancelled with ``scancel``. Times are asked for as seconds since the epoch
(``SLURM_TIME_FORMAT=%s``), so the cluster's time zone never matters.

A job of one process runs the training script itself through ``srun``; a stop sends it SIGTERM.
A job of several processes runs one ``torchrun`` per node through ``srun``; the rendezvous is the
first node of the allocation, on a port taken from the job id so that two jobs sharing a node do
not meet. torchrun turns a SIGTERM of its own into a traceback and status 1 (though its workers
stop cleanly), so its stop is SIGUSR2 instead, which a small shell around torchrun on each node
turns into a SIGTERM to the workers alone: they checkpoint and exit 0, and torchrun with them, as
a local run stops (``workbench.training.processes.stop_run``).
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from workbench.cluster.errors import ClusterError
from workbench.cluster.jobs import (
    CANCELLED,
    COMPLETED,
    FAILED,
    PENDING,
    RUNNING,
    UNKNOWN,
    EXIT_CODE_FILE,
    STARTED_FILE,
    STOP_FILE,
    JobSpec,
    JobState,
    check_result,
    check_submission,
    exit_code_in,
    environment_lines,
    link_lines,
    read_small_file,
    remote_exit,
    time_in,
    run_ended_lines,
    setup_lines,
    submission_files,
    trainer_argv,
    wait_lines,
    write_files_command,
)

RENDEZVOUS_PORT_BASE = 29500
RENDEZVOUS_PORT_SPAN = 20000
# What a stop sends: the trainer itself takes SIGTERM; the shell around torchrun takes SIGUSR2.
STOP_SIGNAL = "TERM"
WORKERS_STOP_SIGNAL = "USR2"
# The shell around torchrun on each node (``bash -c NODE_SHELL workbench-node TORCHRUN…``). torchrun
# and, through it, the workers start with SIGUSR2 ignored, so it only reaches this shell, which
# sends SIGTERM to torchrun's children (the workers) and waits on, for torchrun's own status.
NODE_SHELL = ('trap "" USR2; "$@" & child=$!; '
              'trap "stopping=1; pkill -TERM -P $child" USR2; '
              'wait $child; status=$?; '
              'while [ -n "$stopping" ]; do stopping=; wait $child; status=$?; done; '
              'exit $status')

_PENDING = {"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "SPECIAL_EXIT"}
_RUNNING = {"RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD"}
_FAILED_BECAUSE = {
    "TIMEOUT": "the job ran past its time limit",
    "OUT_OF_MEMORY": "the job ran out of memory",
    "NODE_FAIL": "a node of the job failed",
    "BOOT_FAIL": "a node of the job failed to boot",
    "DEADLINE": "the job reached its deadline",
    "PREEMPTED": "the job was preempted",
    "REVOKED": "the job was revoked",
}


class SlurmBackend:
    name = "slurm"
    state_interval = 5.0
    stop_resend_s: float | None = 5.0

    # -----------------------------------------------------------------------------------------
    # the script

    def script(self, spec: JobSpec) -> str:
        """The sbatch script of ``spec``: ``#SBATCH`` lines from its resources, the set-up, then
        ``srun`` running the training script (one process) or one torchrun a node."""
        resources = spec.resources.check()
        options = [
            f"--job-name={spec.job_name or 'workbench-' + spec.run_id}",
            f"--nodes={resources.nodes}",
            "--ntasks-per-node=1",
            f"--cpus-per-task={resources.cpus}",
        ]
        if resources.gpus_per_node:
            options.append(f"--gpus-per-node={resources.gpus_per_node}")
        for name, value in (("mem", resources.mem), ("time", resources.time), ("partition", resources.partition),
                            ("account", resources.account), ("qos", resources.qos)):
            if value:
                options.append(f"--{name}={value}")
        options += [
            f"--chdir={spec.workdir}",
            f"--output={spec.stdout_log}",
            f"--error={spec.stderr_log}",
            # A run resumed in the same folder goes on in the same logs.
            "--open-mode=append",
        ]
        for option in options:
            if "\n" in option or " " in option:
                raise ClusterError(f"An sbatch option cannot hold spaces or line breaks: {option!r}.")
        lines = ["#!/bin/bash", f"# Workbench run {spec.run_id}: made from the resources asked for, kept in "
                 "the run folder."]
        lines += [f"#SBATCH {option}" for option in options]
        started = shlex.quote(f"{spec.remote_run_dir}/{STARTED_FILE}")
        lines += ["", f'echo "$SLURM_JOB_ID $(date +%s)" > {started}']
        lines += [*environment_lines(spec), *setup_lines(spec), *link_lines(spec)]
        lines.append(f"cd {shlex.quote(spec.workdir)} || exit 1")
        if resources.world_size == 1:
            command = trainer_argv(spec, None)
        else:
            torchrun = [
                '"--nnodes=$SLURM_NNODES"',
                f"--nproc_per_node={resources.nproc_per_node}",
                '"--rdzv_id=$SLURM_JOB_ID"',
                "--rdzv_backend=c10d",
                '"--rdzv_endpoint=$head:$port"',
            ]
            command = f"bash -c {shlex.quote(NODE_SHELL)} workbench-node {trainer_argv(spec, torchrun)}"
            lines += [
                'head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
                f"port=$(( {RENDEZVOUS_PORT_BASE} + SLURM_JOB_ID % {RENDEZVOUS_PORT_SPAN} ))",
            ]
        lines += [
            f"if [ -e {shlex.quote(spec.remote_run_dir + '/' + STOP_FILE)} ]; then "
            f"echo 'workbench: stopped before training began'; status=0; {'; '.join(run_ended_lines(spec))}; fi",
            *wait_lines(f"srun --kill-on-bad-exit=1 {command}"),
            *run_ended_lines(spec),
            "",
        ]
        return "\n".join(lines)

    # -----------------------------------------------------------------------------------------
    # the job

    def submit(self, conn: Any, spec: JobSpec, text: str | None = None, *,
               files: dict[str, str] | None = None) -> str:
        """Write ``files`` (remote path -> text) and the script (``text``, default: made from
        ``spec``) and submit it, in one command on the cluster; the job id. A refusal says what
        sbatch said."""
        script = submission_files(spec, text if text is not None else self.script(spec), files)
        command = write_files_command(conn, script) + f"sbatch --parsable {shlex.quote(spec.script_path)}"
        result = check_submission(conn.run(command, check=False), "submit the job with sbatch")
        job_id = result.stdout.strip().splitlines()[-1].split(";")[0].strip() if result.stdout.strip() else ""
        if not job_id.isdigit():
            raise ClusterError(f"sbatch answered {result.stdout.strip()!r} instead of a job id.")
        return job_id

    def state(self, conn: Any, job_id: str, remote_run_dir: str = "") -> JobState:
        """The job's state: from squeue while it lists the job, then from scontrol, then (once
        the controller has forgotten it) from sacct, else from the ``exit_code`` the script
        wrote. ClusterError when Slurm does not answer (its controller is down or busy): that
        says nothing of the job, which goes on."""
        job = shlex.quote(str(job_id))
        # One round trip: squeue's line, then scontrol's record (only read when squeue has none).
        result = conn.run(f"export SLURM_TIME_FORMAT=%s; squeue -h -j {job} -o '%T|%S|%r'; echo \"--squeue $?\"; "
                          f"scontrol show job -o {job}; echo \"--scontrol $?\"", check=False)
        queue, _, rest = result.stdout.partition("--squeue ")
        queue_code, _, rest = rest.partition("\n")
        record, _, _ = rest.partition("--scontrol ")
        line = next((line.strip() for line in queue.splitlines() if "|" in line), "")
        if line:
            word, _, rest = line.partition("|")
            start, _, reason = rest.partition("|")
            word = word.strip()
            if word in _PENDING:
                return _state(word, reason.strip())
            if word in _RUNNING:
                return _state(word, reason.strip(), started_at=time_in(start, 0))
        fields = parse_scontrol(record)
        if fields.get("JobState"):
            word = fields["JobState"]
            code, signal = _exit_code(fields.get("ExitCode", ""))
            return _state(word, fields.get("Reason", ""), code, signal, time_in(fields.get("StartTime"), 0),
                          time_in(fields.get("EndTime"), 0))
        if "Invalid job id" not in result.stderr and (queue_code.strip() != "0" or result.code != 0):
            last = next((text.strip() for text in reversed(result.stderr.splitlines()) if text.strip()),
                        "no answer")
            raise ClusterError(f"Slurm did not answer about job {job_id}: {last}", details=result.stderr)
        accounted = self._accounted_state(conn, job_id)
        if accounted is not None:
            return accounted
        if remote_run_dir:
            code, ended_at, started = remote_exit(conn, remote_run_dir, STARTED_FILE)
            if code is not None:
                started_at = time_in(started, 1) if (started or "").split()[:1] == [str(job_id)] else None
                return JobState(COMPLETED if code == 0 else FAILED, "", code, 0, "", started_at, ended_at)
        return JobState(UNKNOWN, "Slurm no longer knows the job", None, 0, "")

    @staticmethod
    def _accounted_state(conn: Any, job_id: str) -> JobState | None:
        """The job's end as Slurm's accounting recorded it; None where there is no accounting
        (``sacct`` fails) or it has no record of the job."""
        job = shlex.quote(str(job_id))
        result = conn.run(f"export SLURM_TIME_FORMAT=%s; sacct -n -X -P -j {job} -o State,ExitCode,Start,End",
                          check=False)
        if result.code != 0:
            return None
        line = next((line.strip() for line in result.stdout.splitlines() if line.count("|") == 3), "")
        if not line:
            return None
        word, exit_code, start, end = line.split("|")
        # sacct says "CANCELLED by 1000" where scontrol says CANCELLED.
        word = word.split()[0] if word.strip() else ""
        if not word or word in _PENDING or word in _RUNNING:
            return None
        code, signal = _exit_code(exit_code)
        return _state(word, "", code, signal, time_in(start, 0), time_in(end, 0))

    def quick_state(self, sftp: Any, job_id: str, remote_run_dir: str) -> JobState | None:
        """What the job's files say without asking Slurm: it has ended (its script wrote
        ``exit_code``; Slurm is asked how), or it runs (its script has begun); None when they
        say nothing (pending, or ended without a word: Slurm is asked)."""
        code = exit_code_in(read_small_file(sftp, f"{remote_run_dir}/{EXIT_CODE_FILE}"))
        if code is not None:
            return JobState(COMPLETED if code == 0 else FAILED, "", code, 0, "EXITED")
        if (read_small_file(sftp, f"{remote_run_dir}/{STARTED_FILE}") or "").split()[:1] == [str(job_id)]:
            return JobState(RUNNING, "", None, 0, "RUNNING")
        return None

    def stop(self, conn: Any, job_id: str, remote_run_dir: str = "", processes: int = 1) -> None:
        """Ask the job's trainers to checkpoint and exit; the batch script records how they
        ended. ``processes``: the job's trainer processes in all (its resources' world size).

        One process: SIGTERM to the job's step, the trainer itself. Several: SIGUSR2 to the
        steps, which the shell around each node's torchrun turns into SIGTERM to the workers
        alone (see NODE_SHELL). Never to the batch script's own processes (``--full``): srun
        takes a SIGTERM as an order to kill its step at once, before anything is saved. A job
        still in its set-up has no step yet: the ``stop-requested`` file written first keeps it
        from starting one, and the follower sends the signal again (``stop_resend_s``) in case
        the step began meanwhile, or torchrun had not started its workers yet."""
        marker = shlex.quote(f"{remote_run_dir}/{STOP_FILE}") if remote_run_dir else ""
        touch = f"touch {marker}; " if marker else ""
        signal = STOP_SIGNAL if processes <= 1 else WORKERS_STOP_SIGNAL
        check_result(conn.run(f"{touch}scancel --signal={signal} {shlex.quote(str(job_id))}", check=False),
                     f"stop job {job_id}")

    def cancel(self, conn: Any, job_id: str, remote_run_dir: str = "") -> None:
        check_result(conn.run(f"scancel {shlex.quote(str(job_id))}", check=False), f"cancel job {job_id}")


def _state(word: str, reason: str, code: int | None = None, signal: int = 0, started_at: float | None = None,
           ended_at: float | None = None) -> JobState:
    reason = "" if reason in ("None", "(null)") else reason
    if word in _PENDING:
        return JobState(PENDING, reason, None, 0, word)
    if word in _RUNNING:
        return JobState(RUNNING, reason, None, 0, word, started_at)
    if word == "COMPLETED":
        return JobState(COMPLETED, reason, code if code is not None else 0, signal, word, started_at, ended_at)
    if word == "CANCELLED":
        return JobState(CANCELLED, reason, code, signal, word, started_at, ended_at)
    because = _FAILED_BECAUSE.get(word)
    if because:
        reason = f"{because} ({reason})" if reason and reason != "NonZeroExitCode" else because
    return JobState(FAILED, reason, code, signal, word, started_at, ended_at)


def _exit_code(text: str) -> tuple[int | None, int]:
    """``ExitCode=1:0`` as (1, 0): the status and the signal that ended the job."""
    match = re.fullmatch(r"(\d+):(\d+)", text.strip())
    if not match:
        return None, 0
    return int(match.group(1)), int(match.group(2))


_KEY = re.compile(r"[A-Za-z][\w:/]*")


def parse_scontrol(text: str) -> dict[str, str]:
    """One ``scontrol show -o`` record (``Key=Value Key=Value …``) as a dict; a value may
    contain spaces."""
    record: dict[str, str] = {}
    last = None
    for token in text.strip().split(" "):
        key, equals, value = token.partition("=")
        if equals and _KEY.fullmatch(key):
            record[key] = value
            last = key
        elif last is not None and token:
            record[last] += " " + token
    return record

"""Jobs on a plain SSH host (no scheduler): the job script runs detached from the SSH session
(``setsid nohup``), as the leader of a process group of its own.

The script writes ``pid`` (its pid, process group and start time) first and ``exit_code`` (its
status and end time) last, so the job's state is: ended with that status when ``exit_code`` is
there, running while its process group is alive, else gone without a word (killed, or the host
restarted). The times are the host's, so a run's duration is the job's even when no one was
watching as it ended. The job id is the process group.
Stop sends SIGTERM to the group (the training helpers checkpoint and exit), or for several
processes to torchrun's workers alone, as a local run is stopped; cancel sends SIGKILL to the group
and to every process descended from it (torchrun's workers lead groups of their own).
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from workbench.cluster.errors import ClusterError
from workbench.cluster.jobs import (
    EXIT_CODE_FILE,
    COMPLETED,
    FAILED,
    PID_FILE,
    RUNNING,
    UNKNOWN,
    JobSpec,
    JobState,
    check_result,
    check_submission,
    environment_lines,
    exit_code_in,
    link_lines,
    read_small_file,
    run_ended_lines,
    time_in,
    setup_lines,
    submission_files,
    trainer_argv,
    wait_lines,
    write_files_command,
)

# How long submit waits for the detached script to write its pid.
START_WAIT_S = 10


class SshBackend:
    name = "ssh"
    state_interval = 30.0
    stop_resend_s: float | None = None   # the group exists from the start: one signal reaches it

    def script(self, spec: JobSpec) -> str:
        """The job script: records its pid, sets up Python, runs the trainer (under torchrun
        ``--standalone`` for more than one process), records the exit status."""
        resources = spec.resources.check()
        if resources.nodes != 1:
            raise ClusterError(f"A plain SSH host is one machine: it cannot run on {resources.nodes} nodes. "
                               "Ask for 1 node, or use a Slurm cluster.")
        nproc = resources.nproc_per_node
        torchrun = None if nproc == 1 else ["--standalone", f"--nproc_per_node={nproc}"]
        pid_file = shlex.quote(f"{spec.remote_run_dir}/{PID_FILE}")
        lines = [
            "#!/bin/bash",
            f"# Workbench run {spec.run_id} on a plain SSH host; kept in the run folder.",
            'pgid=$(ps -o pgid= -p $$ 2>/dev/null | tr -d " ")',
            f'echo "$$ ${{pgid:-$$}} $(date +%s)" > {pid_file}.part && mv -f {pid_file}.part {pid_file}',
            *environment_lines(spec),
            *setup_lines(spec),
            *link_lines(spec),
            f"cd {shlex.quote(spec.workdir)} || {{ status=1; {'; '.join(run_ended_lines(spec))}; }}",
            *wait_lines(f"{trainer_argv(spec, torchrun)} < /dev/null"),
            *run_ended_lines(spec),
            "",
        ]
        return "\n".join(lines)

    def submit(self, conn: Any, spec: JobSpec, text: str | None = None, *,
               files: dict[str, str] | None = None) -> str:
        """Write ``files`` (remote path -> text) and the script, start it detached with its
        output going to the run's logs, and return its process group once it has recorded it;
        all in one command on the cluster."""
        script = submission_files(spec, text if text is not None else self.script(spec), files)
        folder = shlex.quote(spec.remote_run_dir)
        pid_file = shlex.quote(f"{spec.remote_run_dir}/{PID_FILE}")
        steps = int(START_WAIT_S / 0.05)
        # The job's shell is the leader of a session of its own, holds none of this session's
        # streams (the SSH channel ends at once) and writes into the run's logs.
        command = (write_files_command(conn, script) + f"cd {folder} || exit 1; rm -f {pid_file} exit_code; "
                   f"{{ setsid nohup bash {shlex.quote(spec.script_path)} >> {shlex.quote(spec.stdout_log)} "
                   f"2>> {shlex.quote(spec.stderr_log)} < /dev/null & }}; "
                   f"for i in $(seq {steps}); do [ -s {pid_file} ] && break; sleep 0.05; done; cat {pid_file}")
        result = check_submission(conn.run(command, check=False), "start the job")
        match = re.fullmatch(r"(\d+) (\d+)( \d+)?", result.stdout.strip())
        if not match:
            raise ClusterError(f"The job did not start on the host: it recorded no process id in "
                               f"{START_WAIT_S} s. See {spec.stderr_log} there.")
        return match.group(2)

    def state(self, conn: Any, job_id: str, remote_run_dir: str = "") -> JobState:
        group = _group(job_id)
        exit_file = shlex.quote(f"{remote_run_dir}/{EXIT_CODE_FILE}")
        pid_file = shlex.quote(f"{remote_run_dir}/{PID_FILE}")
        result = conn.run(f"echo \"started $(cat {pid_file} 2>/dev/null)\"; "
                          f"if [ -s {exit_file} ]; then echo \"ended $(cat {exit_file})\"; "
                          f"elif kill -0 -- -{group} 2>/dev/null; then echo running; else echo gone; fi", check=False)
        lines = result.stdout.strip().splitlines()
        pid = lines[0].split()[1:] if lines and lines[0].startswith("started") else []
        # The pid file is this job's when it names its group (a resumed run's folder had others).
        started_at = time_in(" ".join(pid), 2) if pid[1:2] == [group] else None
        answer = lines[-1].split() if lines else []
        if answer[:1] == ["running"]:
            return JobState(RUNNING, "", None, 0, "RUNNING", started_at)
        code = exit_code_in(" ".join(answer[1:])) if answer[:1] == ["ended"] else None
        if code is not None:
            # bash reports a death by signal N as 128 + N.
            signal = code - 128 if code > 128 else 0
            return JobState(COMPLETED if code == 0 else FAILED, "", code, signal, "EXITED", started_at,
                            time_in(" ".join(answer[1:]), 1))
        if answer[:1] == ["gone"]:
            return JobState(UNKNOWN, "the job's processes ended without recording a status (killed, or the "
                                     "host restarted)", None, 0, "GONE", started_at)
        check_result(result, f"look at job {job_id}")
        raise ClusterError(f"Could not tell the state of job {job_id}: the host answered {result.stdout.strip()!r}.")

    def quick_state(self, sftp: Any, job_id: str, remote_run_dir: str) -> JobState | None:
        """The state from files alone: ``exit_code``, else whether ``/proc/<group leader>``
        exists (the job's shell leads its group and lives as long as the job). None where the
        host has no /proc: then the shell is asked."""
        code = exit_code_in(read_small_file(sftp, f"{remote_run_dir}/{EXIT_CODE_FILE}"))
        if code is not None:
            return JobState(COMPLETED if code == 0 else FAILED, "", code, code - 128 if code > 128 else 0, "EXITED")
        try:
            sftp.stat(f"/proc/{_group(job_id)}")
            return JobState(RUNNING, "", None, 0, "RUNNING")
        except OSError:
            return None  # gone, or no /proc: the shell says which

    def stop(self, conn: Any, job_id: str, remote_run_dir: str = "", processes: int = 1) -> None:
        """SIGTERM to the job's process group (the script itself ignores it). With several
        ``processes``, to torchrun's workers (the children of the script's child) instead:
        torchrun turns a SIGTERM of its own into a traceback and status 1, while its workers,
        signalled themselves, checkpoint and exit 0 and torchrun ends with 0 too. Before
        torchrun has started its workers, the group is signalled."""
        group = _group(job_id)
        if processes <= 1:
            conn.run(f"kill -TERM -- -{group} 2>/dev/null || true", check=False)
            return
        conn.run(f"workers=$(for launcher in $(pgrep -P {group}); do pgrep -P \"$launcher\"; done); "
                 f"if [ -n \"$workers\" ]; then kill -TERM $workers; else kill -TERM -- -{group}; fi 2>/dev/null; "
                 "true", check=False)

    def cancel(self, conn: Any, job_id: str, remote_run_dir: str = "") -> None:
        """SIGKILL to the group and to every process descended from its leader."""
        group = _group(job_id)
        tree = ("ps -e -o pid= -o ppid= | awk -v root=" + group + " '{ parent[$1] = $2 } "
                "END { for (pid in parent) { p = pid; n = 0; while ((p in parent) && p != root && p > 1 && n++ < 64) "
                "p = parent[p]; if (p == root) print pid } }'")
        conn.run(f"pids=$({tree}); kill -KILL -- -{group} $pids 2>/dev/null; true", check=False)


def _group(job_id: str) -> str:
    text = str(job_id).strip()
    if not text.isdigit() or int(text) <= 1:
        raise ClusterError(f"{job_id!r} is not the process group of a job on a plain SSH host.")
    return text

"""Jobs on a cluster: the resources a run asks for, what its job runs, and the backends that
submit, watch, stop and cancel it (``slurm.SlurmBackend``, ``ssh_backend.SshBackend``).

A backend is stateless: every call takes the connection (anything with ``run(command,
timeout=None, check=True) -> CommandResult(code, stdout, stderr)`` and ``sftp()``, as
``ClusterConnection`` provides) and the job's id. The job script is made from a ``JobSpec``
by ``backend.script(spec)``; ``submit`` writes it to ``<remote run dir>/job.sh`` (with any other
small files the job needs) and starts it, in one command on the cluster.

Whatever runs the trainer on the cluster writes its output to ``<remote run dir>/stdout.log``
and ``stderr.log`` and, when it ends, its status and the time on the cluster to
``<remote run dir>/exit_code`` (``"0 1746789299"``), so the end of a job and when it came can be
told even once the scheduler has forgotten it, or when no one was watching at that moment.
"""

from __future__ import annotations

import base64
import io
import re
import shlex
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Protocol

from workbench.cluster.errors import ClusterError

PENDING = "pending"
RUNNING = "running"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"
UNKNOWN = "unknown"   # the job is gone and nothing says how it ended
JOB_STATES = (PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, UNKNOWN)
JOB_END_STATES = frozenset({COMPLETED, FAILED, CANCELLED, UNKNOWN})
# The scheduler's words for a job that is ending but not yet over (state RUNNING): they say
# nothing of whether it ever ran, as a pending job cancelled once its nodes were allocated goes
# through them too.
WINDING_UP = frozenset({"COMPLETING", "STAGE_OUT"})

SCRIPT_NAME = "job.sh"
EXIT_CODE_FILE = "exit_code"
PID_FILE = "pid"
STARTED_FILE = "job_started"   # the id of the job whose script has begun and when (Slurm)
STOP_FILE = "stop-requested"   # a stop was asked for: a job still setting up does not start training
# The Python on the cluster after the profile's set-up lines (a venv or conda env provides it).
REMOTE_PYTHON = "python3"
# The job's files go inside the command that submits it, up to this much text in all: the command
# travels as one argument of the login shell (at most 128 KiB on Linux), base64-encoded twice.
INLINE_FILES_MAX = 32 * 1024
# Exit status of a submitting command that could not write the job's files.
WRITE_FAILED = 95

_MEMORY = re.compile(r"^\d+[KMGT]?$", re.IGNORECASE)
_TIME = re.compile(r"^(\d+-)?\d+(:\d+){0,2}$")
_NAME = re.compile(r"^[\w.@+-]*$")


@dataclass
class Resources:
    """What a job asks the cluster for. Empty strings leave the choice to the scheduler (or the
    profile's default partition, account and QoS)."""

    nodes: int = 1
    gpus_per_node: int = 0
    cpus: int = 1                  # CPUs per task: the one torchrun of each node and its workers
    mem: str = ""                  # per node, Slurm's syntax: "16G", "4000" (MB)
    time: str = ""                 # Slurm's syntax: "30", "02:00:00", "1-12"
    partition: str = ""
    account: str = ""
    qos: str = ""
    processes_per_node: int = 0    # trainer processes a node; 0: one per GPU, or 1 without GPUs

    @property
    def nproc_per_node(self) -> int:
        """The trainer processes torchrun starts on each node."""
        if self.processes_per_node > 0:
            return self.processes_per_node
        return self.gpus_per_node if self.gpus_per_node > 0 else 1

    @property
    def world_size(self) -> int:
        return self.nodes * self.nproc_per_node

    def with_profile_defaults(self, profile) -> "Resources":
        """These resources with the profile's partition, account and QoS where none is given."""
        values = self.to_json()
        for name in ("partition", "account", "qos"):
            if not values[name]:
                values[name] = getattr(profile, name, "") or ""
        return Resources(**values)

    def check(self) -> "Resources":
        """Itself; ClusterError naming the first value that cannot be right."""
        for name in ("nodes", "cpus"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ClusterError(f"Resources: {name} must be a whole number of at least 1, not {value!r}.")
        for name in ("gpus_per_node", "processes_per_node"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ClusterError(f"Resources: {name.replace('_', ' ')} must be a whole number (0 or more), "
                                   f"not {value!r}.")
        if self.mem and not _MEMORY.match(self.mem):
            raise ClusterError(f"Resources: memory {self.mem!r} is not understood. Give a number of megabytes "
                               "or one with a unit, such as 4000, 16G or 512M.")
        if self.time and not _TIME.match(self.time):
            raise ClusterError(f"Resources: time {self.time!r} is not understood. Give minutes (30), "
                               "hours:minutes:seconds (02:00:00) or days-hours (1-12).")
        for name in ("partition", "account", "qos"):
            if not _NAME.match(getattr(self, name)):
                raise ClusterError(f"Resources: {name} {getattr(self, name)!r} has characters a scheduler "
                                   "name cannot have.")
        return self

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict | None) -> "Resources":
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in (data or {}).items() if key in known})


@dataclass
class JobSpec:
    """What a job runs: the trainer's command in the run's code folder on the cluster."""

    run_id: str
    remote_run_dir: str            # absolute: logs, metrics, checkpoints, outputs, job.sh
    workdir: str                   # absolute: the project folder of the code checkout
    script_args: list[str]         # the training script and its arguments (relative to workdir)
    resources: Resources = field(default_factory=Resources)
    env: dict[str, str] = field(default_factory=dict)          # the trainer's variables
    profile_env: dict[str, str] = field(default_factory=dict)  # exported before anything else
    setup: str = ""                # shell lines that make Python (and torch) available
    links: dict[str, str] = field(default_factory=dict)        # workdir-relative name -> remote path
    job_name: str = ""
    python: str = REMOTE_PYTHON

    @property
    def stdout_log(self) -> str:
        return f"{self.remote_run_dir}/stdout.log"

    @property
    def stderr_log(self) -> str:
        return f"{self.remote_run_dir}/stderr.log"

    @property
    def script_path(self) -> str:
        return f"{self.remote_run_dir}/{SCRIPT_NAME}"


@dataclass
class JobState:
    """A job as the cluster sees it now. ``reason`` is the scheduler's (why it waits, how it
    ended); ``exit_code`` the job's status once it has ended (None when unknown), ``signal``
    the signal that ended it (0 when none). ``started_at`` and ``ended_at`` (seconds since the
    epoch, by the cluster's clock) are when the job began running and ended, as the scheduler or
    the job's own files recorded them; None when not known (or not yet)."""

    state: str
    reason: str = ""
    exit_code: int | None = None
    signal: int = 0
    scheduler_state: str = ""      # the scheduler's own word: PENDING, RUNNING, TIMEOUT, ...
    started_at: float | None = None
    ended_at: float | None = None

    @property
    def ended(self) -> bool:
        return self.state in JOB_END_STATES


class JobBackend(Protocol):
    name: str
    # How often a follower asks the scheduler itself (a command on the cluster), in seconds;
    # in between it looks at the files the job writes (``quick_state``), which costs no process.
    state_interval: float

    def script(self, spec: JobSpec) -> str: ...

    def submit(self, conn: Any, spec: JobSpec, text: str | None = None, *,
               files: dict[str, str] | None = None) -> str: ...

    def state(self, conn: Any, job_id: str, remote_run_dir: str = "") -> JobState: ...

    def quick_state(self, sftp: Any, job_id: str, remote_run_dir: str) -> JobState | None: ...

    def stop(self, conn: Any, job_id: str, remote_run_dir: str = "", processes: int = 1) -> None: ...

    def cancel(self, conn: Any, job_id: str, remote_run_dir: str = "") -> None: ...


def get_backend(scheduler: str) -> JobBackend:
    """The backend for a profile's ``scheduler`` ("slurm" or "ssh")."""
    if scheduler == "slurm":
        from workbench.cluster.slurm import SlurmBackend

        return SlurmBackend()
    if scheduler == "ssh":
        from workbench.cluster.ssh_backend import SshBackend

        return SshBackend()
    raise ClusterError(f"Unknown scheduler {scheduler!r}: a cluster profile's scheduler is \"slurm\" or \"ssh\".")


# ---------------------------------------------------------------------------------------------
# What both backends' scripts share


def trainer_argv(spec: JobSpec, torchrun_words: list[str] | None) -> str:
    """The trainer's command line: ``python3 SCRIPT ARGS``, or under torchrun with
    ``torchrun_words`` (shell words, put in as they are, so they may name variables such as
    ``$SLURM_NNODES``): ``python3 -m torch.distributed.run WORDS SCRIPT ARGS``, the launcher of
    the very Python the set-up lines chose, where a bare ``torchrun`` could be another one's."""
    words = [shlex.quote(spec.python)]
    if torchrun_words is not None:
        words += ["-m", "torch.distributed.run", *torchrun_words]
    return " ".join([*words, *map(shlex.quote, spec.script_args)])


def environment_lines(spec: JobSpec) -> list[str]:
    """``export`` lines: the profile's variables, then the trainer's."""
    lines = []
    for name, value in [*spec.profile_env.items(), *spec.env.items()]:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ClusterError(f"{name!r} cannot be the name of an environment variable.")
        if name == "PYTHONPATH":
            lines.append(f'export PYTHONPATH={shlex.quote(value)}"${{PYTHONPATH:+:$PYTHONPATH}}"')
        else:
            lines.append(f"export {name}={shlex.quote(value)}")
    return lines


def link_lines(spec: JobSpec) -> list[str]:
    """Lines that make the project's data on the cluster appear where the project expects it:
    each name (``data``) missing from the code folder becomes a link to the synced or referenced
    data; a folder the code has already (tracked files) gets links to the data's files beside
    its own (``cp -rsn``: nothing of the code is replaced)."""
    lines = []
    for name, source in spec.links.items():
        src = shlex.quote(source.rstrip("/"))
        dst = shlex.quote(f"{spec.workdir}/{name.strip('/')}")
        lines.append(f"if [ -e {src} ]; then if [ -d {dst} ] && [ ! -L {dst} ]; then cp -rsn {src}/. {dst}/; "
                     f"elif [ ! -e {dst} ]; then mkdir -p \"$(dirname {dst})\" && ln -sfn {src} {dst}; fi; fi")
    return lines


def setup_lines(spec: JobSpec) -> list[str]:
    return [line for line in spec.setup.splitlines() if line.strip()]


def run_ended_lines(spec: JobSpec) -> list[str]:
    """Write the trainer's status and the time to ``exit_code`` (atomically) and end with it."""
    target = shlex.quote(f"{spec.remote_run_dir}/{EXIT_CODE_FILE}")
    part = shlex.quote(f"{spec.remote_run_dir}/{EXIT_CODE_FILE}.part")
    return [f'echo "$status $(date +%s)" > {part} && mv -f {part} {target}', 'exit "$status"']


def wait_lines(command: str) -> list[str]:
    """Start ``command`` in the background and wait for it, its status in ``$status``.

    The script's shell ignores SIGTERM once the command runs, so a stop (SIGTERM to the whole
    group or job) reaches the trainer, which checkpoints and exits, while the script lives on to
    record how it ended. The command itself keeps SIGTERM's default: it was started first."""
    return [f"{command} &", "child=$!", "trap '' TERM", 'wait "$child"', "status=$?"]


def write_files_command(conn: Any, files: dict[str, str]) -> str:
    """Shell commands that write ``files`` (remote path -> text) on the cluster, to go first in
    the command that submits the job: one round trip for the files and the submission, where
    SFTP costs a session and a request or three per file. Files too big to travel in a command
    line are put over SFTP now instead. The commands exit with WRITE_FAILED when a file cannot be
    written (the shell says why on stderr); ``check_submission`` turns that into a ClusterError."""
    commands, inline = [], 0
    for path, text in files.items():
        data = text.encode("utf-8")
        if inline + len(data) > INLINE_FILES_MAX:
            conn.sftp().putfo(io.BytesIO(data), path)
            continue
        inline += len(data)
        encoded = shlex.quote(base64.b64encode(data).decode("ascii"))
        commands.append(f"printf %s {encoded} | base64 -d > {shlex.quote(path)} || exit {WRITE_FAILED}; ")
    return "".join(commands)


def submission_files(spec: JobSpec, text: str, files: dict[str, str] | None) -> dict[str, str]:
    """What a submission writes: ``files``, then the job script at ``<remote run dir>/job.sh``
    (the folder exists: the code was checked out in it). It is run by ``sbatch`` or ``bash``, so
    it needs no execute bit."""
    return {**(files or {}), spec.script_path: text}


def check_submission(result: Any, what: str) -> Any:
    """``result`` of a command that wrote a job's files (``write_files_command``) and then did
    ``what``; ClusterError saying which of the two failed, with the cluster's last line."""
    if result.code == WRITE_FAILED:
        last = next((line for line in reversed((result.stderr or result.stdout).splitlines()) if line.strip()),
                    "no message")
        raise ClusterError(f"Could not write the job's files on the cluster: {last.strip()}",
                           details=result.stderr)
    return check_result(result, what)


def read_small_file(sftp: Any, path: str, limit: int = 4096) -> str | None:
    """The text of a small remote file; None when it is not there."""
    try:
        with sftp.open(path, "rb") as handle:
            # Exactly its size: a read past the end costs another round trip.
            size = min(handle.stat().st_size or 0, limit)
            return handle.read(size).decode("utf-8", errors="replace") if size else ""
    except OSError as exc:
        if isinstance(exc, FileNotFoundError) or getattr(exc, "errno", None) == 2:
            return None
        raise


def exit_code_in(text: str | None) -> int | None:
    """The status in the text of an ``exit_code`` file (``"STATUS TIME"``, or ``"STATUS"`` as
    jobs of earlier versions wrote it); None when there is none."""
    words = (text or "").split()
    return int(words[0]) if len(words) in (1, 2) and re.fullmatch(r"-?\d+", words[0]) else None


def time_in(text: str | None, position: int) -> float | None:
    """The time (seconds since the epoch) that is word ``position`` of a job file's text, as
    ``date +%s`` or the scheduler wrote it; None when it has none."""
    words = (text or "").split()
    if len(words) > position and re.fullmatch(r"\d+(\.\d+)?", words[position]) and float(words[position]) > 0:
        return float(words[position])
    return None


def remote_exit(conn: Any, remote_run_dir: str, started_file: str = "") -> tuple[int | None, float | None,
                                                                                   str | None]:
    """``(status, ended at, text of started_file)`` from ``<remote run dir>/exit_code`` (and
    ``started_file`` in the same folder, when named), in one command; Nones for what is not
    there (yet)."""
    folder = remote_run_dir.rstrip("/")
    command = f"cat {shlex.quote(folder + '/' + EXIT_CODE_FILE)} 2>/dev/null; echo; echo --started"
    if started_file:
        command += f"; cat {shlex.quote(folder + '/' + started_file)} 2>/dev/null"
    result = conn.run(command, check=False)
    ended, _, started = result.stdout.partition("--started")
    code = exit_code_in(ended)
    return code, time_in(ended, 1) if code is not None else None, started.strip() or None


def check_result(result: Any, what: str) -> Any:
    """``result`` of a command on the cluster; ClusterError with its last line when it failed."""
    if result.code != 0:
        last = next((line for line in reversed((result.stderr or result.stdout).splitlines()) if line.strip()),
                    "no message")
        raise ClusterError(f"Could not {what} (exit status {result.code}): {last.strip()}")
    return result

"""What is known about one run: its state, processes, source and results (``RunInfo``).

The same record is ``run.json`` in the run folder and a row of the project's run store.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

STARTING = "starting"
RUNNING = "running"
STOPPING = "stopping"
STOPPED = "stopped"
COMPLETED = "completed"
FAILED = "failed"
TERMINATED = "terminated"
LOST = "lost"  # the processes are gone and nothing recorded how they ended (e.g. a reboot)
# Cluster runs only: the job waits in the scheduler's queue; the job was cancelled (scancel).
PENDING = "pending"
CANCELLED = "cancelled"

ACTIVE_STATES = frozenset({STARTING, PENDING, RUNNING, STOPPING})
END_STATES = frozenset({STOPPED, COMPLETED, FAILED, TERMINATED, CANCELLED, LOST})
STATES = (STARTING, PENDING, RUNNING, STOPPING, STOPPED, COMPLETED, FAILED, TERMINATED, CANCELLED, LOST)
# Where a run trains: this machine, or elsewhere through a registered backend (a cluster's
# "slurm" or "ssh", see workbench.training.backends).
LOCAL_BACKEND = "local"

LATEST_CHECKPOINT = Path("checkpoints") / "latest.json"


@dataclass
class RunInfo:
    """One run. Times are seconds since the epoch; paths are absolute unless said otherwise."""

    id: str
    state: str
    run_dir: str
    project_dir: str
    script: str = ""                    # project-relative
    hparams_file: str = ""              # the source file, project-relative ("" if none)
    overrides: list[str] = field(default_factory=list)
    nproc: int = 1
    command: list[str] = field(default_factory=list)
    created_at: float = 0.0
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    pid: int | None = None              # the trainer (leader of its own process group)
    pgid: int | None = None
    resumed_from: str | None = None     # "<run id>@<step>"
    git_commit: str | None = None
    git_dirty: bool = False
    hparams: dict = field(default_factory=dict)
    final_metrics: dict = field(default_factory=dict)
    error: str = ""
    backend: str = "local"
    # Beyond the shared contract:
    hparams_copy: str = ""              # file name of the hyper-parameters as used, in run_dir
    git_branch: str | None = None
    pid_start: int | None = None        # the trainer's start time (clock ticks after boot)
    supervisor_pid: int | None = None
    supervisor_start: int | None = None
    metrics_source: str = ""            # "trainer" (it writes metrics.jsonl), "stdout" or ""
    event_files: list[str] = field(default_factory=list)   # TensorBoard event files read (project-relative)
    # A run resumed in the same run trains in segments. started_at stays the first segment's
    # start; segment_started_at is the current (or last) segment's, and active_seconds the
    # time trained in the segments before it.
    segment_started_at: float | None = None
    active_seconds: float = 0.0
    resumes: list[dict] = field(default_factory=list)   # [{"step": 490, "time": ...}], oldest first
    warnings: list[str] = field(default_factory=list)   # the hyper-parameters' warnings at the start
    # Cluster runs (backend "slurm" or "ssh"); the run folder mirrors the remote one.
    cluster: str = ""                   # the cluster profile's name
    job_id: str | None = None           # Slurm's job id, or the process group on a plain SSH host
    remote_run_dir: str = ""            # the run folder on the cluster
    resources: dict = field(default_factory=dict)       # workbench.cluster.jobs.Resources as JSON
    scheduler_state: str = ""           # the scheduler's word: PENDING, RUNNING, COMPLETED, TIMEOUT, ...
    scheduler_reason: str = ""          # why it waits or how it ended, as the scheduler says
    products: list[str] = field(default_factory=list)   # run-folder-relative files pulled into outputs/
    pulled_at: float | None = None      # when checkpoints/ and outputs/ were last pulled
    # While the follower cannot reach the cluster: {"kind": "connection" (the link is lost) or
    # "scheduler" (it does not answer about the job), "since", "last_try", "next_try": times};
    # empty otherwise. workbench.training.run_text words it.
    outage: dict = field(default_factory=dict)
    # Versions (workbench.registry): the dataset version it trained on, the model version it was
    # fine-tuned from, whether a completed run registers its model, the version it became, and
    # why it did not when it did not.
    dataset_version: str = ""
    from_version: str = ""
    register: bool = True
    model_version: str = ""
    registry_note: str = ""

    @property
    def duration(self) -> float | None:
        """Seconds spent training, over every segment: to the end, or to now while active."""
        if self.started_at is None:
            return None
        start = self.segment_started_at
        if start is None and not self.resumes:
            start = self.started_at  # recorded before segments were (or by hand)
        if start is None:
            return self.active_seconds  # resumed, its trainer not started yet
        end = self.ended_at if self.ended_at is not None and not self.is_active else time.time()
        return self.active_seconds + max(0.0, end - start)

    @property
    def is_active(self) -> bool:
        return self.state in ACTIVE_STATES

    @property
    def is_cluster(self) -> bool:
        """Whether it trains elsewhere, on a cluster (its folder here mirrors the one there)."""
        return self.backend != LOCAL_BACKEND

    @property
    def can_resume(self) -> bool:
        """Whether it can go on in the same run: not active, not completed (its end has been
        run: train further as a new run), and a checkpoint to resume from exists."""
        return self.state != COMPLETED and self.can_resume_as_new

    @property
    def can_resume_as_new(self) -> bool:
        """Whether a new run can start from its last checkpoint: not active, and one exists."""
        return not self.is_active and (Path(self.run_dir) / LATEST_CHECKPOINT).is_file()

    @property
    def effective_overrides(self) -> list[str]:
        """The overrides as they take effect: one per key, the last given (a resume as a new
        run adds its own after those of the run it goes on from), in the order they were last
        given."""
        last: dict[str, str] = {}
        for override in self.overrides:
            key = override.split("=", 1)[0].strip()
            last.pop(key, None)
            last[key] = override
        return list(last.values())

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "RunInfo":
        """The run described by ``data``; unknown keys (from a newer Workbench) are ignored."""
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})

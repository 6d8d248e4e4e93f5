"""Iterations on disk: ``registry/pipeline/iteration_NNNN.json``, written atomically, and the
project's pipeline lock (``registry/pipeline/.lock``), so two iterations never run at once.

An iteration's state is "running", "done", "failed" or "stopped"; each step's is "pending",
"running", "done", "failed" or "skipped", with its times, what it made (``outputs``) and, when
it failed, why (``error``).

An iteration also names what started it (``trigger``: a start by hand, the schedule, a period,
data growth, or the watcher resuming one a dead process left) and every resume after that
(``resumes``), so a record read months later still says why it ran. Records written before
triggers were kept read with an empty ``trigger``.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from workbench.pipeline.errors import PipelineError

PENDING, RUNNING, DONE, FAILED, SKIPPED = "pending", "running", "done", "failed", "skipped"
STOPPED = "stopped"
MANUAL, SCHEDULED, PERIODIC, DATA_GROWN, RESUMED = "manual", "schedule", "every", "data growth", "resume"
TRIGGER_KINDS = (MANUAL, SCHEDULED, PERIODIC, DATA_GROWN, RESUMED)
"""What can start (or resume) an iteration: a user (CLI or the window's Start), the watcher for
``schedule``, ``every`` or ``on_data_growth``, or the watcher resuming after a dead process."""
PIPELINE_FOLDER = "pipeline"
LOCK_FILE = ".lock"


@dataclass
class StepState:
    index: int
    tool: str
    params: dict
    state: str = PENDING
    started_at: float | None = None
    ended_at: float | None = None
    outputs: dict = field(default_factory=dict)
    error: str = ""

    @property
    def seconds(self) -> float | None:
        if self.started_at is None:
            return None
        return round((self.ended_at or time.time()) - self.started_at, 3)

    def to_json(self) -> dict:
        return {**asdict(self), "seconds": self.seconds}

    @classmethod
    def from_json(cls, data: dict) -> "StepState":
        return cls(**{key: data[key] for key in cls.__dataclass_fields__ if key in data})


def trigger_record(kind: str, reason: str, at: float | None = None) -> dict:
    """What started (or resumed) an iteration, as its record keeps it: the kind, why in words,
    which user and machine, and when. PipelineError for a kind that is none of TRIGGER_KINDS."""
    from workbench.registry.store import os_user

    if kind not in TRIGGER_KINDS:
        raise PipelineError(f"{kind!r} is not a kind of trigger (they are {', '.join(TRIGGER_KINDS)}).")
    return {"kind": kind, "reason": reason.strip(), "by": os_user(), "host": socket.gethostname(),
            "at": time.time() if at is None else at}


def trigger_text(trigger: dict | None) -> str:
    """``schedule: daily at 02:00``; ``manual: Start in the window by alice``; ``unknown`` for a
    record from before triggers were kept."""
    if not trigger:
        return "unknown (recorded before iterations kept their trigger)"
    reason = trigger.get("reason") or ""
    return f"{trigger.get('kind', '?')}: {reason}" if reason else str(trigger.get("kind", "?"))


@dataclass
class Iteration:
    version: str
    steps: list[StepState]
    state: str = RUNNING
    created_at: float = field(default_factory=time.time)
    started_at: float | None = None
    ended_at: float | None = None
    error: str = ""
    failed_step: int | None = None
    production_at_start: str = ""
    pid: int | None = None
    host: str = ""
    trigger: dict = field(default_factory=dict)
    resumes: list[dict] = field(default_factory=list)

    @property
    def gates(self) -> list[dict]:
        """Every gate step's results, in order."""
        return [result for step in self.steps if step.tool == "gate" for result in step.outputs.get("results", [])]

    def output(self, key: str, default=None):
        """The last value a finished step gave ``key``."""
        for step in reversed(self.steps):
            if step.state == DONE and key in step.outputs:
                return step.outputs[key]
        return default

    def to_json(self) -> dict:
        return {"version": self.version, "state": self.state, "created_at": self.created_at,
                "started_at": self.started_at, "ended_at": self.ended_at, "error": self.error,
                "failed_step": self.failed_step, "production_at_start": self.production_at_start,
                "pid": self.pid, "host": self.host, "trigger": self.trigger, "resumes": self.resumes,
                "gates": self.gates,
                "steps": [step.to_json() for step in self.steps]}

    @classmethod
    def from_json(cls, data: dict) -> "Iteration":
        fields = {key: data[key] for key in cls.__dataclass_fields__ if key in data and key != "steps"}
        fields["trigger"] = fields.get("trigger") or {}
        fields["resumes"] = fields.get("resumes") or []
        return cls(steps=[StepState.from_json(step) for step in data.get("steps", [])], **fields)


class IterationStore:
    """The iterations of one project, in ``<registry folder>/pipeline``."""

    def __init__(self, registry_folder: Path):
        self.folder = Path(registry_folder) / PIPELINE_FOLDER

    def path(self, version: str) -> Path:
        return self.folder / f"iteration_{version}.json"

    def stop_request(self, version: str) -> Path:
        return self.folder / f"iteration_{version}.stop"

    def versions(self) -> list[str]:
        if not self.folder.is_dir():
            return []
        return sorted(p.stem.removeprefix("iteration_") for p in self.folder.glob("iteration_*.json")
                      if p.stem.removeprefix("iteration_").isdigit())

    def read(self, version: str) -> Iteration:
        path = self.path(version)
        try:
            return Iteration.from_json(json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            known = ", ".join(self.versions()) or "none yet"
            raise PipelineError(f"there is no pipeline iteration {version} (iterations: {known}). "
                                "`workbench pipeline list` shows them.") from None
        except (ValueError, TypeError, KeyError) as exc:
            raise PipelineError(f"{path} is damaged ({exc}); remove it to forget that iteration.") from None

    def write(self, iteration: Iteration) -> None:
        """Atomically: a temporary file, fsync, rename."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.path(iteration.version)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(temporary, "w", encoding="utf-8") as stream:
            json.dump(iteration.to_json(), stream, indent=2)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)


@dataclass
class LockHolder:
    pid: int
    host: str
    user: str
    version: str
    since: float

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.since))
        return f"iteration {self.version} (process {self.pid} of {self.user} on {self.host}, since {when})"

    def is_alive(self) -> bool:
        if self.host != socket.gethostname():
            return True  # another machine's process: cannot look, so trust it
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


class PipelineLock:
    """One iteration at a time per project: a file made with O_EXCL naming who holds it. A lock
    whose process is gone (same machine) is taken over."""

    def __init__(self, store: IterationStore):
        self.path = store.folder / LOCK_FILE

    def holder(self) -> LockHolder | None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return LockHolder(**data)
        except (OSError, ValueError, TypeError):
            return None

    def acquire(self, version: str) -> None:
        from workbench.registry.store import os_user

        self.path.parent.mkdir(parents=True, exist_ok=True)
        record = json.dumps(asdict(LockHolder(os.getpid(), socket.gethostname(), os_user(), version, time.time())))
        for _ in range(2):
            try:
                descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                holder = self.holder()
                if holder is not None and holder.is_alive():
                    raise PipelineError(f"another pipeline iteration runs on this project: {holder.describe()}. "
                                        f"Wait for it, or stop it with `workbench pipeline stop`.") from None
                self.path.unlink(missing_ok=True)  # its process is gone (or it was never written whole)
                continue
            with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
                stream.write(record)
            return
        raise PipelineError(f"could not take the pipeline lock {self.path}; try again.")

    def release(self) -> None:
        holder = self.holder()
        if holder is None or holder.pid == os.getpid():
            self.path.unlink(missing_ok=True)

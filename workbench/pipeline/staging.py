"""Staging pushes: a run's checkpoints on a device slot while it trains, so that the app using
the slot can be watched improving.

``StagingFollower`` follows one run on this machine. The checkpoint taken after each
``every``-th epoch falls due (of several due since the last look, the newest). It is taken as a
hard link (the trainer writes each checkpoint under a temporary name and renames it, so the
linked file is a consistent copy, and the trainer's clean-up of old checkpoints cannot take it
away), converted to ONNX with ``workbench model convert``
in the model tools' job process (with the parameters of the project's declared convert step,
when ``[[pipeline.steps]]`` has one), quantizes it when asked (likewise), and pushes it to the
slot (``staging`` by default) of the devices named, through ``deploy.stage_to_devices``: no
alias moves, and the deploy log records a staging push of that run and epoch.

What is made lies in ``runs/<id>/staging/epoch-EEEE-step-SSSSSSSS/``. A push that fails (the
device is offline, the tool or the device refuses the model) is one line, and the follower
goes on: the next checkpoint tries again. While a push is under way, checkpoints that fall due
are not queued: only the newest is kept, and pushed once the slot is free. When the run ends,
its last checkpoint (the one ``checkpoints/latest.json`` names) is pushed once if no push was
tried of it; a follower stopped on request (``cancel``) ends its push under way and pushes
nothing more.

The epoch of the newest checkpoint is what ``latest.json`` says (the epochs completed, written
with the checkpoint); an older one still kept, which ``latest.json`` no longer names, gets the
newest ``epoch`` the run's ``metrics.jsonl`` logged at or before its step. (The metrics come
from the run's output and can lag behind the checkpoint: taken first, they labelled a
checkpoint with the epoch before it.)
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from workbench.device.deploy import DEFAULT_DEVICE_TIMEOUT_S, DeployReport, stage_to_devices
from workbench.device.errors import DeviceError
from workbench.device.paired import PairedDevices
from workbench.tasks import CancelToken, Cancelled

log = logging.getLogger(__name__)

DEFAULT_STAGING_SLOT = "staging"
STAGING_FOLDER = "staging"
LATEST_CHECKPOINT = Path("checkpoints") / "latest.json"
CHECKPOINT_NAME = re.compile(r"^step-(\d+)\.pt$")
POLL_S = 0.3
# How often a running model tool is looked at for a cancel.
TOOL_POLL_S = 0.05


@dataclass
class StagingPlan:
    """What to push where: every ``every`` epochs to ``slot`` of ``devices``; ``convert`` and
    ``quantize_params`` are the tools' parameters (as `workbench model TOOL` takes them)."""

    devices: list[str]
    every: int = 1
    quantize: bool = False
    slot: str = DEFAULT_STAGING_SLOT
    convert: dict = field(default_factory=dict)
    quantize_params: dict = field(default_factory=dict)
    timeout: float = DEFAULT_DEVICE_TIMEOUT_S

    def check(self) -> None:
        if not self.devices or not all(isinstance(d, str) and d for d in self.devices):
            raise DeviceError("name at least one device to push the checkpoints to (--device NAME)")
        if not isinstance(self.every, int) or isinstance(self.every, bool) or self.every < 1:
            raise DeviceError(f"every must be a whole number of epochs, at least 1, not {self.every!r}")
        from workbench.device.deploy import validate_slot

        validate_slot(self.slot)


def declared_steps(project_dir: Path | str) -> list:
    """The steps the project's ``[pipeline]`` declares, checked ([] when it declares none)."""
    from workbench.pipeline.declaration import read_declaration
    from workbench.pipeline.errors import NoPipelineDeclared

    try:
        return read_declaration(project_dir).steps
    except NoPipelineDeclared:
        return []


def declared_tool_params(steps: list, tool: str) -> dict:
    """The parameters of the first of ``steps`` (declared steps, or an iteration's) that runs
    ``tool`` ({} when none does), so that a staging push converts as the pipeline's own step
    does."""
    for step in steps:
        if step.tool == tool:
            # The model and its output are the staging's own, as they are the pipeline's.
            return {key: value for key, value in step.params.items() if key not in ("model", "output")}
    return {}


@dataclass
class Checkpoint:
    """A checkpoint of the run, as ``latest.json`` names it."""

    file: Path
    step: int
    epoch: int


@dataclass
class StagingPush:
    """One checkpoint's push: ``state`` is switched (every device), partial, failed or
    skipped (a newer one was due before the slot was free)."""

    epoch: int
    step: int
    state: str
    model: str = ""
    sha256: str = ""
    reason: str = ""
    seconds: float = 0.0
    devices: list[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class StagingReport:
    run_id: str
    slot: str
    devices: list[str]
    pushes: list[StagingPush] = field(default_factory=list)
    run_state: str = ""

    @property
    def switched(self) -> list[StagingPush]:
        return [push for push in self.pushes if push.state == "switched"]

    @property
    def last(self) -> StagingPush | None:
        tried = [push for push in self.pushes if push.state != "skipped"]
        return tried[-1] if tried else None

    @property
    def ok(self) -> bool:
        """Whether the last checkpoint pushed switched every device."""
        return self.last is not None and self.last.state == "switched"

    def to_json(self) -> dict:
        return {"run_id": self.run_id, "slot": self.slot, "devices": list(self.devices),
                "run_state": self.run_state, "ok": self.ok,
                "pushes": [push.to_json() for push in self.pushes]}

    def to_text(self) -> str:
        lines = [f"Run {self.run_id} ({self.run_state or 'ended'}): {len(self.switched)} of "
                 f"{len([p for p in self.pushes if p.state != 'skipped'])} checkpoint push(es) to slot "
                 f"{self.slot} of {', '.join(self.devices)} switched every device."]
        for push in self.pushes:
            where = f"  epoch {push.epoch:<4} (step {push.step}) {push.state:<9}"
            lines.append(where + (f" {Path(push.model).name}" if push.state == "switched" else f" {push.reason}"))
        return "\n".join(lines)


class StagingFollower:
    """Follows run ``run_id`` of the project and pushes its checkpoints (see the module).

    ``say`` gets one line per event; ``follow`` blocks until the run ended and the last push
    is done, and returns what was pushed. ``cancel()`` (from any thread) ends it early."""

    def __init__(self, project_dir: Path | str, run_id: str, plan: StagingPlan,
                 say: Callable[[str], None] | None = None, *, paired: PairedDevices | None = None,
                 poll_s: float = POLL_S):
        from workbench.training import RunService
        from workbench.training.errors import TrainingError

        plan.check()
        self.project_dir = Path(project_dir).expanduser().absolute()
        self.plan = plan
        self.say = say or (lambda line: None)
        self.paired = paired
        self.poll_s = poll_s
        self.token = CancelToken()
        self.runs = RunService(self.project_dir)
        try:
            info = self.runs.get(run_id)
        except TrainingError as exc:
            raise DeviceError(str(exc)) from None
        if info.is_cluster:
            raise DeviceError(f"run {info.id} trains on a cluster; staging pushes follow runs on this "
                              "machine only (pull its checkpoints, then push one with `workbench pipeline "
                              "stage` once it ended)")
        self.run_id = info.id
        self.run_dir = Path(info.run_dir)
        self.report = StagingReport(self.run_id, plan.slot, list(plan.devices))
        self._lock = threading.Lock()

    def cancel(self) -> None:
        self.token.cancel()

    # --- following ---------------------------------------------------------------------------

    def follow(self, run_ended: Callable[[], bool] | None = None) -> StagingReport:
        """Push checkpoints as they fall due until the run ended (``run_ended``, by default the
        run's recorded state), then the newest once if none of its pushes was tried."""
        run_ended = run_ended or self._run_ended
        seen_step: int | None = None
        newest: Checkpoint | None = None
        taken_epoch = 0         # the epoch of the newest checkpoint taken
        pending: tuple[Checkpoint, Path] | None = None
        tried_steps: set[int] = set()
        worker: threading.Thread | None = None
        while not self.token.cancelled:
            # Asked before the checkpoint is read: once the run has ended, the read below sees
            # its last checkpoint.
            ended = run_ended()
            latest = self._latest()
            if latest is not None and latest.step != seen_step:
                due = [c for c in self._kept_after(seen_step, latest)
                       if c.epoch % self.plan.every == 0 and c.epoch > taken_epoch
                       and not (ended and c.step != latest.step)]  # an ended run: its last only
                seen_step, newest = latest.step, latest
                for checkpoint in reversed(due):
                    taken = self._take(checkpoint)
                    if taken is not None:
                        taken_epoch = checkpoint.epoch
                        if pending is not None:
                            self._skip(pending, checkpoint)
                        pending = (checkpoint, taken)
                        break
            if (worker is None or not worker.is_alive()) and pending is not None:
                tried_steps.add(pending[0].step)
                worker = threading.Thread(target=self._push, args=pending, daemon=True,
                                          name=f"staging-{self.run_id}")
                pending = None
                worker.start()
            if ended:
                break
            time.sleep(self.poll_s)
        if worker is not None:
            worker.join()
        if self.token.cancelled:
            if pending is not None:
                shutil.rmtree(pending[1], ignore_errors=True)
            self.say(f"staging of run {self.run_id} stopped")
        else:
            if pending is not None and newest is not None and pending[0].step != newest.step:
                self._skip(pending, newest)  # the run's last checkpoint goes instead
                pending = None
            if pending is not None:
                tried_steps.add(pending[0].step)
                self._push(*pending)
            if newest is not None and newest.step not in tried_steps:
                taken = self._take(newest)
                if taken is not None:
                    self._push(newest, taken)
            elif newest is None:
                self.say(f"staging: run {self.run_id} wrote no checkpoint ({self.run_dir / LATEST_CHECKPOINT}); "
                         "nothing was pushed")
        try:
            self.report.run_state = self.runs.get(self.run_id).state
        except Exception:  # the report is what matters; the state is a detail
            log.exception("reading run %s's state", self.run_id)
        return self.report

    def _run_ended(self) -> bool:
        return not self.runs.get(self.run_id).is_active

    def _latest(self) -> Checkpoint | None:
        path = self.run_dir / LATEST_CHECKPOINT
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            step = int(record["step"])
            file = self.run_dir / "checkpoints" / str(record["file"])
            recorded_epoch = int(record.get("epoch") or 0)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.info("%s is not readable yet: %s", path, exc)
            return None
        return Checkpoint(file, step, recorded_epoch or self._epoch_at(step, self._epochs()))

    def _kept_after(self, step: int | None, latest: Checkpoint) -> list[Checkpoint]:
        """The checkpoints still in the run's folder written after ``step``, oldest first,
        ``latest`` last (a trainer keeps a few: a fast one may write several between looks)."""
        epochs = self._epochs()
        found = {latest.step: latest}
        try:
            names = os.listdir(latest.file.parent)
        except OSError:
            names = []
        for name in names:
            match = CHECKPOINT_NAME.match(name)
            if match and (step is None or int(match.group(1)) > step) and int(match.group(1)) < latest.step:
                number = int(match.group(1))
                found[number] = Checkpoint(latest.file.parent / name, number, self._epoch_at(number, epochs))
        return [found[number] for number in sorted(found)]

    def _epochs(self) -> list[tuple[int, int]]:
        """(step, epoch) of each epoch's evaluation the run logged."""
        from workbench.training.metrics import read_metrics

        try:
            records = read_metrics(self.run_dir / "metrics.jsonl")
        except (OSError, ValueError):
            return []
        return [(int(r["step"]), int(r["epoch"])) for r in records
                if isinstance(r.get("epoch"), (int, float)) and isinstance(r.get("step"), (int, float))]

    @staticmethod
    def _epoch_at(step: int, epochs: list[tuple[int, int]]) -> int:
        """The newest epoch evaluated at or before ``step`` (0 when none)."""
        return max((epoch for at, epoch in epochs if at <= step), default=0)

    def _take(self, checkpoint: Checkpoint) -> Path | None:
        """A folder of its own holding the checkpoint (a hard link, else a copy); None when the
        trainer removed the file first."""
        folder = self.run_dir / STAGING_FOLDER / f"epoch-{checkpoint.epoch:04d}-step-{checkpoint.step:08d}"
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        target = folder / f"{self.run_id}-epoch{checkpoint.epoch:04d}.pt"
        try:
            try:
                os.link(checkpoint.file, target)
            except OSError as exc:
                if isinstance(exc, FileNotFoundError):
                    raise
                shutil.copyfile(checkpoint.file, target)
        except FileNotFoundError:
            shutil.rmtree(folder, ignore_errors=True)
            return None
        return folder

    def _skip(self, pending: tuple[Checkpoint, Path], newer: Checkpoint) -> None:
        checkpoint, folder = pending
        shutil.rmtree(folder, ignore_errors=True)
        self._add(StagingPush(checkpoint.epoch, checkpoint.step, "skipped",
                              reason=f"epoch {newer.epoch} was due before the slot was free"))
        self.say(f"staging: epoch {checkpoint.epoch} skipped, epoch {newer.epoch} is newer")

    def _add(self, push: StagingPush) -> None:
        with self._lock:
            self.report.pushes.append(push)

    # --- one push ----------------------------------------------------------------------------

    def _push(self, checkpoint: Checkpoint, folder: Path) -> None:
        """Convert (and quantize) the checkpoint in ``folder`` and push it; every failure is
        one line, never an exception: training goes on."""
        started = time.monotonic()
        push = StagingPush(checkpoint.epoch, checkpoint.step, "failed")
        what = f"run {self.run_id} epoch {checkpoint.epoch}"
        try:
            model = self._export(folder, checkpoint)
            push.model = str(model)
            report = stage_to_devices(self.project_dir, model, self.plan.devices, self.plan.slot,
                                      self.run_id, checkpoint.epoch, cancel=self.token,
                                      timeout=self.plan.timeout, paired=self.paired)
            self._note_report(push, report)
        except Cancelled:
            push.reason = "stopped on request"
        except DeviceError as exc:
            push.reason = str(exc)
        except Exception as exc:  # a fault of one push must not end the following of the run
            log.exception("staging push of %s", what)
            push.reason = f"{type(exc).__name__}: {exc}"
        push.seconds = round(time.monotonic() - started, 3)
        self._add(push)
        if push.state == "switched":
            self.say(f"staging: {what} on slot {self.plan.slot} of {', '.join(self.plan.devices)} "
                     f"({Path(push.model).name}, {push.seconds:.1f} s)")
        else:
            self.say(f"staging: {what} was not pushed to slot {self.plan.slot}: {push.reason}; "
                     + ("training goes on, the next checkpoint tries again" if not self.token.cancelled
                        else "staging stops"))

    def _note_report(self, push: StagingPush, report: DeployReport) -> None:
        push.sha256 = report.sha256
        push.devices = [{"device": o.device, "address": o.address, "state": o.state, "reason": o.reason}
                        for o in report.outcomes]
        missed = report.not_switched
        if not missed:
            push.state = "switched"
            return
        push.state = "partial" if report.switched else "failed"
        push.reason = "; ".join(f"{o.device} {o.state}: {o.reason}" for o in missed)

    def _export(self, folder: Path, checkpoint: Checkpoint) -> Path:
        """The checkpoint converted (and quantized), each tool writing its default output beside
        its input, as by hand: ``<run>-epochEEEE.onnx``, then e.g. ``<run>-epochEEEE.int8.onnx``."""
        weights = folder / f"{self.run_id}-epoch{checkpoint.epoch:04d}.pt"
        model = run_model_tool("convert", {**self.plan.convert, "model": str(weights)},
                               self.project_dir, self.token)
        if self.plan.quantize:
            model = run_model_tool("quantize", {**self.plan.quantize_params, "model": str(model)},
                                   self.project_dir, self.token)
        return model


def run_model_tool(tool: str, values: dict, project_dir: Path, cancel: CancelToken) -> Path:
    """Run a model tool in its job process, as `workbench model TOOL` does; the model it wrote
    (its first output, as ToolReport has it). DeviceError says why it refused; Cancelled when
    ``cancel`` ended it."""
    from workbench.modeltools.errors import ModelToolError, ToolCancelled
    from workbench.modeltools.job_client import ToolJob
    from workbench.modeltools.params import ToolInvocation

    job = ToolJob()
    cancelled = False
    try:
        job.start(ToolInvocation(tool, values, str(project_dir)))
        while not job.finished():
            if cancel.cancelled and not cancelled:
                cancelled = True
                job.cancel()
            time.sleep(TOOL_POLL_S)
        report = job.wait()
    except ToolCancelled:
        raise Cancelled() from None
    except ModelToolError as exc:
        raise DeviceError(f"{tool} refused {Path(values['model']).name}: {exc}") from None
    finally:
        if job.poll() is None:
            job.kill()
    if not report.outputs:
        raise DeviceError(f"{tool} wrote no model from {Path(values['model']).name}")
    return Path(report.outputs[0])


def stage_run(project_dir: Path | str, run_id: str, plan: StagingPlan,
              say: Callable[[str], None] | None = None, *, paired: PairedDevices | None = None,
              cancel: CancelToken | None = None) -> StagingReport:
    """Follow run ``run_id`` until it ends, pushing its checkpoints (a run that ended already:
    its last checkpoint is pushed at once). ``cancel`` ends it early."""
    follower = StagingFollower(project_dir, run_id, plan, say, paired=paired)
    if cancel is not None:
        # The caller's token (Ctrl+C) cancels the follower's; a thread relays it.
        def relay() -> None:
            while not follower.token.cancelled and not done.is_set():
                if cancel.cancelled:
                    follower.cancel()
                done.wait(0.1)

        done = threading.Event()
        threading.Thread(target=relay, daemon=True).start()
        try:
            return follower.follow()
        finally:
            done.set()
    return follower.follow()


__all__ = ["DEFAULT_STAGING_SLOT", "StagingFollower", "StagingPlan", "StagingPush", "StagingReport",
           "declared_steps", "declared_tool_params", "stage_run"]

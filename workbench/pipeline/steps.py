"""What each step of an iteration does, through the same services the CLI's commands use:
the dataset versions, RunService, the model tools' job process, device verification, the
gates and the deploy. Each step returns its outputs (a dict kept in the iteration's file) or
raises PipelineError saying why it failed; each honours ``StepContext.stop_requested``."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from workbench.pipeline.errors import PipelineError
from workbench.pipeline.gates import evaluate_gates
from workbench.pipeline.iterations import Iteration

# How often a waiting step looks whether it was asked to stop.
POLL_S = 0.2
DEPLOY_MODULE = "workbench.device.deploy"
MODEL_SUFFIXES = (".onnx", ".mnn", ".pt", ".pth", ".pt2", ".tflite")


class StepStopped(PipelineError):
    """The step ended because the iteration was asked to stop."""


class GateFailed(PipelineError):
    """A gate step found rules not met; ``results`` has every rule's result."""

    def __init__(self, message: str, results: list[dict]):
        super().__init__(message)
        self.results = results


@dataclass
class StepContext:
    project_dir: Path
    versions: object                       # workbench.registry.ProjectVersions
    iteration: Iteration
    say: Callable[[str], None]
    stop_requested: Callable[[], bool]
    note: Callable[[dict], None]           # records outputs known while the step runs (a run id)
    # What this step had made when an earlier try of it ended (a resume's second try): a
    # training run that was stopped or lost goes on from its checkpoint instead of anew.
    earlier: dict = field(default_factory=dict)


def run_step(tool: str, params: dict, context: StepContext) -> dict:
    runner = {"dataset": dataset_step, "train": train_step, "verify": verify_step, "gate": gate_step,
              "deploy": deploy_step}.get(tool, model_tool_step)
    if runner is model_tool_step:
        return model_tool_step(tool, params, context)
    return runner(params, context)


def dataset_step(params: dict, context: StepContext) -> dict:
    from workbench.registry import RegistryError

    reason = params.get("reason") or f"pipeline iteration {context.iteration.version}"
    try:
        cut = context.versions.datasets.cut(fraction=params.get("fraction"), reason=reason,
                                            new_val=bool(params.get("new_val", False)))
    except RegistryError as exc:
        raise PipelineError(f"could not cut the dataset version: {exc}") from None
    version = cut.version
    changes = cut.changes
    context.say(f"dataset version {version.name}: {version.samples} samples "
                f"(+{len(changes.added)} −{len(changes.removed)} ~{len(changes.changed)})")
    return {"dataset_version": version.name, "samples": version.samples}


def train_step(params: dict, context: StepContext) -> dict:
    from workbench.registry import RegistryError
    from workbench.training import RunService
    from workbench.training.errors import TrainingError

    start_from = str(params.get("from", "production"))
    from_version = None
    if start_from != "scratch":
        try:
            from_version = context.versions.models.resolve(start_from).name
        except RegistryError:
            if start_from != "production":
                raise PipelineError(f"cannot fine-tune from {start_from!r}: it is no model version or alias "
                                    "of this project.") from None
            context.say("no production version yet: training from scratch")
    overrides = list(params.get("set", []))
    if "epochs" in params:
        overrides.append(f"num_epochs={params['epochs']}")
    service = RunService(context.project_dir)
    run = _resumed_run(service, context)
    if run is not None:
        from_version = context.earlier.get("from_version") or None
    else:
        try:
            run = service.start(params.get("hparams"), overrides, nproc=int(params.get("nproc", 1)),
                                cluster=params.get("cluster"),
                                dataset_version=context.iteration.output("dataset_version"),
                                from_version=from_version)
        except (TrainingError, RegistryError) as exc:
            raise PipelineError(f"the training run did not start: {exc}") from None
        context.say(f"run {run.id}" + (f", fine-tuning model version {from_version}" if from_version else ""))
    context.note({"run_id": run.id, "from_version": from_version or ""})
    staging = StagingBeside.start(params.get("staging"), run.id, context)
    stopping, info = False, None
    try:
        while True:
            try:
                info = service.wait(run.id, timeout=POLL_S)
            except KeyboardInterrupt:
                # The trainer has a process group of its own, so Ctrl+C reached only this process.
                service.stop(run.id)
                raise StepStopped(f"interrupted (Ctrl+C); run {run.id} was asked to stop") from None
            if not info.is_active:
                break
            if context.stop_requested() and not stopping:
                stopping = True
                context.say(f"stopping run {run.id}")
                service.stop(run.id)
    finally:
        # A step stopped or interrupted pushes nothing more; a run that ended gets its last push.
        staged = staging.finish(cancel=stopping or info is None or info.is_active) if staging else None
    if staged is not None:
        context.note({"staging": staged})
    if stopping:
        raise StepStopped(f"stopped on request; run {info.id} ended {info.state}")
    if info.state != "completed":
        raise PipelineError(f"training run {info.id} ended {info.state}"
                            + (f": {info.error}" if info.error else "") + f" (its log: {info.run_dir}/stderr.log)")
    if not info.model_version:
        raise PipelineError(f"training run {info.id} completed but registered no model version"
                            + (f": {info.registry_note}" if info.registry_note else "") + ".")
    model = context.versions.models.get(info.model_version)
    metric = context.versions.settings.metric
    shown = f"{metric}={model.metrics[metric]:.4g}" if isinstance(model.metrics.get(metric), (int, float)) else ""
    context.say(f"model version {model.name}" + (f": {shown}" if shown else ""))
    outputs = {"run_id": info.id, "model_version": model.name, "metrics": model.metrics,
               "from_version": from_version or "",
               "model_file": str(context.versions.models.weights_path(model.name))}
    if staged is not None:
        outputs["staging"] = staged
    return outputs


def _resumed_run(service, context: StepContext):
    """The run an earlier try of this step started, resumed from its last checkpoint when it
    was stopped or lost (its processes gone with the machine or a kill); None when there is
    none to go on with (a new run starts)."""
    from workbench.training.errors import TrainingError
    from workbench.training.run_info import LOST, STOPPED

    run_id = context.earlier.get("run_id")
    if not run_id:
        return None
    try:
        info = service.get(run_id)
        if info.is_active:
            # The process that ran the step died but its run did not (it has a process group
            # of its own): follow it rather than start a second one.
            context.say(f"run {run_id} still runs: following it")
            return info
        if info.state not in (STOPPED, LOST) or not info.can_resume:
            return None
        resumed = service.resume(run_id)
    except TrainingError as exc:
        context.say(f"run {run_id} cannot go on ({exc}): a new run starts")
        return None
    context.say(f"run {resumed.id} goes on from its last checkpoint (it was {info.state})")
    return resumed


class StagingBeside:
    """The train step's ``staging = { devices, every, quantize, slot }``: a StagingFollower
    (workbench.pipeline.staging) in a thread beside the run, pushing its checkpoints to a device
    slot. Its failures are lines of the step's log, never the step's failure: training goes on."""

    def __init__(self, follower, thread: threading.Thread, ended: threading.Event, result: dict):
        self.follower, self.thread, self.ended, self.result = follower, thread, ended, result

    @classmethod
    def start(cls, declared: dict | None, run_id: str, context: StepContext) -> "StagingBeside | None":
        if not declared:
            return None
        from workbench.device.errors import DeviceError
        from workbench.pipeline.staging import (DEFAULT_STAGING_SLOT, StagingFollower, StagingPlan,
                                              declared_tool_params)

        plan = StagingPlan(list(declared.get("devices") or []), int(declared.get("every", 1)),
                           bool(declared.get("quantize", False)),
                           str(declared.get("slot", DEFAULT_STAGING_SLOT)),
                           declared_tool_params(context.iteration.steps, "convert"),
                           declared_tool_params(context.iteration.steps, "quantize"))
        try:
            follower = StagingFollower(context.project_dir, run_id, plan, context.say)
        except DeviceError as exc:
            context.say(f"staging: run {run_id}'s checkpoints are not pushed: {exc}")
            return None
        context.say(f"staging: every {plan.every} epoch(s) to slot {plan.slot} of {', '.join(plan.devices)}")
        ended, result = threading.Event(), {}
        thread = threading.Thread(target=lambda: result.update(report=follower.follow(ended.is_set)),
                                  name=f"staging-{run_id}", daemon=True)
        thread.start()
        return cls(follower, thread, ended, result)

    def finish(self, cancel: bool) -> dict:
        """Once the run ended: the last push done (none when ``cancel``); what was pushed."""
        if cancel:
            self.follower.cancel()
        self.ended.set()
        self.thread.join()
        report = self.result.get("report") or self.follower.report
        return report.to_json()


def model_tool_step(tool: str, params: dict, context: StepContext) -> dict:
    """A model tool run in its job process, exactly as `workbench model TOOL` runs it, on the
    model file the steps before made (the version's weights for convert)."""
    from workbench.modeltools.errors import ModelToolError, ToolCancelled
    from workbench.modeltools.job_client import ToolJob
    from workbench.modeltools.params import ToolInvocation
    from workbench.modeltools.registry import get_tool

    model_file = context.iteration.output("model_file")
    if not model_file:
        raise PipelineError(f"the {tool} step has no model to work on: put a train step before it.")
    spec = get_tool(tool)
    if spec.applies_to and Path(model_file).suffix.lower() not in spec.applies_to:
        weights = context.iteration.output("weights_file") or ""
        model_file = weights if weights and Path(weights).suffix.lower() in spec.applies_to else model_file
    invocation = ToolInvocation(tool, {**params, "model": model_file}, str(context.project_dir))
    job = ToolJob()
    cancelled = False
    try:
        job.start(invocation)
        while not job.finished():
            if context.stop_requested() and not cancelled:
                cancelled = True
                job.cancel()
            time.sleep(POLL_S / 4)
        report = job.wait()
    except ToolCancelled:
        raise StepStopped(f"stopped on request; {tool} wrote nothing") from None
    except ModelToolError as exc:
        raise PipelineError(f"{tool} refused {Path(model_file).name}: {exc}") from None
    finally:
        if job.poll() is None:
            job.kill()
    # The first output of a tool that makes a model is that model (ToolReport's contract).
    produced = [path for path in report.outputs[:1] if Path(path).suffix.lower() in MODEL_SUFFIXES]
    outputs = {"files": [str(path) for path in report.outputs], "figures": report.figures}
    if produced:
        outputs["model_file"] = str(produced[0])
        context.say(f"{tool}: {Path(produced[0]).name}")
    if str(model_file).endswith((".pt", ".pth")):
        outputs["weights_file"] = str(model_file)
    return outputs


def verify_step(params: dict, context: StepContext) -> dict:
    """The model to deploy verified on each device named, as `workbench device verify` does."""
    from workbench.device.errors import DeviceError
    from workbench.device.link import DeviceLink
    from workbench.device.verify import verify_model
    from workbench.modeltools.errors import ModelToolError

    devices = params.get("devices") or []
    if not devices:
        raise PipelineError("the verify step names no devices: give devices = [\"name\", ...].")
    model_file = context.iteration.output("model_file")
    if not model_file or not str(model_file).endswith(".onnx"):
        raise PipelineError("the verify step has no ONNX model to verify: put a convert step before it.")
    results = {}
    for device in devices:
        if context.stop_requested():
            raise StepStopped("stopped on request")
        try:
            with DeviceLink.open(device, runtime=params.get("runtime", "onnxruntime"),
                                 threads=int(params.get("threads", 1))) as link:
                kwargs = {"samples": int(params["samples"])} if "samples" in params else {}
                verification = verify_model(link, Path(model_file), project=context.project_dir, **kwargs)
        except (DeviceError, ModelToolError) as exc:
            raise PipelineError(f"verification on {device} failed: {exc}") from None
        results[device] = verification.to_json()
        if not verification.passed:
            raise PipelineError(f"{Path(model_file).name} does not give onnxruntime's outputs on {device} "
                                f"(see `workbench device history`).")
        context.say(f"verified on {device}")
    return {"verifications": results}


def gate_step(params: dict, context: StepContext) -> dict:
    results = evaluate_gates(params, context.iteration, context.versions.models)
    for result in results:
        context.say(("passed " if result["passed"] else "FAILED ") + result["text"])
    failed = [result for result in results if not result["passed"]]
    if failed:
        raise GateFailed("gate " + "; gate ".join(result["text"] for result in failed), results)
    return {"results": results}


def deploy_step(params: dict, context: StepContext) -> dict:
    """Push the new version to the devices named (through workbench.device.deploy), then move
    the alias (production) to it."""
    import importlib

    version = context.iteration.output("model_version")
    if not version:
        raise PipelineError("the deploy step has no model version: put a train step before it.")
    alias = params.get("alias", "production")
    devices = list(params.get("devices") or [])
    outputs: dict = {"alias": alias, "model_version": version}
    if devices:
        try:
            deploy = importlib.import_module(DEPLOY_MODULE)
        except ImportError:
            raise PipelineError(f"deploy needs {DEPLOY_MODULE} (pushing to device slots), which this "
                                "installation lacks; leave devices out to move the alias only.") from None
        from workbench.device.errors import DeviceError

        slot = params.get("slot", "classifier")
        context.say(f"pushing model version {version} to slot {slot} of {', '.join(devices)}")
        try:
            report = deploy.deploy_to_devices(context.project_dir, version, devices, slot=slot, alias=alias)
        except DeviceError as exc:
            raise PipelineError(f"the deploy of model version {version} failed: {exc}; {alias} stays where "
                                "it was.") from None
        outputs["deploy"] = report.to_json() if hasattr(report, "to_json") else {}
        for outcome in getattr(report, "outcomes", []):
            context.say(f"{outcome.device}: {outcome.state}, " + (
                outcome.timings_text() if outcome.state == "switched" else outcome.reason))
        failed = getattr(report, "not_switched", [])
        if failed:
            # Which devices switched stays in the failed step's record; resume pushes again.
            context.note({"deploy": outputs["deploy"]})
            reasons = "; ".join(f"{getattr(o, 'device', '?')}: {getattr(o, 'reason', '') or getattr(o, 'state', '')}"
                                for o in failed)
            raise PipelineError(f"{len(failed)} of {len(devices)} devices did not switch slot {slot} to model "
                                f"version {version} ({reasons}); {alias} stays where it was.")
    before = context.versions.models.aliases.all().get(alias)
    context.versions.models.set_alias(alias, version, f"pipeline iteration {context.iteration.version}")
    outputs["previous"] = f"{before:04d}" if isinstance(before, int) else ""
    context.say(f"{alias} -> {version}")
    return outputs

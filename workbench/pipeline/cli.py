"""``workbench pipeline start|stop|status|list|resume|watch|stage``: continual-learning iterations
from a terminal, and a training run's checkpoints pushed to a device's staging slot. ``start`` and ``resume`` run the iteration in the foreground, a line per step on
stderr, and print the iteration at the end (``--json``: the iteration's record, exactly what
``registry/pipeline/iteration_NNNN.json`` holds). A failed iteration exits 1 after printing it.
An error is one line (``{"error": …}`` with ``--json``) and exit status 1."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from workbench.clikit import CommandFailed, HelpWhenBareGroup, emit, reported_errors

_CONTEXT = {"help_option_names": ["-h", "--help"]}
_JSON = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
_VERSION = click.option("--version", "version", default=None, metavar="NNNN",
                        help="The iteration (default: the newest).")
_PROJECT = click.argument("project", required=False, type=click.Path(path_type=Path))
# What started the command, for the iteration's record: the watcher and the window pass them;
# from a terminal it is a start by hand. Hidden: a user has no reason to give them.
_TRIGGER_KIND = click.option("--trigger-kind", "trigger_kind", default="manual", hidden=True,
                             type=click.Choice(["manual", "schedule", "every", "data growth", "resume"]))
_TRIGGER_REASON = click.option("--trigger-reason", "trigger_reason", default="", hidden=True)


@click.group("pipeline", cls=HelpWhenBareGroup, no_args_is_help=True, context_settings=_CONTEXT)
def pipeline_group() -> None:
    """Continual learning: iterations of the steps [pipeline] declares in workbench.toml (cut a
    dataset version, train, convert, quantize, verify on devices, gate, deploy)."""


def _service(project: Path | None, say=None):
    from workbench.pipeline import PipelineService
    from workbench.project.project_file import enclosing_project

    start = (project or Path.cwd()).expanduser().absolute()
    found = enclosing_project(start) if start.exists() else None
    if found is None:
        raise CommandFailed(f"{start} is not in a Workbench project (no workbench.toml in it or above it). "
                            "Give the project's folder.")
    return PipelineService(found, say=say or (lambda line: None))


def _say(line: str) -> None:
    click.echo(line, err=True)


def _pipeline_errors(as_json: bool):
    """reported_errors, with the pipeline's error as one line too."""
    import contextlib

    from workbench.pipeline import PipelineError

    @contextlib.contextmanager
    def guarded():
        with reported_errors(as_json):
            try:
                yield
            except PipelineError as exc:
                raise CommandFailed(str(exc)) from None

    return guarded()


def _finish(iteration, as_json: bool) -> None:
    emit(iteration.to_json(), as_json, iteration_text(iteration))
    if iteration.state != "done":
        sys.exit(1)


def _trigger(kind: str, reason: str, verb: str) -> dict:
    from workbench.pipeline.iterations import trigger_record
    from workbench.registry.store import os_user

    return trigger_record(kind, reason or f"`workbench pipeline {verb}` by {os_user()}")


@pipeline_group.command("start", context_settings=_CONTEXT)
@_PROJECT
@_JSON
@_TRIGGER_KIND
@_TRIGGER_REASON
def start_command(project: Path | None, as_json: bool, trigger_kind: str, trigger_reason: str) -> None:
    """Run a new iteration of the declared steps, in the foreground."""
    with _pipeline_errors(as_json):
        iteration = _service(project, _say).start(trigger=_trigger(trigger_kind, trigger_reason, "start"))
    _finish(iteration, as_json)


@pipeline_group.command("resume", context_settings=_CONTEXT)
@_PROJECT
@click.option("--version", "version", required=True, metavar="NNNN", help="The iteration to go on with.")
@_JSON
@_TRIGGER_KIND
@_TRIGGER_REASON
def resume_command(project: Path | None, version: str, as_json: bool, trigger_kind: str, trigger_reason: str) -> None:
    """Go on with an iteration from its first step not done (the one that failed or stopped)."""
    with _pipeline_errors(as_json):
        iteration = _service(project, _say).resume(version, trigger=_trigger(trigger_kind, trigger_reason, "resume"))
    _finish(iteration, as_json)


@pipeline_group.command("stop", context_settings=_CONTEXT)
@_PROJECT
@_VERSION
@_JSON
def stop_command(project: Path | None, version: str | None, as_json: bool) -> None:
    """Ask the running iteration to stop (its running step stops; resume goes on from it)."""
    with _pipeline_errors(as_json):
        iteration = _service(project).stop(version)
    emit({"version": iteration.version, "stop_requested": True}, as_json,
         f"asked iteration {iteration.version} to stop")


@pipeline_group.command("status", context_settings=_CONTEXT)
@_PROJECT
@_VERSION
@_JSON
def status_command(project: Path | None, version: str | None, as_json: bool) -> None:
    """An iteration's steps: state, times, and its gate results."""
    with _pipeline_errors(as_json):
        iteration = _service(project).get(version)
    emit(iteration.to_json(), as_json, iteration_text(iteration))


@pipeline_group.command("list", context_settings=_CONTEXT)
@_PROJECT
@_JSON
def list_command(project: Path | None, as_json: bool) -> None:
    """Every iteration, oldest first."""
    with _pipeline_errors(as_json):
        service = _service(project)
        iterations, metric = service.list(), service.versions.settings.metric
    rows = [_list_row(it, metric) for it in iterations]
    header = f"{'ITER':<5} {'STATE':<8} {'STARTED':<16} {'STARTED BY':<22} {'DATASET':<20} {'MODEL':<20} GATES"
    emit([_summary(it) for it in iterations], as_json, "\n".join([header, *rows]) if rows else "no iterations yet")


def _list_row(iteration, metric: str) -> str:
    """One line of ``pipeline list``: what the iteration cut, trained and found at its gates."""
    dataset = iteration.output("dataset_version")
    samples = iteration.output("samples")
    dataset_text = f"{dataset} · {samples:,} samples" if dataset and isinstance(samples, int) else (dataset or "-")
    model = iteration.output("model_version")
    value = (iteration.output("metrics") or {}).get(metric)
    model_text = (f"{model} {metric}={value:.4f}" if model and isinstance(value, (int, float)) else (model or "-"))
    gates = iteration.gates
    failed = [gate for gate in gates if not gate.get("passed")]
    gates_text = (f"{len(failed)} of {len(gates)} failed" if failed else f"{len(gates)} passed") if gates else "-"
    started = time.strftime("%Y-%m-%d %H:%M", time.localtime(iteration.started_at)) if iteration.started_at else "-"
    row = (f"{iteration.version:<5} {iteration.state:<8} {started:<16} {_started_by(iteration):<22} "
           f"{dataset_text:<20} {model_text:<20} {gates_text}")
    return row + (f"\n      {iteration.error}" if iteration.error and iteration.state != "done" else "")


def _summary(iteration) -> dict:
    data = iteration.to_json()
    return {key: data[key] for key in ("version", "state", "started_at", "ended_at", "error", "gates", "trigger",
                                       "resumes")} | {
        "dataset_version": iteration.output("dataset_version"), "model_version": iteration.output("model_version"),
        "steps": [{"tool": step.tool, "state": step.state} for step in iteration.steps]}


def _started_by(iteration) -> str:
    """The kind of trigger that started the iteration (``data growth``, ``schedule``, …) and how
    often it was resumed; ``-`` for a record older than triggers."""
    kind = iteration.trigger.get("kind", "-") if iteration.trigger else "-"
    return kind + (f", resumed {len(iteration.resumes)}x" if iteration.resumes else "")


def _when(moment: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(moment)) if moment else "-"


def iteration_text(iteration) -> str:
    """The iteration as status prints it."""
    from workbench.pipeline.iterations import trigger_text

    lines = [f"iteration {iteration.version}: {iteration.state}"
             + (f" (started {_when(iteration.started_at)})" if iteration.started_at else "")]
    lines.append(f"  started by {trigger_text(iteration.trigger)}"
                 + (f" ({iteration.trigger['by']} on {iteration.trigger['host']})"
                    if iteration.trigger.get("by") and iteration.trigger.get("host") else ""))
    for resume in iteration.resumes:
        lines.append(f"  resumed {_when(resume.get('at'))} by {trigger_text(resume)}")
    for step in iteration.steps:
        seconds = f"{step.seconds:.1f} s" if step.seconds is not None else ""
        made = ", ".join(f"{key} {value}" for key, value in step.outputs.items()
                         if key in ("dataset_version", "run_id", "model_version", "alias") and value)
        lines.append(f"  {step.index + 1}. {step.tool:<9} {step.state:<8} {_when(step.started_at)} {seconds:>8}"
                     + (f"  {made}" if made else ""))
        if step.error:
            lines.append(f"       {step.error}")
    for gate in iteration.gates:
        lines.append(f"  gate {'passed' if gate['passed'] else 'FAILED'}: {gate['text']}")
    if iteration.error:
        lines.append(iteration.error)
    return "\n".join(lines)


@pipeline_group.command("watch", context_settings=_CONTEXT)
@_PROJECT
@click.option("--detach", is_flag=True, help="Run the watcher in the background (it outlives this terminal) "
                                             "and print its pid; with one running already, say so and exit 0.")
@click.option("--stop", "stop", is_flag=True, help="End the project's watcher (an iteration it started goes on).")
@click.option("--status", "status", is_flag=True, help="Whether a watcher runs: pid, since, triggers, next due "
                                                        "times, the last trigger and what it started.")
@_JSON
def watch_command(project: Path | None, detach: bool, stop: bool, status: bool, as_json: bool) -> None:
    """Start iterations when a trigger of [pipeline.triggers] fires (schedule, every, on_data_growth),
    and resume one a dead process left running. In the foreground until Ctrl+C, unless --detach."""
    from workbench.pipeline import watcher

    if sum((detach, stop, status)) > 1:
        raise CommandFailed("give one of --detach, --stop and --status.")
    with _pipeline_errors(as_json):
        project_dir = _service(project).project_dir
        if status:
            state = watcher.watcher_status(project_dir)
            emit(state, as_json, watcher_text(state))
        elif stop:
            ended = watcher.stop_watcher(project_dir)
            going = (ended or {}).get("iteration") or None
            text = ("no trigger watcher runs for this project" if ended is None else
                    f"stopped the trigger watcher (pid {ended['pid']})"
                    + (f"; iteration {going.get('version') or '(starting)'} goes on in process {going['pid']}"
                       if going else ""))
            emit({"stopped": ended is not None, "pid": (ended or {}).get("pid"), "iteration": going}, as_json, text)
        elif detach:
            pid, started = watcher.start_watcher_detached(project_dir)
            text = (f"trigger watcher started (pid {pid}); its log: {watcher.watcher_paths(project_dir)[2]}" if started
                    else f"a trigger watcher already runs for this project (pid {pid})")
            emit({"pid": pid, "started": started, "already_running": not started}, as_json, text)
        else:
            watcher.watch(project_dir, _say)


def watcher_text(state: dict) -> str:
    """The watcher's status as ``watch --status`` prints it."""
    if not state["running"]:
        lines = ["no trigger watcher runs for this project"
                 + (f" (the last one, pid {state['pid']}, ended {_when(state.get('ended_at'))})"
                    if state.get("pid") and state.get("ended_at") else "")]
        if state.get("failed_on_open"):
            lines.append(f"  it could not start when the project opened: {state['failed_on_open']}")
    else:
        lines = [f"trigger watcher: pid {state['pid']}, since {_when(state.get('since'))}"
                 + (f", started by {state['started_by']}" if state.get("started_by") else "")]
        lines += [f"  trigger: {line}" for line in state.get("triggers", [])]
        busy = (state.get("iteration") or {}).get("version")
        for name, moment in (state.get("next_due") or {}).items():
            # A trigger that came due while an iteration runs waits for its end.
            waits = busy and moment and moment <= time.time()
            lines.append(f"  next {name}: " + (f"once iteration {busy} has ended" if waits else _when(moment)))
    last = state.get("last_trigger")
    if last and last.get("skipped"):
        lines.append(f"  last trigger {_when(last.get('at'))}: {last.get('kind', '')}: {last.get('reason')} → "
                     f"no iteration: {last['skipped']}")
    elif last:
        lines.append(f"  last trigger {_when(last.get('at'))}: {last.get('kind', '')}"
                     f"{': ' if last.get('kind') else ''}{last.get('reason')} → `pipeline {last.get('command')}` "
                     f"iteration {last.get('iteration') or '(none)'}, {last.get('state')}")
    lines.append(f"  log: {state['log']}")
    return "\n".join(lines)


@pipeline_group.command("stage", context_settings=_CONTEXT,
                        short_help="Push a training run's checkpoints to a device's staging slot as it trains.")
@click.argument("arguments", nargs=-1, required=True, metavar="[PROJECT] RUN_ID")
@click.option("--device", "devices", multiple=True, required=True,
              help="A device to push to (a paired device's name, HOST:PORT or `local`); repeat it for more.")
@click.option("--every", type=click.IntRange(1, 1_000_000), default=1, show_default=True,
              help="Push every this many completed epochs.")
@click.option("--quantize", is_flag=True,
              help="Quantize each checkpoint after converting it (as `workbench model quantize`).")
@click.option("--slot", default="staging", show_default=True,
              help="The slot the checkpoints go to (no alias moves).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(1, 86400), default=120.0,
              show_default=True, help="Seconds each device has to take a model and switch.")
@_JSON
def stage_command(arguments: tuple[str, ...], devices: tuple[str, ...], every: int, quantize: bool,
                  slot: str, timeout_s: float, as_json: bool) -> None:
    """Follow run RUN_ID of PROJECT (default: the current folder) until it ends: every EVERY
    completed epochs its newest checkpoint is converted to ONNX (with the project's declared
    convert step's parameters, if it has one), quantized with --quantize, and pushed to SLOT of
    each device, so an app on the device can be watched improving. A push that fails is one
    line and the next checkpoint tries again; while one is under way only the newest due
    checkpoint waits. A run that ended already gets its last checkpoint pushed. Ctrl+C ends the
    push under way and the following. Exits with status 1 when the last push did not switch
    every device."""
    from workbench.device.errors import DeviceError
    from workbench.device.paired import PairedDevices
    from workbench.pipeline import PipelineError
    from workbench.pipeline.staging import StagingPlan, declared_steps, declared_tool_params, stage_run
    from workbench.tasks import CancelToken

    if len(arguments) > 2:
        raise click.UsageError(f"stage takes [PROJECT] RUN_ID, not {len(arguments)} arguments "
                               f"({' '.join(arguments)})")
    project = (Path(arguments[0]) if len(arguments) == 2 else Path.cwd()).expanduser().absolute()
    cancel = CancelToken()
    with reported_errors(as_json):
        try:
            steps = declared_steps(project)
            plan = StagingPlan(list(devices), every, quantize, slot, declared_tool_params(steps, "convert"),
                               declared_tool_params(steps, "quantize"), timeout_s)
            report = stage_run(project, arguments[-1], plan, _say, paired=PairedDevices(on_notice=_say),
                               cancel=cancel)
        except KeyboardInterrupt:
            cancel.cancel()
            raise
        except (DeviceError, PipelineError) as exc:
            raise CommandFailed(str(exc)) from None
    emit(report.to_json(), as_json, report.to_text())
    if not report.ok:
        last = report.last
        why = f"epoch {last.epoch}: {last.reason}" if last else "no checkpoint was pushed"
        click.echo(f"error: the last staging push of run {report.run_id} did not switch slot {slot} "
                   f"of every device ({why})", err=True)
        raise SystemExit(1)

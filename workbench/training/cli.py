"""``workbench train`` and ``workbench runs …``: local training from a terminal.

Progress, Ctrl+C, errors and ``--json`` are the CLI kit's (workbench.clikit): an error
(TrainingError, ProjectError) is one line and exit status 1 (with ``--json``, stdout gets
``{"error": …}`` too). The service modules are imported inside the commands: ``--help`` needs
none of them.
"""

from __future__ import annotations

import functools
import sys
import time
from pathlib import Path

import click

from workbench.clikit import CtrlC, ProgressLine, print_json, reports_errors

FOLLOW_POLL_S = 0.1
# run.json is looked at this often between log reads, so the command ends as soon as the run does.
END_POLL_S = 0.01
RECHECK_S = 1.0
METRIC_COLUMNS = ("loss", "acc", "val_loss", "val_acc", "test_acc")

_JSON = click.option("--json", "as_json", is_flag=True, help="Print the run (or runs) as JSON.")
_PROJECT_HELP = "The project folder, as PROJECT (default: the project that holds the current folder)."


def _project(function):
    """``[PROJECT]`` as `workbench train` takes it, or ``--project PROJECT``: ``project``."""
    @functools.wraps(function)
    def command(*args, project_argument: Path | None = None, project: Path | None = None, **kwargs):
        return function(*args, project=_one_project(project_argument, project), **kwargs)

    command = click.option("--project", "project", type=click.Path(path_type=Path), default=None,
                           help=_PROJECT_HELP)(command)
    return click.argument("project_argument", metavar="[PROJECT]", required=False,
                          type=click.Path(path_type=Path))(command)


def _project_and_run(function):
    """``[PROJECT] RUN``, or ``RUN --project PROJECT``: ``run`` and ``project``. One word is RUN."""
    @functools.wraps(function)
    def command(*args, project_argument: Path | None = None, run: str | None = None, project: Path | None = None,
                **kwargs):
        if run is None:
            if project_argument is not None and not (project_argument / "workbench.toml").is_file():
                project_argument, run = None, str(project_argument)
            else:
                raise click.UsageError("Missing argument 'RUN': give the run's id (or the start of it) after the "
                                       "project.")
        return function(*args, run=run, project=_one_project(project_argument, project), **kwargs)

    command = click.option("--project", "project", type=click.Path(path_type=Path), default=None,
                           help=_PROJECT_HELP)(command)
    command = click.argument("run", metavar="RUN", required=False)(command)
    return click.argument("project_argument", metavar="[PROJECT]", required=False,
                          type=click.Path(path_type=Path))(command)


def _one_project(argument: Path | None, option: Path | None) -> Path | None:
    if argument is not None and option is not None and argument.expanduser().absolute() != \
            option.expanduser().absolute():
        raise click.UsageError(f"Two projects were given ({argument} and --project {option}): give one.")
    return argument if argument is not None else option


def project_root(path: Path | None) -> Path:
    """The project that holds ``path`` (default: the current folder): the nearest folder at or
    above it with a workbench.toml; TrainingError (saying how to make one) when there is none."""
    from workbench.training.errors import TrainingError

    from workbench.project.project_file import enclosing_project

    start = (path or Path.cwd()).expanduser().absolute()
    if not start.exists():
        raise TrainingError(f"{start} does not exist. Give the folder of a project.")
    found = enclosing_project(start)
    if found is not None:
        return found
    from workbench.training.run_spec import not_a_project_message

    raise TrainingError(not_a_project_message(start if start.is_dir() else start.parent))


def _service(project: Path | None):
    from workbench.training.service import RunService

    return RunService(project_root(project))


def _run_data(info) -> dict:
    from workbench.training.written_files import read_products

    return {**info.to_json(), "duration": info.duration, "is_active": info.is_active,
            "can_resume": info.can_resume, "can_resume_as_new": info.can_resume_as_new,
            "model_files": [] if info.is_cluster else read_products(info.run_dir)}


def _start(service, hparams_file, overrides, nproc: int, cluster: dict | None = None, versions: dict | None = None):
    """``service.start``, printing the hyper-parameters' warnings (``warning: file:line: …``)
    and, when the start is refused, every problem one a line before the summary. ``cluster``:
    ``{"name": profile, "resources": {...}, "cancel": CancelToken}`` to train on a cluster, each
    stage and its progress on the progress line."""
    from workbench.training.errors import TrainingError

    printer = ProgressLine()
    try:
        try:
            if cluster is None:
                info = service.start(hparams_file, overrides, nproc, **(versions or {}))
            else:
                info = service.start(hparams_file, overrides, cluster=cluster["name"],
                                     resources=cluster["resources"], progress=printer, cancel=cluster.get("cancel"),
                                     **(versions or {}))
        finally:
            printer.close()
    except TrainingError as exc:
        if exc.diagnostics:
            raise TrainingError(_print_problems(exc, service.project_dir), exc.diagnostics) from None
        raise
    except Exception as exc:
        from workbench.tasks import Cancelled

        if isinstance(exc, Cancelled):
            raise Cancelled("Not started: cancelled before the job was submitted; nothing of the run is left, "
                            "here or on the cluster.") from None
        raise
    for warning in info.warnings:
        click.echo(f"warning: {warning}", err=True)
    return info


def _print_problems(refused, project_dir: Path) -> str:
    """Print the warnings and (when more than one) the errors of a refused start to stderr;
    returns the one-line summary."""
    from workbench.training.run_spec import format_diagnostic

    errors = [d for d in refused.diagnostics if d.severity == "error"]
    for diagnostic in refused.diagnostics:
        if diagnostic.severity != "error":
            click.echo(f"warning: {format_diagnostic(diagnostic, project_dir)}", err=True)
        elif len(errors) > 1:
            click.echo(format_diagnostic(diagnostic, project_dir), err=True)
    if len(errors) > 1:
        return f"Not started: {len(errors)} problems with the hyper-parameters (above). Fix them and start again."
    return str(refused)


# ---------------------------------------------------------------------------------------------
# workbench train


@click.command("train", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("project", required=False, type=click.Path(path_type=Path))
@click.option("--hparams", "hparams_file", type=click.Path(path_type=Path),
              help="Hyper-parameter file (default: [training] hparams of workbench.toml).")
@click.option("--nproc", type=click.IntRange(min=1), default=1, show_default=True,
              help="Processes to train with (more than 1 runs under torchrun).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override one hyper-parameter for this run (repeatable).")
@_JSON
@click.option("--detach", is_flag=True, help="Return as soon as the run has started.")
@click.option("--cluster", "cluster", metavar="NAME",
              help="Train on the cluster of this profile (see `workbench cluster list`) instead of here.")
@click.option("--nodes", type=click.IntRange(min=1), default=1, show_default=True, help="With --cluster: nodes.")
@click.option("--gpus-per-node", type=click.IntRange(min=0), default=0, show_default=True,
              help="With --cluster: GPUs on each node (one training process each).")
@click.option("--cpus", type=click.IntRange(min=1), default=1, show_default=True,
              help="With --cluster: CPUs for the training processes of each node.")
@click.option("--mem", default="", metavar="MEM", help="With --cluster: memory per node, e.g. 16G.")
@click.option("--time", "time_limit", default="", metavar="TIME", help="With --cluster: time limit, e.g. 02:00:00.")
@click.option("--partition", default="", help="With --cluster: partition (default: the profile's).")
@click.option("--dataset-version", "dataset_version", metavar="NNNN",
              help="Train on this dataset version's samples only (see `workbench dataset list`).")
@click.option("--from-version", "from_version", metavar="NNNN",
              help="Fine-tune the weights of this model version (a number or an alias such as production).")
@click.option("--no-register", is_flag=True, help="Do not register the model as a new model version.")
@reports_errors
def train_command(project: Path | None, hparams_file: Path | None, nproc: int, overrides: tuple[str, ...],
                  as_json: bool, detach: bool, cluster: str | None, nodes: int, gpus_per_node: int, cpus: int,
                  mem: str, time_limit: str, partition: str, dataset_version: str | None = None,
                  from_version: str | None = None, no_register: bool = False) -> None:
    """Train the project at PROJECT (default: the one here) with its training script.

    Prints the run id and the trainer's output until the run ends. Ctrl+C stops the run (it
    checkpoints first, so it can be resumed); a second Ctrl+C terminates it. Exits 0 when the
    run completed. With --detach, returns at once and the run goes on in the background.

    With --cluster NAME, the code (the exact commit, uncommitted changes included) and the data
    go to that cluster and the run trains there as a job; its logs, metrics, checkpoints and
    outputs come back into the run folder here. --nproc is then the processes on each node
    (default: one per GPU, or one).
    """
    service = _service(project)
    if hparams_file is not None:
        hparams_file = hparams_file.expanduser().absolute()
    # Caught from before the start: on a cluster, a Ctrl+C while code and data are being sent
    # cancels the start. Once the run has started, the presses are counted afresh: the first
    # stops the run, the second terminates it.
    with CtrlC(interrupt_at=None) as ctrl_c:
        remote = None
        if cluster:
            resources = {"nodes": nodes, "gpus_per_node": gpus_per_node, "cpus": cpus, "mem": mem,
                         "time": time_limit, "partition": partition, "processes_per_node": nproc if nproc > 1 else 0}
            remote = {"name": cluster, "resources": resources, "cancel": ctrl_c.token}
        versions = {"dataset_version": dataset_version, "from_version": from_version, "register": not no_register}
        info = _start(service, hparams_file, overrides, nproc, remote, versions)
        if detach:
            if as_json:
                print_json(_run_data(info))
                return
            what = (f"Submitted run {info.id} to {info.cluster} (job {info.job_id})" if info.is_cluster
                    else f"Started run {info.id} (pid {info.pid})")
            click.echo(f"{what}. Follow it with `{_hint(info, 'runs logs -f')}`, stop it with "
                       f"`{_hint(info, 'runs stop')}`.")
            return
        if not as_json:
            where = f" on {info.cluster} (job {info.job_id})" if info.is_cluster else ""
            click.echo(f"Run {info.id} started{where} in {info.run_dir}")
        ctrl_c.reset()
        _finish_in_foreground(service, info, as_json, ctrl_c)


def _finish_in_foreground(service, info, as_json: bool, ctrl_c: CtrlC, offsets: tuple[int, int] = (0, 0)) -> None:
    final = follow_run(service, info.id, offsets, logs_to_stderr=as_json, ctrl_c=ctrl_c)
    if as_json:
        print_json(_run_data(final))
    else:
        click.echo(_summary(final), err=final.state != "completed")
    if final.state != "completed":
        sys.exit(1)


def follow_run(service, run_id: str, offsets: tuple[int, int] = (0, 0), logs_to_stderr: bool = False,
               ctrl_c: CtrlC | None = None):
    """Print the run's stdout and stderr from ``offsets`` on as they grow, until the run ends;
    returns its RunInfo.

    With ``ctrl_c``, the first Ctrl+C stops the run and a second one terminates it. While a
    cluster run's follower cannot reach the cluster, a line on stderr says so (once), and
    another when it can again."""
    from workbench.training.log_order import ArrivalReader
    from workbench.training.run_text import outage_note

    folder = service.run_folder(run_id)
    targets = {"stdout": sys.stderr if logs_to_stderr else sys.stdout, "stderr": sys.stderr}
    logs = ArrivalReader(folder.path, {"stdout": offsets[0], "stderr": offsets[1]})
    handled = 0
    presses = (lambda: ctrl_c.count) if ctrl_c is not None else (lambda: 0)
    run_json = folder.run_json
    info, checked, stamp = None, 0.0, None
    outage_since = None
    while True:
        # The run is read again when run.json changed, and once a second (a run whose
        # processes died records nothing): reading it is most of what following costs.
        if info is None or _stamp(run_json) != stamp or time.monotonic() - checked > RECHECK_S:
            stamp, checked = _stamp(run_json), time.monotonic()
            info = service.get(run_id)
            since = info.outage.get("since") if info.outage and info.is_active else None
            if since != outage_since:
                if since is not None:
                    click.echo(f"workbench: {outage_note(info)}", err=True)
                elif info.is_active:
                    click.echo(f"workbench: connected to {info.cluster} again.", err=True)
                outage_since = since
        _copy_in_order(logs, targets)
        if not info.is_active:
            return info
        if presses() > handled:
            handled = presses()
            _interrupt(service, info.id, terminate=handled > 1)
            info = None
        _wait_for_change(run_json, FOLLOW_POLL_S, lambda: presses() > handled)


def _interrupt(service, run_id: str, terminate: bool) -> None:
    from workbench.training.errors import TrainingError

    if terminate:
        click.echo(f"\nTerminating run {run_id}…", err=True)
    else:
        click.echo(f"\nStopping run {run_id} after its current step (Ctrl+C again to terminate it)…", err=True)
    try:
        service.terminate(run_id) if terminate else service.stop(run_id)
    except TrainingError:
        pass  # it ended meanwhile; the next look shows how


def _wait_for_change(path: Path, timeout: float, interrupted) -> None:
    """Sleep up to ``timeout``, less when ``path`` changes (the supervisor recorded the end)."""
    before = _stamp(path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _stamp(path) == before and not interrupted():
        time.sleep(END_POLL_S)


def _stamp(path: Path) -> tuple:
    try:
        status = path.stat()
    except OSError:
        return ()
    return status.st_mtime_ns, status.st_ino


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _copy_in_order(logs, targets: dict) -> None:
    """Copy what the run's stdout and stderr gained since ``logs`` (an ArrivalReader) last read
    them to ``targets[stream]``, in the order it arrived (see workbench.training.log_order)."""
    from workbench.training.log_order import log_path

    for stream, start, end in logs.segments():
        _copy_range(log_path(logs.run_dir, stream), start, end, targets[stream])


def _copy_range(path: Path, start: int, end: int, stream) -> None:
    """Copy bytes ``start`` to ``end`` of ``path`` to ``stream``."""
    try:
        with open(path, "rb") as handle:
            handle.seek(start)
            data = handle.read(end - start)
    except FileNotFoundError:
        return
    if data:
        target = getattr(stream, "buffer", None)
        if target is not None:
            stream.flush()
            target.write(data)
            target.flush()
        else:
            stream.write(data.decode("utf-8", errors="replace"))
            stream.flush()


def _summary(info) -> str:
    text = f"Run {info.id} {info.state}"
    if info.duration is not None:
        text += f" after {_duration(info.duration)}"
    metrics = _metrics_text(info.final_metrics)
    if metrics:
        text += f": {metrics}"
    if info.error:
        text += f". {info.error}"
    if info.model_version:
        text += f". Registered as model version {info.model_version}"
        if info.registry_note:
            text += f" ({info.registry_note})"
    elif info.state == "completed" and info.registry_note:
        text += f". Model {info.registry_note}"
    if info.state == "stopped" and info.can_resume:
        text += f". Resume it with `{_hint(info, 'runs resume')}`"
    return text


def _hint(info, command: str, *rest: str) -> str:
    """``workbench COMMAND [PROJECT] RUN REST…`` for the run ``info``: the project is named
    unless the current folder is inside it."""
    from workbench.training.hints import workbench_command

    return workbench_command(info.project_dir, command, info.id, *rest)


def _metrics_text(final: dict) -> str:
    from workbench.training.metrics import shown_metric_names

    names = [name for name in METRIC_COLUMNS if name in final]
    if not names:  # a project of one's own: its names (train_loss, test_accuracy, ...)
        names = [name for name in shown_metric_names([final], (), 3)]
    return " ".join(f"{name}={_number(final[name])}" for name in names)


def _number(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


# ---------------------------------------------------------------------------------------------
# workbench runs


@click.group("runs", context_settings={"help_option_names": ["-h", "--help"]})
def runs_group() -> None:
    """The project's training runs: list, show, logs, stop, resume, terminate, pull.

    PROJECT is the project's folder (default: the project that holds the current folder), as
    `workbench train` takes it, or given with --project. RUN is a run id or the start of one:
    `workbench runs show ~/digits 2026`, or `workbench runs show 2026` inside the project.
    """


@runs_group.command("list")
@_project
@_JSON
@reports_errors
def list_command(project: Path | None, as_json: bool) -> None:
    """List the runs, newest first, with their state, duration and final metrics."""
    from workbench.training.hints import workbench_command
    from workbench.training.run_text import state_text

    service = _service(project)
    runs = service.list_runs()
    if as_json:
        print_json([_run_data(info) for info in runs])
        return
    if not runs:
        click.echo(f"No runs yet. Start one with `{workbench_command(service.project_dir, 'train')}`.")
        return
    states = {info.id: state_text(info) for info in runs}
    width = max(11, *(len(state) for state in states.values()))
    lines = [f"{'ID':<20} {'STATE':<{width}} {'DURATION':>9}  METRICS"]
    for info in runs:
        duration = _duration(info.duration) if info.duration is not None else "-"
        extra = f"  (from {info.resumed_from})" if info.resumed_from else ""
        if info.resumes:
            extra += f"  (resumed at step {', '.join(str(resume.get('step', '?')) for resume in info.resumes)})"
        if info.is_cluster:
            reason = f", {info.scheduler_reason}" if info.scheduler_reason and info.is_active else ""
            extra += f"  (on {info.cluster}, job {info.job_id or '-'}{reason})"
        lines.append(f"{info.id:<20} {states[info.id]:<{width}} {duration:>9}  {_metrics_text(info.final_metrics)}"
                     f"{extra}")
    click.echo("\n".join(lines))


@runs_group.command("show")
@_project_and_run
@_JSON
@reports_errors
def show_command(run: str, project: Path | None, as_json: bool) -> None:
    """Show everything recorded about RUN."""
    from workbench.training.run_text import exit_code_text, problem_text, scheduler_text, state_text
    from workbench.training.written_files import read_products

    service = _service(project)
    info = service.get(run)
    if as_json:
        print_json(_run_data(info))
        return
    rows = [
        ("run", info.id), ("state", state_text(info)), ("folder", info.run_dir),
        ("script", info.script), ("hparams", info.hparams_file or "(defaults)"),
        ("overrides", " ".join(info.effective_overrides) or "-"), ("processes", str(info.nproc)),
        ("command", " ".join(info.command)),
        ("started", time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.started_at)) if info.started_at else "-"),
        ("duration", _duration(info.duration) if info.duration is not None else "-"),
        ("exit code", exit_code_text(info)),
        ("git", (f"{info.git_commit[:12]}{' (with uncommitted changes)' if info.git_dirty else ''}"
                 if info.git_commit else "-")),
        ("resumed from", info.resumed_from or "-"),
        ("resumes", "; ".join(_resume_text(resume) for resume in info.resumes) or "-"),
        ("metrics", " ".join(f"{k}={_number(v)}" for k, v in info.final_metrics.items()) or "-"),
        ("can resume", "yes" if info.can_resume else ("as a new run" if info.can_resume_as_new else "no")),
    ]
    if info.is_cluster:
        rows[3:3] = [("cluster", f"{info.cluster} ({info.backend})"), ("job", info.job_id or "-"),
                     ("scheduler", scheduler_text(info) if info.scheduler_state else "-"),
                     ("remote folder", info.remote_run_dir or "-"),
                     ("resources", service.describe_resources(info) or "-")]
        rows.append(("products", ", ".join(info.products) or "-"))
    else:
        rows.append(("products", ", ".join(product["path"] for product in read_products(info.run_dir)) or "-"))
    if info.event_files:
        rows.append(("tensorboard", ", ".join(info.event_files)))
    rows += [("warning", warning) for warning in info.warnings]
    if info.outage and info.is_active:
        rows.append(("note", problem_text(info)))
    elif info.error:
        rows.append(("error", info.error))
    click.echo("\n".join(f"{name + ':':<16}{value}" for name, value in rows))


def _resume_text(resume: dict) -> str:
    """One resume in the same run: ``at step 490 on 2026-05-09 14:30:12``."""
    when = resume.get("time")
    text = f"at step {resume.get('step', '?')}"
    if isinstance(when, (int, float)):
        text += f" on {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(when))}"
    return text


@runs_group.command("logs")
@_project_and_run
@click.option("-f", "--follow", is_flag=True, help="Keep printing what the run prints until it ends.")
@reports_errors
def logs_command(run: str, project: Path | None, follow: bool) -> None:
    """Print what RUN printed (its stderr to stderr), in the order it came where that was
    recorded (runs on a cluster), else stdout, then stderr."""
    service = _service(project)
    info = service.get(run)
    if follow:
        follow_run(service, info.id)
        return
    from workbench.training.log_order import ArrivalReader

    _copy_in_order(ArrivalReader(service.run_folder(info.id).path), {"stdout": sys.stdout, "stderr": sys.stderr})


@runs_group.command("pull")
@_project_and_run
@_JSON
@reports_errors
def pull_command(run: str, project: Path | None, as_json: bool) -> None:
    """Fetch a cluster run's checkpoints and outputs into its run folder (only what is new or
    changed). Runs on a cluster do this by themselves when they end."""
    service = _service(project)
    report = service.pull(run)
    info = service.get(run)
    if as_json:
        print_json({"run": info.id, "fetched": report.fetched, "unchanged": report.unchanged,
                    "bytes": report.bytes_fetched, "products": info.products})
        return
    for path in report.fetched:
        click.echo(f"fetched {path}")
    click.echo(f"Run {info.id}: {len(report.fetched)} file(s) fetched ({report.bytes_fetched} bytes), "
               f"{report.unchanged} already here, in {info.run_dir}.")


@runs_group.command("stop")
@_project_and_run
@_JSON
@reports_errors
def stop_command(run: str, project: Path | None, as_json: bool) -> None:
    """Ask RUN to checkpoint and exit (it can be resumed later)."""
    service = _service(project)
    has_checkpoint = service.run_folder(run).latest_checkpoint() is not None
    queued = service.get(run).state == "pending"
    info = service.stop(run)
    show = f"`{_hint(info, 'runs show')}` says how it ended."
    if as_json:
        print_json(_run_data(info))
    elif info.is_cluster and queued:
        click.echo(f"Stopping run {info.id} on {info.cluster}: job {info.job_id} is removed from the queue; it had "
                   f"not started, so there is nothing to checkpoint. {show}")
    elif info.is_cluster:
        click.echo(f"Stopping run {info.id} on {info.cluster} (job {info.job_id}): it checkpoints and exits, and its "
                   f"checkpoints and outputs come back here. {show}")
    elif not has_checkpoint:
        click.echo(f"Stopping run {info.id}: it has no checkpoint yet, so unless it saves one as it stops (the "
                   f"training helpers do), it cannot be resumed. {show}")
    else:
        click.echo(f"Stopping run {info.id}: it exits after its current step and checkpoint.")


@runs_group.command("terminate")
@_project_and_run
@_JSON
@reports_errors
def terminate_command(run: str, project: Path | None, as_json: bool) -> None:
    """Kill RUN and every process it started, at once (no checkpoint)."""
    info = _service(project).terminate(run)
    if as_json:
        print_json(_run_data(info))
    else:
        click.echo(f"Run {info.id} {info.state}.")


@runs_group.command("resume")
@_project_and_run
@click.option("--new", "new_run", is_flag=True, help="Continue in a new run instead of RUN itself.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="With --new: change one hyper-parameter of the new run, e.g. num_epochs=20 (repeatable).")
@click.option("-f", "--follow", is_flag=True, help="Print its output until it ends, as `workbench train` does.")
@_JSON
@click.option("--cluster", "cluster", metavar="NAME",
              help="With --new: train the new run on the cluster of this profile (default: where RUN trained).")
@click.option("--nodes", type=click.IntRange(min=1), default=None, help="With --new, on a cluster: nodes.")
@click.option("--gpus-per-node", type=click.IntRange(min=0), default=None,
              help="With --new, on a cluster: GPUs on each node (one training process each).")
@click.option("--nproc", type=click.IntRange(min=1), default=None,
              help="With --new, on a cluster: processes on each node (default: RUN's).")
@click.option("--cpus", type=click.IntRange(min=1), default=None,
              help="With --new, on a cluster: CPUs for the training processes of each node.")
@click.option("--mem", default=None, metavar="MEM", help="With --new, on a cluster: memory per node, e.g. 16G.")
@click.option("--time", "time_limit", default=None, metavar="TIME",
              help="With --new, on a cluster: time limit, e.g. 02:00:00.")
@click.option("--partition", default=None, help="With --new, on a cluster: partition (default: the profile's).")
@reports_errors
def resume_command(run: str, project: Path | None, new_run: bool, overrides: tuple[str, ...], follow: bool,
                   as_json: bool, cluster: str | None, nodes: int | None, gpus_per_node: int | None,
                   nproc: int | None, cpus: int | None, mem: str | None, time_limit: str | None,
                   partition: str | None) -> None:
    """Continue RUN from its last checkpoint.

    A completed run goes on only as a new run (--new), e.g. with more epochs:
    `workbench runs resume RUN --new --set num_epochs=20`. A new run may train on another
    cluster, or with other resources: `workbench runs resume RUN --new --cluster NAME --gpus-per-node 2`
    (the resources not given stay RUN's; on another cluster, its partition is the profile's).
    """
    changes = {name: value for name, value in (
        ("nodes", nodes), ("gpus_per_node", gpus_per_node), ("processes_per_node", nproc), ("cpus", cpus),
        ("mem", mem), ("time", time_limit), ("partition", partition)) if value is not None}
    if (cluster or changes) and not new_run:
        raise click.UsageError("--cluster and the resource options are for a new run: add --new.")
    service = _service(project)
    offsets = (0, 0)
    if not new_run:  # the log goes on in the same files: show only what this resume prints
        folder = service.run_folder(run)
        offsets = (_size(folder.stdout_log), _size(folder.stderr_log))
    # On a cluster, the steps of the resume are printed as a start's are.
    printer = ProgressLine() if cluster or service.get(run).is_cluster else None
    if follow:
        with CtrlC(interrupt_at=None) as ctrl_c:
            info = _resume(service, run, new_run, overrides, cluster, changes, printer)
            _finish_in_foreground(service, info, as_json, ctrl_c, offsets)
        return
    info = _resume(service, run, new_run, overrides, cluster, changes, printer)
    if as_json:
        print_json(_run_data(info))
    else:
        where = f"as run {info.id}" if new_run else f"in run {info.id}"
        process = f"job {info.job_id} on {info.cluster}" if info.is_cluster else f"pid {info.pid}"
        click.echo(f"Resumed from {info.resumed_from if new_run else 'its last checkpoint'} {where} "
                   f"({process}). Follow it with `{_hint(info, 'runs logs -f')}`.")


def _resume(service, run: str, new_run: bool, overrides, cluster: str | None, changes: dict, printer):
    try:
        return service.resume(run, new_run=new_run, overrides=overrides, progress=printer, cluster=cluster,
                              resources=changes or None)
    finally:
        if printer is not None:
            printer.close()

"""``workbench device deploy`` and ``workbench device slots``: deploy a model version to the
deployment slots of paired devices, and list a device's slots; ``rollback`` and ``redeploy``;
``stage``, a run's checkpoints pushed to a staging slot while it trains (registered on the
``device`` group by ``cli.py``)."""

from __future__ import annotations

from pathlib import Path

import click

from workbench.clikit import ProgressLine, emit
from workbench.device.cli import DEVICE_HELP, _CONTEXT, _command, _devices, _json_option, _when, device_group


@click.command("deploy", context_settings=_CONTEXT,
               short_help="Deploy a model version to the slots of devices.")
@click.argument("arguments", nargs=-1, required=True, metavar="[PROJECT] NNNN|ALIAS")
@click.option("--slot", default="classifier", show_default=True,
              help="The deployment slot the apps on the devices call.")
@click.option("--device", "devices", multiple=True,
              help=f"A device to deploy to ({DEVICE_HELP}); repeat it for more. Default: every "
                   "paired device.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(1, 86400), default=120.0,
              show_default=True, help="Seconds each device has to take the model and switch.")
@_json_option
@_command
def deploy_command(arguments: tuple[str, ...], slot: str, devices: tuple[str, ...],
                   timeout_s: float, as_json: bool, cancel=None) -> None:
    """Deploy model version NNNN (or the one ALIAS names, e.g. production) of PROJECT (default:
    the current folder) to a slot of every device, in parallel: the bundle
    (deployment_NNNN.yaml and nn_model_NNNN.zip) is written into the registry's deployments
    folder, the model is pushed (nothing is sent to a device that has it) and each device
    switches the slot to it once it loaded and warmed it. A device that cannot load it keeps
    serving its old model. Exits with status 1 when any device did not switch."""
    from workbench.device.deploy import deploy_to_devices
    from workbench.device.errors import DeviceError

    if len(arguments) > 2:
        raise DeviceError(f"deploy takes [PROJECT] NNNN|ALIAS, not {len(arguments)} arguments "
                          f"({' '.join(arguments)})")
    project = Path(arguments[0]) if len(arguments) == 2 else Path.cwd()
    status = ProgressLine()
    try:
        report = deploy_to_devices(project.expanduser().absolute(), arguments[-1],
                                   list(devices) or None, slot, progress=status, cancel=cancel,
                                   timeout=timeout_s, paired=_devices())
    finally:
        status.close()
    emit(report.to_json(), as_json, report.to_text())
    if not report.ok:
        failed = ", ".join(f"{o.device} ({o.state})" for o in report.not_switched)
        click.echo(f"error: {len(report.not_switched)} of {len(report.outcomes)} devices did not "
                   f"switch to version {report.version}: {failed}", err=True)
        raise SystemExit(1)


@click.command("slots", context_settings=_CONTEXT, short_help="List the slots of a device.")
@click.argument("device")
@_json_option
@_command
def slots_command(device: str, as_json: bool) -> None:
    """List the deployment slots of DEVICE: the model each serves, since when, and the requests
    it served."""
    from datetime import datetime, timezone

    from workbench.device.deploy import list_slots

    name, address, slots = list_slots(device, _devices())
    data = {"device": name, "address": address, "slots": slots}
    if not slots:
        text = f"{name} at {address} has no slots: deploy a model with `workbench device deploy`."
    else:
        lines = [f"Slots of {name} at {address}:"]
        for item in slots:
            since = item.get("since")
            when = _when(datetime.fromtimestamp(since, timezone.utc).isoformat()) if since else "-"
            model = (item.get("model") or "")[:12] or "nothing"
            lines.append(f"  {item['slot']:<16} {item.get('name') or model} ({model}) since "
                         f"{when}, {item.get('served', 0)} served, {item.get('errors', 0)} "
                         "failed" + (f"; {item['error']}" if item.get("error") else ""))
        text = "\n".join(lines)
    emit(data, as_json, text)


def _project_and_alias(arguments: tuple[str, ...], verb: str) -> tuple[Path, str]:
    from workbench.device.errors import DeviceError

    if len(arguments) > 2:
        raise DeviceError(f"{verb} takes [PROJECT] ALIAS, not {len(arguments)} arguments "
                          f"({' '.join(arguments)})")
    project = Path(arguments[0]) if len(arguments) == 2 else Path.cwd()
    return project.expanduser().absolute(), arguments[-1]


def _report_push(push, as_json: bool, project: Path) -> None:
    emit(push.to_json(), as_json, push.to_text())
    if not push.ok:
        missed = [o for report in push.reports for o in report.not_switched]
        failed = ", ".join(f"{o.device} ({o.state})" for o in missed)
        click.echo(f"error: {len(missed)} device(s) did not switch to version {push.version}: {failed}; "
                   f"`workbench device redeploy {project} {push.alias}` pushes to them again", err=True)
        raise SystemExit(1)


@click.command("rollback", context_settings=_CONTEXT,
               short_help="Roll an alias back and push that version to the devices serving it.")
@click.argument("arguments", nargs=-1, required=True, metavar="[PROJECT] ALIAS")
@click.option("--reason", default="", help="Why (kept in the alias's history).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(1, 86400), default=120.0,
              show_default=True, help="Seconds each device has to take the model and switch.")
@_json_option
@_command
def rollback_command(arguments: tuple[str, ...], reason: str, timeout_s: float, as_json: bool,
                     cancel=None) -> None:
    """Move ALIAS (e.g. production) of PROJECT (default: the current folder) back to the
    version it pointed to before its last move, as `workbench registry rollback` does, then
    push that version to every device slot that serves the version ALIAS left (as the deploy
    log says). Exits with status 1 when any device did not switch."""
    from workbench.device.rollback import rollback_alias

    project, alias = _project_and_alias(arguments, "rollback")
    status = ProgressLine()
    try:
        push = rollback_alias(project, alias, reason, progress=status, cancel=cancel,
                              timeout=timeout_s, paired=_devices())
    finally:
        status.close()
    _report_push(push, as_json, project)


@click.command("redeploy", context_settings=_CONTEXT,
               short_help="Push an alias's version to the devices serving the version it left.")
@click.argument("arguments", nargs=-1, required=True, metavar="[PROJECT] ALIAS")
@click.option("--timeout", "timeout_s", type=click.FloatRange(1, 86400), default=120.0,
              show_default=True, help="Seconds each device has to take the model and switch.")
@_json_option
@_command
def redeploy_command(arguments: tuple[str, ...], timeout_s: float, as_json: bool,
                     cancel=None) -> None:
    """Push the version ALIAS points to to every device slot that still serves the version
    ALIAS was moved from (after `workbench registry rollback`, or a rollback some devices
    missed); the alias itself does not move."""
    from workbench.device.rollback import redeploy_alias

    project, alias = _project_and_alias(arguments, "redeploy")
    status = ProgressLine()
    try:
        push = redeploy_alias(project, alias, progress=status, cancel=cancel, timeout=timeout_s,
                              paired=_devices())
    finally:
        status.close()
    _report_push(push, as_json, project)


@click.command("stage", context_settings=_CONTEXT,
               short_help="Push a training run's checkpoints to a staging slot as it trains.")
@click.argument("arguments", nargs=-1, required=True, metavar="[PROJECT] RUN_ID")
@click.option("--device", "devices", multiple=True, required=True,
              help=f"A device to push to ({DEVICE_HELP}); repeat it for more.")
@click.option("--every", type=click.IntRange(1, 1_000_000), default=1, show_default=True,
              help="Push every this many completed epochs.")
@click.option("--quantize", is_flag=True,
              help="Quantize each checkpoint after converting it (as `workbench model quantize`).")
@click.option("--slot", default="staging", show_default=True,
              help="The slot the checkpoints go to (no alias moves).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(1, 86400), default=120.0,
              show_default=True, help="Seconds each device has to take a model and switch.")
@_json_option
@_command
def stage_command(arguments: tuple[str, ...], devices: tuple[str, ...], every: int, quantize: bool,
                  slot: str, timeout_s: float, as_json: bool, cancel=None) -> None:
    """Follow run RUN_ID of PROJECT (default: the current folder) until it ends: every EVERY
    completed epochs its newest checkpoint is converted to ONNX (with the project's declared
    convert step's parameters, if it has one), quantized with --quantize, and pushed to SLOT of
    each device, so an app on the device can be watched improving. A push that fails is one
    line and the next checkpoint tries again; while one is under way only the newest due
    checkpoint waits. A run that ended already gets its last checkpoint pushed. Exits with
    status 1 when the last push did not switch every device."""
    from workbench.device.errors import DeviceError
    from workbench.device.staging import StagingPlan, declared_tool_params, stage_run

    if len(arguments) > 2:
        raise DeviceError(f"stage takes [PROJECT] RUN_ID, not {len(arguments)} arguments "
                          f"({' '.join(arguments)})")
    project = (Path(arguments[0]) if len(arguments) == 2 else Path.cwd()).expanduser().absolute()
    plan = StagingPlan(list(devices), every, quantize, slot, declared_tool_params(project, "convert"),
                       declared_tool_params(project, "quantize"), timeout_s)
    report = stage_run(project, arguments[-1], plan, lambda line: click.echo(line, err=True),
                       paired=_devices(), cancel=cancel)
    emit(report.to_json(), as_json, report.to_text())
    if not report.ok:
        last = report.last
        why = f"epoch {last.epoch}: {last.reason}" if last else "no checkpoint was pushed"
        click.echo(f"error: the last staging push of run {report.run_id} did not switch slot {slot} "
                   f"of every device ({why})", err=True)
        raise SystemExit(1)


# The whole `workbench device` group: the link's commands (cli.py) and these. workbench/cli.py
# names this module's group, so cli.py never imports this one back.
device_group.add_command(deploy_command)
device_group.add_command(slots_command)
device_group.add_command(rollback_command)
device_group.add_command(redeploy_command)
device_group.add_command(stage_command)

"""``workbench device deploy`` and ``workbench device slots``: deploy a model version to the
deployment slots of paired devices, and list a device's slots; ``rollback`` and ``redeploy``
(registered on the ``device`` group here; workbench/cli.py names this module's group)."""

from __future__ import annotations

from pathlib import Path

import click

from workbench.clikit import ProgressLine, emit
from workbench.device.cli import DEVICE_HELP, _CONTEXT, _command, _devices, _json_option, _when, device_group
from workbench.registry.cli import registry_group


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
@click.option("--no-push", is_flag=True,
              help="Move the alias only: the devices keep their model (`workbench device redeploy ALIAS` "
                   "pushes later).")
@_json_option
@_command
def rollback_command(arguments: tuple[str, ...], reason: str, timeout_s: float, no_push: bool, as_json: bool,
                     cancel=None) -> None:
    """Move ALIAS (e.g. production) of PROJECT (default: the current folder) back to the
    version it pointed to before its last move, then push that version to every device slot
    that serves the version ALIAS left (as the deploy log says), so the apps there use it.
    Exits with status 1 when any device did not switch."""
    from workbench.device.rollback import rollback_alias

    project, alias = _project_and_alias(arguments, "rollback")
    if no_push:
        _move_alias_back(project, alias, reason, as_json)
        return
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


def _move_alias_back(project: Path, alias: str, reason: str, as_json: bool) -> None:
    """The registry's rollback alone, and which devices still serve the version it left."""
    from workbench.device.deploy import _registry
    from workbench.device.errors import DeviceError
    from workbench.registry.deployments import still_serving_hint
    from workbench.registry.errors import RegistryError

    registry = _registry(project)
    try:
        move = registry.rollback(alias, reason)
    except RegistryError as exc:
        raise DeviceError(str(exc)) from None
    emit(move.to_json(), as_json, f"{alias} rolled back: {move.previous:04d} -> {move.version:04d}")
    hint = still_serving_hint(registry.store.folder, move, project)
    if hint:
        click.echo(hint, err=True)


# The whole `workbench device` group: the link's commands (cli.py) and these. workbench/cli.py
# names this module's group, so cli.py never imports this one back.
device_group.add_command(deploy_command)
device_group.add_command(slots_command)
device_group.add_command(rollback_command)
device_group.add_command(redeploy_command)

# `workbench registry rollback ALIAS` moves the alias and pushes to the devices serving the
# version it left, as `device rollback` does (the registry alone cannot reach devices); the
# command table names this group for `registry`.
registry_group.add_command(rollback_command, "rollback")

"""Rolling an alias back on the devices: the slots that serve the version an alias left get the
version it points to now.

Which slots serve a version comes from the deploy log (``workbench.registry.deployments``: a
slot serves what its last switched deploy put there; one deployed as another alias is not the
alias's). ``rollback_alias`` moves the alias back
through the registry, then pushes; ``redeploy_alias`` only pushes, so that a push some devices
missed (down, or a model they could not load) can be made again without moving the alias a
second time: the slots that did switch serve the alias's version already and are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from workbench.device.deploy import DEFAULT_DEVICE_TIMEOUT_S, DeployReport, _registry, deploy_to_devices
from workbench.device.errors import DeviceError
from workbench.device.paired import PairedDevices
from workbench.tasks import CancelToken, Progress


@dataclass
class AliasPush:
    """What moving (or re-pushing) an alias did on the devices: ``left`` is the version the
    slots served, ``version`` the one pushed, one DeployReport per slot (none when no slot
    served ``left``)."""

    alias: str
    version: str
    left: str
    reports: list[DeployReport] = field(default_factory=list)
    move: dict | None = None

    @property
    def ok(self) -> bool:
        return all(report.ok for report in self.reports)

    def to_json(self) -> dict:
        return {"alias": self.alias, "version": self.version, "from": self.left, "move": self.move,
                "ok": self.ok, "deploys": [report.to_json() for report in self.reports]}

    def to_text(self) -> str:
        lines = []
        if self.move is not None:
            lines.append(f"{self.alias} rolled back: {self.left} -> {self.version}")
        if not self.reports:
            lines.append(f"No device slot serves model version {self.left} (as the deploy log says): "
                         "nothing to push.")
        lines += [report.to_text() for report in self.reports]
        return "\n".join(lines)


def redeploy_alias(project_dir: Path | str, alias: str, left: str | int | None = None, *,
                   progress: Callable[[Progress], None] | None = None,
                   cancel: CancelToken | None = None, timeout: float = DEFAULT_DEVICE_TIMEOUT_S,
                   paired: PairedDevices | None = None) -> AliasPush:
    """Push the version ``alias`` points to to every slot whose last switched deploy was
    ``left`` (default: the version the alias's last move came from), one deploy per slot."""
    from workbench.registry.deployments import slots_serving
    from workbench.registry.errors import RegistryError

    project_dir = Path(project_dir).expanduser().absolute()
    registry = _registry(project_dir)
    try:
        current = registry.aliases.all().get(alias)
        moves = registry.aliases.history(alias)
    except RegistryError as exc:
        raise DeviceError(str(exc)) from None
    if current is None:
        raise DeviceError(f"there is no alias {alias!r}; set it with `workbench registry alias {alias} NNNN`")
    if left is None:
        if not moves or moves[-1].previous is None:
            raise DeviceError(f"{alias} was never moved from another version, so no slot serves a version "
                              f"it left; deploy it with `workbench device deploy {alias}`")
        left = moves[-1].previous
    left_name, version = f"{int(left):04d}", f"{current:04d}"
    push = AliasPush(alias, version, left_name)
    by_slot: dict[str, list[str]] = {}
    for served in slots_serving(registry.store.folder, left_name, alias):
        by_slot.setdefault(served.slot, []).append(served.address)
    for slot, addresses in by_slot.items():
        push.reports.append(deploy_to_devices(project_dir, version, addresses, slot, progress, cancel,
                                              timeout=timeout, paired=paired, alias=alias))
    return push


def rollback_alias(project_dir: Path | str, alias: str, reason: str = "", *,
                   progress: Callable[[Progress], None] | None = None,
                   cancel: CancelToken | None = None, timeout: float = DEFAULT_DEVICE_TIMEOUT_S,
                   paired: PairedDevices | None = None) -> AliasPush:
    """Move ``alias`` back one move (``ModelRegistry.rollback``), then push the version it now
    points to to the slots that served the one it left."""
    from workbench.registry.errors import RegistryError

    project_dir = Path(project_dir).expanduser().absolute()
    try:
        move = _registry(project_dir).rollback(alias, reason)
    except RegistryError as exc:
        raise DeviceError(str(exc)) from None
    push = redeploy_alias(project_dir, alias, move.previous, progress=progress, cancel=cancel,
                          timeout=timeout, paired=paired)
    push.move = move.to_json()
    return push


__all__ = ["AliasPush", "redeploy_alias", "rollback_alias"]

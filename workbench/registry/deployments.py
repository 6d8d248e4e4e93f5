"""Which device slots serve which model version, as the deploy log says.

The device capability adds every deploy to ``<registry>/deployments/deployments.jsonl`` (one
JSON object a line: ``version``, ``alias`` (the alias deployed, "" for a version deployed by
number), ``slot``, ``sha256``, ``time`` and ``devices``, each with its ``device`` name,
``address`` and ``state``). A slot serves what its last deploy that switched put there, and it
serves an alias when that deploy was of the alias or of a bare version number. The registry reads the log (never writes it) so that moving an alias can say which
devices still serve the version the alias left, without the registry knowing devices.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

DEPLOYMENTS_FOLDER = "deployments"
DEPLOYMENT_LOG = "deployments.jsonl"
SWITCHED = "switched"


@dataclass(frozen=True)
class ServedSlot:
    """A device's slot and the model version its last switched deploy put there."""

    device: str
    address: str
    slot: str
    version: str
    sha256: str
    time: str
    alias: str = ""


def deployment_log(registry_folder: Path | str) -> Path:
    return Path(registry_folder) / DEPLOYMENTS_FOLDER / DEPLOYMENT_LOG


def served_slots(registry_folder: Path | str) -> list[ServedSlot]:
    """Every (device address, slot) ever switched, with what it serves now; a damaged line of
    the log is skipped (and logged), not a failure."""
    path = deployment_log(registry_folder)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    except OSError as exc:
        log.warning("cannot read the deploy log %s: %s", path, exc)
        return []
    latest: dict[tuple[str, str], ServedSlot] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            for device in entry["devices"]:
                if device.get("state") == SWITCHED:
                    key = (str(device["address"]), str(entry["slot"]))
                    latest.pop(key, None)  # keep the order of the latest switches
                    latest[key] = ServedSlot(str(device.get("device") or device["address"]),
                                             key[0], key[1], str(entry["version"]),
                                             str(entry.get("sha256", "")), str(entry.get("time", "")),
                                                 str(entry.get("alias") or ""))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("%s line %d is damaged (%s); skipped", path, number, exc)
    return list(latest.values())


def slots_serving(registry_folder: Path | str, version: int | str,
                  alias: str | None = None) -> list[ServedSlot]:
    """The slots whose last switched deploy was model version ``version`` (NNNN or a number);
    with ``alias``, only those deployed as that alias or by number (not as another alias)."""
    wanted = f"{int(version):04d}"
    return [served for served in served_slots(registry_folder) if served.version == wanted
            and (alias is None or served.alias in ("", alias))]


def still_serving_hint(registry_folder: Path | str, move, project: Path | str | None = None) -> str:
    """One line naming the device slots that still serve the version an alias ``move`` (an
    AliasMove) left, and the command that pushes the alias's version to them; "" when none."""
    if move.previous is None or move.version is None:
        return ""
    serving = slots_serving(registry_folder, move.previous, move.alias)
    if not serving:
        return ""
    where = ", ".join(f"{served.device} ({served.slot})" for served in serving)
    command = f"workbench device redeploy {str(project) + ' ' if project else ''}{move.alias}"
    return (f"devices still serve {move.previous:04d}: {where}; run `{command}` to push "
            f"{move.version:04d} to them.")

"""What a run on a cluster was last started with in a project: the profile, and the resources
asked of each profile. The Run on Cluster dialog starts from it; the dialog and
`workbench train --cluster` record it. Kept in ``<project>/.workbench/cluster-run.json``; a
convenience, so a missing or damaged file just means the profile's defaults. Called on worker
threads."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

FILE_NAME = "cluster-run.json"


@dataclass
class LastChoice:
    profile: str = ""
    resources: dict[str, dict] = field(default_factory=dict)
    """``{profile name: Resources as JSON}``."""
    hparams_file: str | None = None
    overrides: list[str] = field(default_factory=list)


def choice_file(project_dir: Path | str) -> Path:
    from workbench.project.project_file import STATE_DIR

    return Path(project_dir) / STATE_DIR / FILE_NAME


def read_choice(project_dir: Path | str) -> LastChoice:
    try:
        data = json.loads(choice_file(project_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return LastChoice()
    if not isinstance(data, dict):
        return LastChoice()
    resources = data.get("resources")
    overrides = data.get("overrides")
    hparams = data.get("hparams_file")
    return LastChoice(
        profile=data.get("profile") if isinstance(data.get("profile"), str) else "",
        resources={k: v for k, v in resources.items() if isinstance(v, dict)} if isinstance(resources, dict) else {},
        hparams_file=hparams if isinstance(hparams, str) else None,
        overrides=[o for o in overrides if isinstance(o, str)] if isinstance(overrides, list) else [])


def remember_choice(project_dir: Path | str, profile: str, resources: dict, hparams_file: str | None,
                    overrides: list[str]) -> None:
    """Record this start's choices; does nothing where the project cannot be written."""
    from workbench.platform.atomic_files import write_text_atomically
    from workbench.project.project_file import ensure_state_dir

    choice = read_choice(project_dir)
    choice.profile = profile
    choice.resources[profile] = dict(resources)
    choice.hparams_file, choice.overrides = hparams_file, list(overrides)
    try:
        ensure_state_dir(Path(project_dir))
        write_text_atomically(choice_file(project_dir), json.dumps(choice.__dict__, indent=1) + "\n")
    except OSError:
        pass  # a read-only project: the choices are simply not remembered

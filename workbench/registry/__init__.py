"""Versions: dataset versions (manifests ``train_NNNN.txt``), the model registry
(``bestmodel_NNNN.*`` with ``neural_net_info_NNNN.yaml``), retention, aliases and their history.
Qt-free; the window's Registry panel is in ``widgets/`` and the commands in ``cli.py``."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from workbench.registry.datasets import DatasetVersion, DatasetVersions
from workbench.registry.errors import RegistryError
from workbench.registry.models import ModelRegistry, ModelVersion
from workbench.registry.settings import RegistrySettings, read_settings

__all__ = ["DatasetVersion", "DatasetVersions", "ModelRegistry", "ModelVersion", "ProjectVersions",
           "RegistryError", "RegistrySettings", "open_versions"]


@dataclass
class ProjectVersions:
    """A project's dataset versions and model registry, from its workbench.toml."""

    project_dir: Path
    settings: RegistrySettings
    datasets: DatasetVersions
    models: ModelRegistry


def open_versions(project_dir: Path | str, settings: dict | None = None, python: str | None = None) -> ProjectVersions:
    """The versions of the project at ``project_dir`` (``settings``: its parsed workbench.toml,
    read when not given; ``python``: the interpreter that runs its code)."""
    from workbench.project.project_file import load_project

    project_dir = Path(project_dir)
    if settings is None:
        settings = load_project(project_dir).settings
    registry_settings = read_settings(project_dir, settings)
    if python is None:
        from workbench.adopt.parameters import project_python

        training = settings.get("training", {})
        python = project_python(project_dir, training if isinstance(training, dict) else {}) or sys.executable
    return ProjectVersions(project_dir, registry_settings,
                           DatasetVersions(project_dir, registry_settings, python),
                           ModelRegistry(registry_settings))

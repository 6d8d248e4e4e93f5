"""What ``workbench.toml`` says about versions::

    [data]
    train = "data/train"          # a folder whose files are the training samples
    val = "data/val"              # optional: a folder whose files are the validation samples
    samples = "data:sample_ids"   # or: the function naming the samples a dataset's code builds

    [registry]
    version_max = 5               # model versions kept (pinned and aliased ones on top)
    metric = "val_acc"            # which checkpoint is a run's best, and what the plot shows
    mode = "max"                  # max or min
    folder = "registry"           # where versions live, relative to the project folder

A wrong type or value is a RegistryError naming the key and what it takes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from workbench.registry.errors import RegistryError

DEFAULT_VERSION_MAX = 5
DEFAULT_FOLDER = "registry"


@dataclass(frozen=True)
class DataSource:
    """Where a dataset version's samples come from: files in folders, or a function of the
    project's code (``module:function``) that names the samples it builds."""

    train_folder: str = ""
    val_folder: str = ""
    samples_function: str = ""

    @property
    def declared(self) -> bool:
        return bool(self.train_folder or self.samples_function)


@dataclass(frozen=True)
class RegistrySettings:
    folder: Path
    version_max: int = DEFAULT_VERSION_MAX
    metric: str = ""
    mode: str = "max"
    data: DataSource = DataSource()


def read_settings(project_dir: Path, settings: dict) -> RegistrySettings:
    """The ``[registry]`` and ``[data]`` tables of ``settings`` (a parsed workbench.toml)."""
    registry = _table(settings, "registry")
    data = _table(settings, "data")
    version_max = registry.get("version_max", DEFAULT_VERSION_MAX)
    if isinstance(version_max, bool) or not isinstance(version_max, int) or version_max < 1:
        raise RegistryError(f"[registry] version_max in {project_dir / 'workbench.toml'} must be a whole "
                            f"number of at least 1, not {version_max!r}.")
    mode = registry.get("mode", "")
    metric = _text(registry, "metric", "registry", project_dir)
    if not mode:
        mode = "min" if any(word in metric for word in ("loss", "error")) else "max"
    if mode not in ("max", "min"):
        raise RegistryError(f"[registry] mode in {project_dir / 'workbench.toml'} must be \"max\" or \"min\", "
                            f"not {mode!r}.")
    folder = _text(registry, "folder", "registry", project_dir) or DEFAULT_FOLDER
    source = DataSource(train_folder=_text(data, "train", "data", project_dir),
                        val_folder=_text(data, "val", "data", project_dir),
                        samples_function=_text(data, "samples", "data", project_dir))
    if source.samples_function and ":" not in source.samples_function:
        raise RegistryError(f"[data] samples in {project_dir / 'workbench.toml'} must name a function as "
                            f"module:function (e.g. \"data:sample_ids\"), not {source.samples_function!r}.")
    return RegistrySettings(folder=Path(project_dir) / folder, version_max=version_max, metric=metric,
                            mode=mode, data=source)


def _table(settings: dict, name: str) -> dict:
    table = settings.get(name, {})
    if not isinstance(table, dict):
        raise RegistryError(f"[{name}] in workbench.toml must be a table.")
    return table


def _text(table: dict, key: str, name: str, project_dir: Path) -> str:
    value = table.get(key, "")
    if not isinstance(value, str):
        raise RegistryError(f"[{name}] {key} in {project_dir / 'workbench.toml'} must be text, not {value!r}.")
    return value.strip()

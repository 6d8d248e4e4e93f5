"""Training on a dataset version and from a model version (``--dataset-version``,
``--from-version``): what the run gets for them.

- A dataset version reaches the training script as environment variables: the manifest's path
  (``WORKBENCH_DATASET_MANIFEST``), the version (``WORKBENCH_DATASET_VERSION``) and the fixed
  validation split (``WORKBENCH_VAL_MANIFEST``). The training helpers read them; a script of
  its own reads the manifest from the first (docs/versions.md).
- A model version becomes FastNN's fine-tuning keys, ``task_type=finetune`` and
  ``ckpt_file_name=<its weights>``, as overrides, so the run's record shows them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from workbench.training.errors import TrainingError

DATASET_MANIFEST_VARIABLE = "WORKBENCH_DATASET_MANIFEST"
DATASET_VERSION_VARIABLE = "WORKBENCH_DATASET_VERSION"
VAL_MANIFEST_VARIABLE = "WORKBENCH_VAL_MANIFEST"


@dataclass
class VersionChoice:
    overrides: list[str] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)
    dataset_version: str = ""
    from_version: str = ""

    @property
    def any(self) -> bool:
        return bool(self.dataset_version or self.from_version)


def choose_versions(project_dir: Path, dataset_version: str | None, from_version: str | None,
                    on_cluster: bool = False) -> VersionChoice:
    """The overrides and environment for training on ``dataset_version`` (a number) from
    ``from_version`` (a number or an alias); TrainingError saying what to do when one is wrong."""
    choice = VersionChoice()
    if not dataset_version and not from_version:
        return choice
    if on_cluster:
        raise TrainingError("--dataset-version and --from-version train on this machine only: the manifest and "
                            "the weights are in this project's registry folder, which a cluster run does not "
                            "receive. Train here, or pass the data and weights with the cluster's own settings.")
    from workbench.project.project_file import load_project
    from workbench.registry import RegistryError, open_versions

    try:
        settings = load_project(project_dir).settings
        versions = open_versions(project_dir, settings)
        if dataset_version:
            version = versions.datasets.get(dataset_version)
            choice.dataset_version = version.name
            choice.environment[DATASET_MANIFEST_VARIABLE] = str(version.manifest.resolve())
            choice.environment[DATASET_VERSION_VARIABLE] = version.name
            val = versions.datasets.val_manifest()
            if val is not None:
                choice.environment[VAL_MANIFEST_VARIABLE] = str(val.resolve())
        if from_version:
            model = versions.models.resolve(from_version)
            weights = versions.models.weights_path(model.number)
            training = settings.get("training", {})
            if isinstance(training, dict) and training.get("parameters") in ("argparse", "hydra"):
                raise TrainingError(
                    f"--from-version sets the training helpers' task_type and ckpt_file_name, which "
                    f"{training.get('script', 'your script')} does not read: pass the weights with your own "
                    f"argument instead, e.g. --set <your weights flag>={weights}.")
            choice.from_version = model.name
            choice.overrides = ["task_type=finetune", f"ckpt_file_name={weights}"]
    except RegistryError as exc:
        raise TrainingError(f"Not started: {exc}") from None
    return choice

"""A model version of the digits project, as a completed run registers it: the run's trained
weights and their ONNX export filed as ``registry/models/bestmodel_0000.pt`` and ``.onnx``."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from tests.modeltools.conftest import RUN_ID, model_path


def register_digits_version(project: Path, onnx: Path) -> Path:
    """Register version 0000 of ``project`` from its run's model.pt and ``onnx`` (copied into
    the run's outputs first); returns the registry's models folder."""
    from workbench.registry import open_versions

    run = project / "runs" / RUN_ID
    shutil.copy(onnx, run / "outputs" / "model.onnx")
    models = open_versions(project).models
    version = models.register([(model_path(project), "best weights (val_acc)"),
                               (run / "outputs" / "model.onnx", "onnx")],
                              {"run": RUN_ID, "metrics": {"val_acc": 0.95}}, run_folder=run).version
    assert [item.name for item in version.files] == ["bestmodel_0000.pt", "bestmodel_0000.onnx"]
    return models.folder


def version_record(models_folder: Path, number: str = "0000") -> dict:
    import yaml

    return yaml.safe_load((models_folder / f"neural_net_info_{number}.yaml").read_text(encoding="utf-8"))


def sha256_of(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def damage_record(models_folder: Path, number: str = "0000") -> Path:
    """Make the version's YAML unreadable, as a bad merge or a half-edited file leaves it."""
    record = models_folder / f"neural_net_info_{number}.yaml"
    record.write_text("version: '0000'\nfiles: [ {name: bestmodel_0000.pt\n", encoding="utf-8")
    return record

"""A project's own code, as the model tools use it: its model factories, its datasets and the
hyper-parameters a model was trained with.

The tools never run the training script. They read its top-level imports (``import data``,
``import model``) and import those of the project's own modules, which is where the
``@models.register`` / ``@datasets.register`` decorators run. Imports torch: call only from a
tool's run function (a job process), never on a window's start-up path.

A project of the user's own training code (``[training] parameters = "argparse"`` or "hydra")
has no such registries: its models are built by a class of its code (``module:Class``, see
project_classes), called with the values its run recorded, and it has no dataset the tools can
read (they take a .npz file instead).
"""

from __future__ import annotations

import ast
import importlib
import json
import sys
from pathlib import Path
from typing import Any

from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.project_root import find_project_root  # noqa: F401 (a name of this module)
from workbench.modeltools.project_classes import (
    ADOPTED_STYLES,
    build_class,
    import_class,
    is_class_factory,
    model_classes,
    parse_factory,
)
from workbench.modeltools.state_dicts import load_into

RUNS_FOLDER = "runs"


class ProjectCode:
    """The code and settings of the project at ``root``."""

    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        from workbench_trainkit.hparams import read_project_training_settings

        try:
            self.training = read_project_training_settings(self.root)
        except Exception as exc:
            raise ModelToolError(f"{self.root / 'workbench.toml'}: {exc}") from None
        self._imported = False

    @property
    def adopted(self) -> bool:
        """Whether the project trains with a script of the user's own that takes its own
        arguments (no model or dataset registry, no .hparams files)."""
        return self.training.get("parameters") in ADOPTED_STYLES

    @property
    def script(self) -> Path:
        return self.root / str(self.training.get("script") or "train.py")

    def hparams_file_for(self, model_path: Path | None = None) -> Path | None:
        """The hyper-parameters a model was trained with: its run folder's copy when the model
        lies in ``runs/<id>/``, else the file ``[training] hparams`` names. In an adopted
        project: the run.json of the run that wrote the model."""
        if self.adopted:
            run_dir = self.run_of(model_path) if model_path is not None else None
            return run_dir / "run.json" if run_dir is not None else None
        if model_path is not None:
            run_dir = self.run_folder_of(model_path)
            if run_dir is not None:
                used = sorted(run_dir.glob("*.hparams"))
                if used:
                    return used[0]
        named = self.training.get("hparams")
        return self.root / named if named else None

    def run_folder_of(self, path: Path) -> Path | None:
        try:
            relative = Path(path).resolve().relative_to(self.root / RUNS_FOLDER)
        except ValueError:
            return None
        return self.root / RUNS_FOLDER / relative.parts[0] if len(relative.parts) > 1 else None

    def run_of(self, path: Path) -> Path | None:
        """The run folder that wrote ``path``: the one holding it, else the newest run whose
        products.json lists it (a script of the user's own may save anywhere)."""
        run_dir = self.run_folder_of(path)
        if run_dir is not None:
            return run_dir
        try:
            relative = Path(path).resolve().relative_to(self.root).as_posix()
        except ValueError:
            return None
        from workbench.modeltools.model_index import run_products

        claims = run_products(self.root).get(relative)
        return self.root / RUNS_FOLDER / claims[0][0] if claims else None

    def recorded_values(self, model_path: Path | None) -> dict:
        """The argument values the run that wrote ``model_path`` ran with (its run.json's
        "hparams"), or {} when no run is known."""
        run_dir = self.run_of(model_path) if model_path is not None else None
        if run_dir is None:
            return {}
        try:
            info = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        values = info.get("hparams") if isinstance(info, dict) else None
        return dict(values) if isinstance(values, dict) else {}

    def hparams(self, model_path: Path | None = None, overrides: tuple[str, ...] = ()) -> Any:
        """The trainkit HParams for ``model_path`` (see hparams_file_for); in an adopted
        project, the values its run recorded (a plain dict)."""
        if self.adopted:
            return self.recorded_values(model_path)
        from workbench_trainkit.hparams import HParamsError, load_hparams

        path = self.hparams_file_for(model_path)
        try:
            return load_hparams(path if path and path.is_file() else None, overrides,
                                project_dir=self.root)
        except HParamsError as exc:
            raise ModelToolError(str(exc)) from None

    def import_modules(self) -> list[str]:
        """Import the project modules the training script imports (registering its factories);
        returns their names."""
        if self._imported or self.adopted:
            return []
        names = local_imports(self.script, self.root)
        if str(self.root) not in sys.path:
            sys.path.insert(0, str(self.root))
        for name in names:
            try:
                importlib.import_module(name)
            except Exception as exc:
                raise ModelToolError(
                    f"{self.root / (name.replace('.', '/') + '.py')} failed to import "
                    f"({type(exc).__name__}: {exc}); fix it, or give the model as an ONNX, "
                    "TorchScript or .pt2 file") from None
        self._imported = True
        return names

    def model_names(self) -> list[str]:
        if self.adopted:
            return []
        from workbench_trainkit import models

        self.import_modules()
        return models.names()

    def build_model(self, factory: str, hparams: Any, weights: Path | None = None):
        """A model from the project's factory ``factory``, in eval mode, with ``weights`` (a
        state_dict, or a trainkit checkpoint holding one under "model") loaded. A factory
        ``module:Class`` is a class of the project's code (see build_class_model)."""
        if is_class_factory(factory):
            return self.build_class_model(factory, hparams, weights)[0]
        from workbench_trainkit import models
        from workbench_trainkit.errors import TrainkitError

        self.import_modules()
        try:
            model = models.get(factory)(hparams)
        except TrainkitError as exc:
            raise ModelToolError(f"{self.root}: {exc}") from None
        if weights is not None:
            load_weights(model, weights, factory)
        return model.eval()

    def build_class_model(self, factory: str, recorded: Any, weights: Path | None = None):
        """The project's class ``factory`` (``module:Class``) built with the values of
        ``recorded`` its __init__ takes, in eval mode, with ``weights`` loaded; returns (model,
        the names taken from ``recorded``)."""
        module, name = parse_factory(factory, self.root)
        cls = import_class(self.root, module, name)
        where = ("the run that wrote " + Path(weights).name) if weights is not None else "no run"
        model, used = build_class(cls, f"{module}:{name}", dict(recorded or {}), where)
        if weights is not None:
            load_into(model, weights, f"{module}:{name}")
        return model.eval(), used

    def model_classes(self) -> list:
        """The classes of the project's code a state_dict may be built by (ModelClass)."""
        return model_classes(self.root)

    def dataset_splits(self, hparams: Any) -> Any:
        if self.adopted:
            raise ModelToolError(
                f"{self.root} trains with its own script, so Workbench cannot read its dataset; "
                "give samples as a .npz file (--data) with x (inputs) and optionally y (labels)")
        from workbench_trainkit import datasets
        from workbench_trainkit.errors import TrainkitError

        self.import_modules()
        name = hparams.get("dataset_name")
        try:
            return datasets.get(name)(hparams)
        except TrainkitError as exc:
            raise ModelToolError(f"{self.root}: {exc}") from None


def load_weights(model, weights: Path, factory: str = "the model") -> None:
    """Load a state_dict file (a checkpoint holding one, or .safetensors) into ``model``;
    ModelToolError naming the file and the mismatched tensors when they do not fit."""
    load_into(model, weights, factory)


def local_imports(script: Path, root: Path) -> list[str]:
    """The top-level imports of ``script`` that are modules of the project at ``root``."""
    try:
        tree = ast.parse(Path(script).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelToolError(
            f"{script} does not exist; set [training] script in workbench.toml") from None
    except SyntaxError as exc:
        raise ModelToolError(f"{script}, line {exc.lineno}: {exc.msg}; fix it first") from None
    names = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            candidates = [node.module]
        else:
            continue
        for name in candidates:
            top = name.split(".")[0]
            if (root / f"{top}.py").is_file() or (root / top / "__init__.py").is_file():
                if name not in names:
                    names.append(name)
    return names

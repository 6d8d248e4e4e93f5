"""A project's own code, as the model tools use it: its model factories, its datasets and the
hyper-parameters a model was trained with.

The tools never run the training script. They read its top-level imports (``import data``,
``import model``) and import those of the project's own modules, which is where the
``@models.register`` / ``@datasets.register`` decorators run. Imports torch: call only from a
tool's run function (a job process), never on a window's start-up path.
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path
from typing import Any

from workbench.modeltools.errors import ModelToolError

RUNS_FOLDER = "runs"


def find_project_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` holding a ``workbench.toml``."""
    start = Path(start).resolve()
    for folder in (start, *start.parents) if start.is_dir() else start.parents:
        if (folder / "workbench.toml").is_file():
            return folder
    return None


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
    def script(self) -> Path:
        return self.root / str(self.training.get("script") or "train.py")

    def hparams_file_for(self, model_path: Path | None = None) -> Path | None:
        """The hyper-parameters a model was trained with: its run folder's copy when the model
        lies in ``runs/<id>/``, else the file ``[training] hparams`` names."""
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

    def hparams(self, model_path: Path | None = None, overrides: tuple[str, ...] = ()) -> Any:
        """The trainkit HParams for ``model_path`` (see hparams_file_for)."""
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
        if self._imported:
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
        from workbench_trainkit import models

        self.import_modules()
        return models.names()

    def build_model(self, factory: str, hparams: Any, weights: Path | None = None):
        """A model from the project's factory ``factory``, in eval mode, with ``weights`` (a
        state_dict, or a trainkit checkpoint holding one under "model") loaded."""
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

    def dataset_splits(self, hparams: Any) -> Any:
        from workbench_trainkit import datasets
        from workbench_trainkit.errors import TrainkitError

        self.import_modules()
        name = hparams.get("dataset_name")
        try:
            return datasets.get(name)(hparams)
        except TrainkitError as exc:
            raise ModelToolError(f"{self.root}: {exc}") from None


def load_weights(model, weights: Path, factory: str = "the model") -> None:
    """Load a state_dict file (or a checkpoint with one under "model") into ``model``;
    ModelToolError naming the file and the mismatched tensors when they do not fit."""
    import torch

    weights = Path(weights)
    try:
        state = torch.load(weights, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise ModelToolError(f"{weights} does not exist") from None
    except Exception as exc:
        raise ModelToolError(
            f"{weights} is not a PyTorch checkpoint or state_dict ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}); give the weights saved with "
            "torch.save(model.state_dict())") from None
    # A trainkit checkpoint keeps the weights under "model", a Lightning one under "state_dict".
    for key in ("model", "state_dict"):
        if isinstance(state, dict) and isinstance(state.get(key), dict):
            state = state[key]
            break
    if isinstance(state, dict):
        state = {k.removeprefix("model."): v for k, v in state.items()} if all(
            str(k).startswith("model.") for k in state) and state else state
    if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
        raise ModelToolError(f"{weights} holds no state_dict; save one with "
                             "torch.save(model.state_dict(), path)")
    state = {k.removeprefix("module."): v for k, v in state.items()}
    result = _load_state(model, state)
    if result:
        raise ModelToolError(
            f"{weights} does not match the model factory {factory!r}: {result}. Choose the "
            "factory the model was trained with (--model-factory), or the matching weights")


def _load_state(model, state: dict) -> str:
    expected = model.state_dict()
    missing = [k for k in expected if k not in state]
    unexpected = [k for k in state if k not in expected]
    wrong = [f"{k} {tuple(state[k].shape)} vs {tuple(v.shape)}" for k, v in expected.items()
             if k in state and hasattr(state[k], "shape") and tuple(state[k].shape) != tuple(v.shape)]
    problems = []
    for label, names in (("missing", missing), ("unexpected", unexpected), ("wrong shape", wrong)):
        if names:
            more = f" and {len(names) - 3} more" if len(names) > 3 else ""
            problems.append(f"{label}: {', '.join(names[:3])}{more}")
    if problems:
        return "; ".join(problems)
    model.load_state_dict(state)
    return ""


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

"""The model classes of a project's own code, for weights that need one to be built: a project
of the user's own training code has no registry of model factories, so a state_dict is built
by a class its code defines, named ``module:Class`` (``nets.resnet:ResNet18``, or
``nets/resnet.py:ResNet18``).

The classes are found without importing anything: a walk of the project's .py files (skipping
virtual environments, version control, runs and tests) reads each with ``ast`` for classes
deriving from ``nn.Module`` / ``torch.nn.Module`` / ``Module`` / ``LightningModule``, or from a
class of the project that does. ``model_classes`` is cheap enough for a tool window's worker
thread; building (``build_class``) imports the module and calls the class: a tool's run function
only.
"""

from __future__ import annotations

import ast
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from workbench.modeltools.errors import ModelToolError

# [training] parameters of a project that trains with its own script (no model registry).
ADOPTED_STYLES = ("argparse", "hydra")
MODULE_BASES = ("Module", "LightningModule")
SKIPPED_FOLDERS = {".venv", "venv", "env", ".git", "runs", "site-packages", "tests", "test",
                   "__pycache__", "node_modules", ".workbench", "build", "dist", "wandb",
                   "lightning_logs", "outputs"}
# A project with more source than this is not read any further: the walk must stay quick.
MAX_FILES = 2000
MAX_FILE_BYTES = 1_000_000
# Classes built to find the one that fits a state_dict, at most (each is imported and built).
MAX_TRIED = 40
# Top-level calls that show a module runs a script (or its training) when imported.
SCRIPT_CALLS = {"parse_args", "parse_known_args", "main", "fit", "train", "run", "exit",
                "train_model", "launch"}


@dataclass(frozen=True)
class ModelClass:
    """A class of the project's code deriving from torch's ``nn.Module``."""

    module: str          # dotted, relative to the project root
    name: str
    path: Path           # the file defining it
    line: int

    @property
    def factory(self) -> str:
        """How --model-factory names it."""
        return f"{self.module}:{self.name}"


def is_class_factory(text: str | None) -> bool:
    """Whether a model factory names a class of the project's code (``module:Class``) rather
    than a factory registered with the training helpers."""
    return bool(text) and ":" in str(text)


def parse_factory(text: str, root: Path) -> tuple[str, str]:
    """``(module, class)`` for ``module:Class`` or ``path/to/file.py:Class``; ModelToolError
    showing the form when ``text`` is not one."""
    location, _, name = str(text).strip().rpartition(":")
    if not location or not name.isidentifier():
        raise ModelToolError(f"--model-factory {text!r}: give a class of the project's code as "
                             "module:Class, e.g. model:Net or nets/resnet.py:ResNet18")
    if location.endswith(".py") or "/" in location or os.sep in location:
        path = Path(location)
        try:
            relative = (path if not path.is_absolute() else path.resolve().relative_to(root))
        except ValueError:
            raise ModelToolError(f"--model-factory {text!r}: {location} is not inside the "
                                 f"project {root}; give a module of the project") from None
        parts = list(relative.with_suffix("").parts) if relative.suffix == ".py" else list(relative.parts)
        if parts and parts[-1] == "__init__":
            parts.pop()
        location = ".".join(parts)
    if not all(part.isidentifier() for part in location.split(".")):
        raise ModelToolError(f"--model-factory {text!r}: {location!r} is not a module name; "
                             "give module:Class with the module dotted from the project root")
    return location, name


def model_classes(root: Path) -> list[ModelClass]:
    """The project's classes deriving from nn.Module (directly, or from such a class of the
    project), sorted by module and line."""
    root = Path(root)
    found: dict[str, tuple[str, Path, int, list[str]]] = {}  # key -> (module, path, line, bases)
    for path in _python_files(root):
        module = _module_name(path, root)
        if module is None:
            continue
        tree = _parsed(path)
        if tree is None:
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                bases = [_last_name(base) for base in node.bases]
                found[f"{module}:{node.name}"] = (module, path, node.lineno,
                                                  [b for b in bases if b])
    modules = {key for key, (_, _, _, bases) in found.items()
               if any(base in MODULE_BASES for base in bases)}
    # Classes deriving from one of the project's module classes, a few levels down.
    for _ in range(3):
        names = {key.rpartition(":")[2] for key in modules}
        more = {key for key, (_, _, _, bases) in found.items()
                if key not in modules and any(base in names for base in bases)}
        if not more:
            break
        modules |= more
    classes = [ModelClass(found[key][0], key.rpartition(":")[2], found[key][1], found[key][2])
               for key in modules]
    return sorted(classes, key=lambda c: (c.module, c.line))


def _python_files(root: Path):
    count = 0
    for folder, folders, files in os.walk(root):
        folders[:] = sorted(name for name in folders
                            if name not in SKIPPED_FOLDERS and not name.startswith("."))
        for name in sorted(files):
            if not name.endswith(".py") or name.startswith(("test_", "conftest")):
                continue
            count += 1
            if count > MAX_FILES:
                return
            yield Path(folder) / name


def _module_name(path: Path, root: Path) -> str | None:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    if not parts or not all(part.isidentifier() for part in parts):
        return None
    return ".".join(parts)


def _parsed(path: Path) -> ast.Module | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        return ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None


def _last_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def script_code_line(path: Path) -> int | None:
    """The line of the first top-level statement of ``path`` that runs a script when the module
    is imported (``args = parser.parse_args()``, ``main()``, a training loop), or None when
    importing it only defines things."""
    tree = _parsed(path)
    if tree is None:
        return None
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef,
                             ast.ClassDef)):
            continue
        if isinstance(node, ast.If) and _is_main_guard(node.test):
            continue
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)):
            return node.lineno
        for inner in ast.walk(node):
            if isinstance(inner, ast.Call) and _last_name(inner.func) in SCRIPT_CALLS:
                return node.lineno
    return None


def _is_main_guard(test: ast.expr) -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__")


def import_class(root: Path, module: str, name: str):
    """The class ``name`` of the project's module ``module``, imported with the project root on
    sys.path; ModelToolError when the module runs a script on import, fails, or has no such
    class."""
    import importlib

    root = Path(root).resolve()
    path = _module_file(root, module)
    if path is None:
        raise ModelToolError(f"--model-factory {module}:{name}: the project {root} has no module "
                             f"{module!r} ({module.replace('.', '/')}.py); "
                             f"{_offer(model_classes(root))}")
    line = script_code_line(path)
    if line is not None:
        raise ModelToolError(
            f"{path.relative_to(root)} runs code when imported (line {line}), so Workbench does "
            f"not import it to build {name}: move {name} into a module of its own, or put the "
            "script's code under if __name__ == \"__main__\":")
    _forget_other_projects(root, module)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    importlib.invalidate_caches()  # files written since the last import are found
    argv = sys.argv
    sys.argv = [str(path)]  # a module that reads its flags must not see the tool's own
    try:
        loaded = importlib.import_module(module)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt of the user's code too
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise ModelToolError(f"{path.relative_to(root)} failed to import ({type(exc).__name__}: "
                             f"{exc}); fix it, or give the model as an ONNX, TorchScript or .pt2 "
                             "file") from None
    finally:
        sys.argv = argv
    cls = getattr(loaded, name, None)
    if not isinstance(cls, type):
        import difflib

        here = [c.name for c in model_classes(root) if c.module == module]
        close = difflib.get_close_matches(name, here, n=1)
        hint = f" (did you mean {module}:{close[0]}?)" if close else ""
        raise ModelToolError(f"{path.relative_to(root)} has no class {name}{hint}; "
                             f"{_offer(model_classes(root))}")
    return cls


def _module_file(root: Path, module: str) -> Path | None:
    base = root.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _forget_other_projects(root: Path, module: str) -> None:
    """Drop a module of the same name imported from elsewhere (another project's ``model``), so
    the import finds this project's."""
    top = module.split(".")[0]
    for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
        where = getattr(sys.modules[name], "__file__", None) or ""
        if not where or not Path(where).resolve().is_relative_to(root):
            del sys.modules[name]


def _offer(classes: list[ModelClass]) -> str:
    if not classes:
        return "the project defines no class deriving from torch.nn.Module"
    return f"give --model-factory with one of: {listed(classes)}"


def listed(classes: list[ModelClass], most: int = 12) -> str:
    names = [c.factory for c in classes]
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def build_class(cls, factory: str, recorded: dict, where: str):
    """An instance of ``cls``, called with the keyword arguments of its __init__ that
    ``recorded`` (the run's values) has, its defaults for the others, and for a required one
    nobody recorded the network of that name its module defines; returns (model, the names
    taken from ``recorded``). ModelToolError naming a required argument nobody can fill."""
    import inspect

    try:
        parameters = list(inspect.signature(cls).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    arguments, missing = {}, []
    for parameter in parameters:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if parameter.name in recorded:
            arguments[parameter.name] = recorded[parameter.name]
        elif parameter.default is parameter.empty:
            network = _module_level_network(cls, parameter.name)
            if network is not None:
                arguments[parameter.name] = network
            else:
                missing.append(parameter.name)
    if missing:
        them = "it" if len(missing) == 1 else "them"
        raise ModelToolError(
            f"{factory} needs {', '.join(missing)} to be built, and {where} records no value for "
            f"{them}; give {them} a default in {cls.__name__}.__init__, or convert a model from "
            f"a run whose arguments include {them}")
    if any(p.kind == p.POSITIONAL_ONLY for p in parameters if p.name in arguments):
        raise ModelToolError(f"{factory} takes {', '.join(arguments)} positionally only; give "
                             "its __init__ keyword parameters")
    try:
        model = cls(**arguments)
    except Exception as exc:
        shown = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
        raise ModelToolError(f"{factory}({shown}) failed ({type(exc).__name__}: {exc}); fix it "
                             "in the project's code") from None
    if not hasattr(model, "state_dict"):
        raise ModelToolError(f"{factory} is not a torch.nn.Module; give a model class")
    return model, [name for name in arguments if name in recorded]


def _module_level_network(cls, name: str):
    """A copy of the network its module defines at top level under ``name``, as Lightning's
    quickstart does (``encoder = nn.Sequential(...)`` beside ``LitAutoEncoder(encoder, ...)``);
    None when there is none. A copy: loading the weights must not change the module's own."""
    import copy

    value = getattr(sys.modules.get(cls.__module__), name, None)
    if value is None or isinstance(value, type) or not callable(getattr(value, "state_dict", None)):
        return None
    return copy.deepcopy(value)


def matching_class(root: Path, weights: Path, recorded: dict, log=lambda text: None):
    """The one class of the project whose state_dict has the names and shapes of the weights
    file ``weights``, built (with the values of ``recorded`` its __init__ takes) and loaded;
    returns (its factory, the model in eval mode, the names taken from ``recorded``).
    ModelToolError listing the classes to choose from when none or several fit."""
    from workbench.modeltools.state_dicts import fitted, read_state_dict, shapes

    root = Path(root).resolve()
    state = read_state_dict(weights)
    classes = model_classes(root)
    if not classes:
        raise ModelToolError(
            f"{weights} holds only weights, and the project {root} defines no class deriving "
            "from torch.nn.Module to build them; give --model-factory as module:Class, or save "
            "the model as TorchScript (torch.jit.save) or an ExportedProgram (torch.export.save)")
    matches = []
    for candidate in classes[:MAX_TRIED]:
        try:
            cls = import_class(root, candidate.module, candidate.name)
            model, used = build_class(cls, candidate.factory, recorded, "the run")
        except ModelToolError as exc:
            log(f"Not tried {candidate.factory}: {exc}")
            continue
        spelling = fitted(state, shapes(model.state_dict()))
        if spelling is not None:
            matches.append((candidate, model, used, spelling))
    networks = [m for m in matches if not _is_lightning_module(m[1])]
    if len(matches) > 1 and len(networks) == 1:
        # A Lightning checkpoint fits its LightningModule and the network it holds as
        # self.model: the network is what runs on a device.
        log(f"{listed([m[0] for m in matches if m not in networks])} fits too; converting the "
            f"network it holds, {networks[0][0].factory}")
        matches = networks
    if len(matches) == 1:
        candidate, model, used, spelling = matches[0]
        model.load_state_dict(spelling)
        return candidate.factory, model.eval(), used
    if matches:
        raise ModelToolError(
            f"{weights.name} fits {len(matches)} classes of the project; give --model-factory "
            f"with one of: {listed([m[0] for m in matches])}")
    raise ModelToolError(
        f"no class of the project that builds without arguments has the keys and shapes of "
        f"{weights.name}; give --model-factory with one of: {listed(classes)}")


def _is_lightning_module(model) -> bool:
    return any(base.__name__ == "LightningModule" for base in type(model).__mro__)


def factory_suggestions(project: Path | None, model: Path | None) -> list[str]:
    """The classes (``module:Class``) a tool window offers for the model factory of ``model``:
    those of the project's code when the project trains with its own script and ``model``
    holds only weights; [] otherwise (a template project's factories are registered by name,
    and other model files hold their own code). Reads bytes and source only: for a worker thread
    of a tool window."""
    if model is None:
        return []
    if project is None:
        from workbench.modeltools.project_root import find_project_root

        project = find_project_root(Path(model).parent)
        if project is None:
            return []
    import tomllib

    from workbench.modeltools import model_files

    try:
        settings = tomllib.loads((Path(project) / "workbench.toml").read_text(encoding="utf-8"))
        adopted = settings.get("training", {}).get("parameters") in ADOPTED_STYLES
        if not adopted:
            return []
        path = Path(model) if Path(model).is_absolute() else Path(project) / model
        if model_files.identify(path).kind != model_files.STATE_DICT:
            return []
    except (OSError, ValueError, AttributeError, ModelToolError):
        return []
    return [c.factory for c in model_classes(Path(project))]

"""Which model files a project holds: the outputs of its runs and models kept anywhere else in
it, with their size, time and the run they came from. The Models panel lists them; the cluster's
"model produced" notice picks a run's model with the same suffixes.

Qt-free and cheap: one walk of the project folder that skips what never holds the user's models
(version control, Workbench's own state, virtual environments, caches) and a run's checkpoints.

A run of a script that saves its models elsewhere in the project (``checkpoints/best.pth``)
lists them in its folder's ``products.json`` (written by its supervisor, see
workbench.training.written_files): such a model is listed under that run. A folder under
``runs/`` that is not a Workbench run (TensorBoard's ``runs/<date>_<host>/``) is walked as any
other folder. The model registry's folder (``registry/``) is left out: its versions are the
Registry panel's, and each is a run's model already listed under its run.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

# The file kinds a model tool opens, most wanted first (every suffix a built-in tool applies to
# is here: .pt2 is an ExportedProgram, .ts and .torchscript are TorchScript).
MODEL_SUFFIXES = (".onnx", ".pt", ".pth", ".pt2", ".ckpt", ".safetensors", ".tflite", ".mnn", ".bin",
                  ".torchscript", ".ts")
# Suffixes other files use too: such a file is a model only when it starts with these bytes
# (a TorchScript file is a zip archive; a TypeScript source is not).
CONTENT_CHECKED = {".ts": (b"PK\x03\x04",)}

# Folders never walked, wherever they are: they hold tools, caches and state, not models.
SKIPPED_FOLDERS = frozenset({".git", ".workbench", ".venv", "venv", "node_modules", "__pycache__",
                             ".mypy_cache", ".pytest_cache", "site-packages"})
RUNS_FOLDER = "runs"
# Inside a run folder only these hold models worth listing (checkpoints/ would drown them).
RUN_MODEL_FOLDERS = ("outputs",)
# A walk stops after this many entries, so a project with a huge data folder stays cheap.
MAX_ENTRIES = 200_000
# In a run folder: ``{"products": [{"path": project-relative, "size": ..., "modified": ...}]}``.
PRODUCTS_FILE = "products.json"
# What makes a folder under runs/ a Workbench run folder (it is created with all three).
RUN_FOLDER_MARKS = ("run.json", "outputs", "checkpoints")


@dataclass(frozen=True)
class ModelFile:
    """One model file: ``run_id`` is the run folder it lies in (None outside ``runs/``)."""

    path: Path
    size: int
    modified: float
    run_id: str | None = None

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def suffix(self) -> str:
        return self.path.suffix.lower()


@dataclass
class ModelGroup:
    """The models of one run (``run_id``), or the project's other models (``run_id`` None)."""

    title: str
    run_id: str | None
    models: list[ModelFile] = field(default_factory=list)

    @property
    def newest(self) -> float:
        return max((m.modified for m in self.models), default=0.0)


def is_model_file(path: Path | str) -> bool:
    """True for a file with a model suffix that is not a hidden or temporary file. A suffix
    other files use too (``.ts``) also needs the file's first bytes to be a model's."""
    name = Path(path).name
    suffix = Path(name).suffix.lower()
    if name.startswith(".") or suffix not in MODEL_SUFFIXES:
        return False
    return suffix not in CONTENT_CHECKED or starts_like_a_model(path)


def starts_like_a_model(path: Path | str) -> bool:
    """Whether the file at ``path`` begins as a model of its suffix does (True for a suffix
    that needs no look inside; False when the file cannot be read)."""
    magics = CONTENT_CHECKED.get(Path(path).suffix.lower())
    if not magics:
        return True
    try:
        with open(path, "rb") as handle:
            head = handle.read(max(len(m) for m in magics))
    except OSError:
        return False
    return any(head.startswith(magic) for magic in magics)


def model_among(paths: list[str]) -> str | None:
    """The model among ``paths`` (the most wanted kind first; None without one)."""
    for suffix in MODEL_SUFFIXES:
        for path in paths:
            if path.lower().endswith(suffix):
                return path
    return None


def run_id_of(root: Path, path: Path) -> str | None:
    """The id of the run folder holding ``path`` (``runs/<id>/...``), None elsewhere."""
    try:
        parts = Path(path).relative_to(root).parts
    except ValueError:
        return None
    return parts[1] if len(parts) > 2 and parts[0] == RUNS_FOLDER else None


def name_in_project(root: Path | str | None, path: Path | str) -> str:
    """How the project names ``path``: relative to the project's folder
    (``runs/<id>/outputs/model.onnx``, ``exported/base.onnx``); outside the project (or without
    one), the file's name."""
    path = Path(path)
    if root is not None:
        try:
            return path.resolve().relative_to(Path(root).resolve()).as_posix()
        except (OSError, ValueError):
            pass
    return path.name


def name_in_run(root: Path | str | None, path: Path | str) -> tuple[str, str | None]:
    """``(name, run id)``: a run's model named relative to the run's outputs folder, as the
    Models panel lists it under its run; any other model as ``name_in_project`` names it
    (run id None)."""
    path = Path(path)
    run_id = run_id_of(Path(root), path) if root is not None else None
    if run_id is not None:
        for folder in RUN_MODEL_FOLDERS:
            try:
                return path.relative_to(Path(root) / RUNS_FOLDER / run_id / folder).as_posix(), run_id
            except ValueError:
                continue
    return name_in_project(root, path), run_id


def list_models(root: Path | str) -> list[ModelFile]:
    """Every model file of the project at ``root``, newest first."""
    root = Path(root)
    found: list[ModelFile] = []
    budget = [MAX_ENTRIES]
    _walk(root, root, found, budget, in_run=None, skip=_registry_folder(root))
    found = _with_producing_runs(root, found)
    found.sort(key=lambda m: (-m.modified, str(m.path)))
    return found


def _registry_folder(root: Path) -> Path | None:
    """Where the project's model registry is (None when workbench.toml cannot say)."""
    from workbench.project.errors import ProjectError
    from workbench.project.project_file import load_project
    from workbench.registry import RegistryError, read_settings

    try:
        return read_settings(root, load_project(root).settings).folder
    except (ProjectError, RegistryError):
        return None


def _walk(root: Path, folder: Path, found: list[ModelFile], budget: list[int], in_run: str | None,
          skip: Path | None = None) -> None:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    relative = folder.relative_to(root).parts
    for entry in entries:
        budget[0] -= 1
        if budget[0] < 0:
            return
        name = entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if is_dir:
            if name in SKIPPED_FOLDERS or name.startswith(".") or (skip is not None and Path(entry.path) == skip):
                continue
            if relative == (RUNS_FOLDER,) and _is_run_folder(entry.path):
                _walk_run(root, Path(entry.path), found, budget, name)
            else:
                _walk(root, Path(entry.path), found, budget, in_run, skip)
            continue
        if is_model_file(entry.path):
            try:
                stat = entry.stat()
            except OSError:
                continue
            found.append(ModelFile(Path(entry.path), stat.st_size, stat.st_mtime, in_run))


def _walk_run(root: Path, run_folder: Path, found: list[ModelFile], budget: list[int], run_id: str) -> None:
    for name in RUN_MODEL_FOLDERS:
        folder = run_folder / name
        if folder.is_dir():
            _walk(root, folder, found, budget, run_id)


def _is_run_folder(path: str) -> bool:
    return any(os.path.exists(os.path.join(path, mark)) for mark in RUN_FOLDER_MARKS)


def run_products(root: Path | str) -> dict[str, list[tuple[str, dict]]]:
    """The products the project's runs recorded: project-relative path -> [(run id, entry)],
    the newest run first."""
    runs = Path(root) / RUNS_FOLDER
    by_path: dict[str, list[tuple[str, dict]]] = {}
    try:
        run_ids = sorted((entry.name for entry in os.scandir(runs) if entry.is_dir(follow_symlinks=False)),
                         reverse=True)
    except OSError:
        return by_path
    for run_id in run_ids:
        try:
            data = json.loads((runs / run_id / PRODUCTS_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for entry in data.get("products", []) if isinstance(data, dict) else []:
            if isinstance(entry, dict) and isinstance(entry.get("path"), str):
                by_path.setdefault(entry["path"], []).append((run_id, entry))
    return by_path


def _with_producing_runs(root: Path, models: list[ModelFile]) -> list[ModelFile]:
    """``models`` with the run that wrote each one (as its products.json says) where it lies
    outside that run's folder. A file several runs wrote is the run's whose record still
    matches it (size and time), else the newest's."""
    products = run_products(root)
    if not products:
        return models
    placed = []
    for model in models:
        claims = products.get(name_in_project(root, model.path)) if model.run_id is None else None
        if claims:
            matching = [run_id for run_id, entry in claims
                        if entry.get("size") == model.size and abs(entry.get("modified", 0) - model.modified) < 0.01]
            model = ModelFile(model.path, model.size, model.modified, (matching or [claims[0][0]])[0])
        placed.append(model)
    return placed


def group_by_run(models: list[ModelFile]) -> list[ModelGroup]:
    """The models in groups, one per run and one for the rest ("Other files"), the group with the
    newest model first and the newest model first inside each group."""
    groups: dict[str | None, ModelGroup] = {}
    for model in models:
        group = groups.get(model.run_id)
        if group is None:
            title = f"Run {model.run_id}" if model.run_id else "Other files"
            group = groups[model.run_id] = ModelGroup(title, model.run_id)
        group.models.append(model)
    for group in groups.values():
        group.models.sort(key=lambda m: (-m.modified, m.name))
    return sorted(groups.values(), key=lambda g: (-g.newest, g.title))


def watched_folders(root: Path | str, models: list[ModelFile]) -> list[Path]:
    """The folders to watch for new models: the project, ``runs/``, each run's output folder
    and every folder already holding a model (a file system watcher does not recurse)."""
    root = Path(root)
    folders = {root}
    runs = root / RUNS_FOLDER
    if runs.is_dir():
        folders.add(runs)
        try:
            for entry in os.scandir(runs):
                if entry.is_dir(follow_symlinks=False):
                    folders.add(Path(entry.path))
                    for name in RUN_MODEL_FOLDERS:
                        if (Path(entry.path) / name).is_dir():
                            folders.add(Path(entry.path) / name)
        except OSError:
            pass
    folders.update(m.path.parent for m in models)
    return sorted(folders)

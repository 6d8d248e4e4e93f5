"""The training entry points of a folder: the scripts a user most likely runs to train.

Found by name (``train*.py``), by a ``__main__`` guard that builds an ``ArgumentParser``, by
``[project.scripts]`` in pyproject.toml and by a Hydra ``@hydra.main``; ranked so that
``train.py`` at the root comes first. Only the text of files is read: nothing is imported or run.
"""

from __future__ import annotations

import ast
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from workbench.adopt.errors import AdoptError

# Folders that hold no entry point of the project's own: tools, environments, dependencies, tests.
SKIPPED_FOLDERS = frozenset({".git", ".hg", ".svn", ".venv", "venv", "env", ".env", "site-packages",
                             "node_modules", "tests", "test", "__pycache__", ".workbench", "runs",
                             "build", "dist", ".tox", ".nox", ".mypy_cache", ".pytest_cache", "outputs",
                             "multirun", "wandb", "lightning_logs"})
# Entry points sit near the root; a deep walk of a large checkout would only find library code.
MAX_DEPTH = 3
MAX_SCRIPT_BYTES = 400_000
MAX_FILES_READ = 3000


@dataclass(frozen=True)
class EntryPoint:
    """A script that may be the project's training entry point.

    ``script`` is project-relative (POSIX); ``reasons`` say in words why it was picked;
    ``parameters`` is how it takes hyper-parameters ("argparse", "hydra" or "hparams") and
    ``config`` the Hydra primary config (project-relative) when there is one.
    """

    script: str
    score: int
    reasons: tuple[str, ...]
    parameters: str = "argparse"
    config: str = ""
    problems: tuple[str, ...] = field(default=())

    def describe(self) -> str:
        return f"{self.script} ({', '.join(self.reasons)})"


def find_entry_points(folder: Path) -> list[EntryPoint]:
    """The folder's entry points, most likely first (ties by path)."""
    folder = Path(folder)
    declared = _declared_scripts(folder)
    found = []
    files_read = 0
    for path in _python_files(folder):
        relative = path.relative_to(folder).as_posix()
        is_train_name = path.name.startswith("train") and path.name.endswith(".py")
        if not is_train_name and relative not in declared and files_read >= MAX_FILES_READ:
            continue
        files_read += 1
        entry = _entry_point(folder, path, relative, is_train_name, declared.get(relative))
        if entry is not None:
            found.append(entry)
    return sorted(found, key=lambda e: (-e.score, e.script.count("/"), e.script))


def clear_choice(entry_points: list[EntryPoint]) -> EntryPoint | None:
    """The one entry point that outranks all others, or None when none is found or the first
    places are tied (then the user chooses: nothing is guessed)."""
    if not entry_points:
        return None
    if len(entry_points) > 1 and entry_points[1].score == entry_points[0].score:
        return None
    return entry_points[0]


def entry_point_of(folder: Path, script: str | Path) -> EntryPoint:
    """The entry point for a script the user named (absolute, or relative to ``folder``);
    AdoptError when it is not a Python file inside the folder."""
    folder = Path(folder).resolve()
    path = Path(script).expanduser()
    path = (path if path.is_absolute() else folder / path).resolve()
    if not path.is_file():
        raise AdoptError(f"{script} is not a file in {folder}. Give the path of the training script, "
                         "relative to the folder.")
    if not path.is_relative_to(folder):
        raise AdoptError(f"{path} is outside {folder}: the training script must be inside the project folder.")
    if path.suffix != ".py":
        raise AdoptError(f"{script} is not a Python script (.py). Give the script that trains.")
    relative = path.relative_to(folder).as_posix()
    entry = _entry_point(folder, path, relative, True, _declared_scripts(folder).get(relative))
    return entry or EntryPoint(relative, 0, ("named with --script",))


def _python_files(folder: Path):
    for directory, subfolders, files in os.walk(folder):
        depth = len(Path(directory).relative_to(folder).parts)
        subfolders[:] = sorted(d for d in subfolders if d not in SKIPPED_FOLDERS and not d.startswith(".")
                               and depth + 1 <= MAX_DEPTH and not d.endswith(".egg-info"))
        for name in sorted(files):
            if name.endswith(".py"):
                yield Path(directory) / name


def _entry_point(folder: Path, path: Path, relative: str, is_train_name: bool,
                 declared_as: str | None) -> EntryPoint | None:
    try:
        if path.stat().st_size > MAX_SCRIPT_BYTES:
            return None
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    quick_main = "__main__" in text and "ArgumentParser" in text
    quick_hydra = "hydra" in text and (".main" in text or "@main(" in text)
    if not (is_train_name or declared_as or quick_main or quick_hydra):
        return None
    score, reasons, problems = 0, [], []
    depth = relative.count("/")
    if is_train_name:
        score += 100 if path.name == "train.py" else 60
        reasons.append("named train*.py")
    tree = None
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        problems.append(f"{relative} has a syntax error at line {exc.lineno}")
    hydra_config = ""
    if tree is not None:
        has_parser = any(_is_parser_call(node) for node in ast.walk(tree))
        if _has_main_guard(tree):
            score += 30 if has_parser else 10
            reasons.append("a __main__ with an ArgumentParser" if has_parser else "a __main__ guard")
        elif has_parser:
            score += 5
        hydra = _hydra_main(tree)
        if hydra is not None:
            score += 40
            reasons.append("a Hydra @hydra.main")
            hydra_config = _hydra_config_file(folder, path, *hydra)
    if declared_as:
        score += 40
        reasons.append(f"[project.scripts] {declared_as}")
    if not reasons:
        return None
    score -= 10 * depth
    parameters = "hydra" if hydra_config else "argparse"
    if "workbench_trainkit" in text and ("--hparams" in text or "load_hparams" in text):
        parameters = "hparams"
    return EntryPoint(relative, score, tuple(reasons), parameters, hydra_config, tuple(problems))


def _is_parser_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name == "ArgumentParser"


def _has_main_guard(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            sides = [node.test.left, *node.test.comparators]
            names = {s.id for s in sides if isinstance(s, ast.Name)}
            values = {s.value for s in sides if isinstance(s, ast.Constant)}
            if "__name__" in names and "__main__" in values:
                return True
    return False


def _hydra_main(tree: ast.Module) -> tuple[str | None, str | None] | None:
    """(config_path, config_name) of a function decorated with ``@hydra.main(...)``."""
    imported_main = any(isinstance(n, ast.ImportFrom) and n.module == "hydra"
                        and any(a.name == "main" for a in n.names) for n in ast.walk(tree))
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for decorator in node.decorator_list:
            if not isinstance(decorator, ast.Call):
                continue
            func = decorator.func
            is_hydra = (isinstance(func, ast.Attribute) and func.attr == "main" and isinstance(func.value, ast.Name)
                        and func.value.id == "hydra") or (imported_main and isinstance(func, ast.Name)
                                                          and func.id == "main")
            if is_hydra:
                words = {k.arg: k.value.value for k in decorator.keywords
                         if isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)}
                positional = [a.value for a in decorator.args if isinstance(a, ast.Constant)]
                return (words.get("config_path", positional[0] if positional else None),
                        words.get("config_name", positional[1] if len(positional) > 1 else None))
    return None


def _hydra_config_file(folder: Path, script: Path, config_path: str | None, config_name: str | None) -> str:
    """The primary config's path relative to the project, or "" when the decorator names none
    (Hydra then runs with an empty config) or it is not a file."""
    if not config_name:
        return ""
    base = script.parent / (config_path or ".")
    name = config_name if config_name.endswith((".yaml", ".yml")) else f"{config_name}.yaml"
    candidate = (base / name).resolve()
    try:
        return candidate.relative_to(folder.resolve()).as_posix() if candidate.is_file() else ""
    except ValueError:
        return ""


def _declared_scripts(folder: Path) -> dict[str, str]:
    """``[project.scripts]`` of pyproject.toml as {project-relative file: script name}, for the
    entries whose module is a file of the folder (at the root or under src/)."""
    pyproject = folder / "pyproject.toml"
    if not pyproject.is_file():
        return {}
    try:
        scripts = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {}).get("scripts", {})
    except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError):
        return {}
    found = {}
    for name, target in scripts.items() if isinstance(scripts, dict) else ():
        module = str(target).partition(":")[0].strip()
        for base in ("", "src/"):
            for candidate in (f"{base}{module.replace('.', '/')}.py", f"{base}{module.replace('.', '/')}/__main__.py"):
                if (folder / candidate).is_file():
                    found.setdefault(candidate, name)
    return found

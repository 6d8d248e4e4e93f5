"""The project: a folder, optionally with a ``workbench.toml`` at its root.

A folder without ``workbench.toml`` is still a project (editors open any folder); the file only
adds a name, the file to open first and settings for other capabilities.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.platform.atomic_files import write_text_atomically
from workbench.project.errors import ProjectError

PROJECT_FILE = "workbench.toml"
STATE_DIR = ".workbench"
DATA_HASH_CACHE_FILE = "data-hashes.json"


@dataclass
class Project:
    """An opened project folder.

    ``settings`` is the whole parsed ``workbench.toml`` (every table, including ``[project]``),
    so other capabilities read their own tables, e.g. ``settings.get("training", {})``.
    """

    root: Path
    name: str
    main_file: Path | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    has_project_file: bool = False
    writable: bool = True

    @property
    def project_file(self) -> Path:
        """Where this project's ``workbench.toml`` is (or would be)."""
        return self.root / PROJECT_FILE

    @property
    def key(self) -> str:
        """A short stable id of this project, see :func:`project_key`."""
        return project_key(self.root)


def project_key(root: Path | str) -> str:
    """A short id that is the same every time for the same folder (by its resolved path).

    Use it to name per-project things that live outside the project, such as sockets or caches.
    """
    import hashlib  # here, not at the top: it loads OpenSSL, and window start-up is timed

    resolved = str(Path(root).expanduser().resolve())
    return hashlib.sha256(resolved.encode("utf-8")).hexdigest()[:16]


def load_project(path: Path | str) -> Project:
    """Open the project in folder ``path``: read its ``workbench.toml`` when there is one.

    Raises ProjectError when the folder does not exist, is a file, or its project file is
    malformed or has values of the wrong type. The project file is only read, never changed.
    """
    root = Path(path).expanduser()
    if not root.exists():
        raise ProjectError(f"The project folder {root} does not exist. Check the path, or create "
                           "the project from a template.")
    if not root.is_dir():
        raise ProjectError(f"{root} is a file, not a folder. Open the folder that contains it.")
    root = root.resolve()
    settings = _read_project_file(root / PROJECT_FILE)
    has_project_file = (root / PROJECT_FILE).is_file()
    table = settings.get("project", {})
    if not isinstance(table, dict):
        raise ProjectError(_wrong_type(root, "project", "a table ([project])"))
    name = table.get("name", root.name)
    if not isinstance(name, str) or not name.strip():
        raise ProjectError(_wrong_type(root, "project.name", "a non-empty string"))
    main = table.get("main")
    if main is not None and not isinstance(main, str):
        raise ProjectError(_wrong_type(root, "project.main", "a string (a path relative to the "
                                                            "project folder)"))
    return Project(
        root=root,
        name=name.strip(),
        main_file=_main_file(root, main),
        settings=settings,
        has_project_file=has_project_file,
        writable=is_writable(root),
    )


def is_writable(folder: Path) -> bool:
    """Whether files can really be created in ``folder``.

    Probes by creating and deleting a file: ``os.access`` says yes to root even on a read-only
    mount, and tests run as root.
    """
    probe = folder / f".workbench-write-probe-{os.urandom(8).hex()}"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError:
        return False
    os.close(fd)
    try:
        probe.unlink()
    except OSError:
        pass
    return True


def ensure_state_dir(root: Path) -> Path:
    """Create (if needed) and return the project's ``.workbench`` folder.

    It gets its own ``.gitignore`` of ``*`` so Workbench's state never shows up as a change in
    the user's repository, whatever their own ``.gitignore`` says.
    """
    state = Path(root) / STATE_DIR
    state.mkdir(exist_ok=True)
    ignore = state / ".gitignore"
    if not ignore.exists():
        write_text_atomically(ignore, "# Workbench's own state for this project.\n*\n")
    return state


def enclosing_project(path: Path | str | None = None) -> Path | None:
    """The nearest folder at or above ``path`` (default: the current folder) that holds a
    workbench.toml; None when there is none. ``path`` must exist (a file counts as its folder)."""
    start = Path(path or Path.cwd()).expanduser().absolute()
    folder = start if start.is_dir() else start.parent
    for candidate in (folder, *folder.parents):
        if (candidate / PROJECT_FILE).is_file():
            return candidate
    return None


def data_hash_cache(root: Path | str):
    """The project's cache of its data files' sha256 by size and mtime, in
    ``.workbench/data-hashes.json``: the cluster's data sync and the dataset versions share it."""
    from workbench.platform.file_hashes import HashCache

    root = Path(root)
    return HashCache(root / STATE_DIR / DATA_HASH_CACHE_FILE, prepare_folder=lambda: ensure_state_dir(root))


def _read_project_file(file: Path) -> dict[str, Any]:
    if not file.is_file():
        return {}
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ProjectError(f"{file} is not UTF-8 text. Save it as UTF-8; Workbench left the file "
                           "untouched.") from None
    except OSError as exc:
        raise ProjectError(f"Cannot read {file}: {exc.strerror}. Check its permissions.") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        problem, line, column = _where(exc, text)
        raise ProjectError(f"{file} is not valid TOML at line {line}, column {column}: {problem}. "
                           "Fix it in an editor; Workbench left the file untouched.") from None


def _where(exc: tomllib.TOMLDecodeError, text: str) -> tuple[str, int, int]:
    """The problem, line and column of a TOML error.

    Python 3.11's tomllib has no lineno/colno attributes: the position is only in the message,
    as "(at line L, column C)" or "(at end of document)".
    """
    message = str(exc)
    found = re.search(r"\s*\(at line (\d+), column (\d+)\)$", message)
    if found:
        return message[: found.start()], int(found.group(1)), int(found.group(2))
    problem = re.sub(r"\s*\(at end of document\)$", "", message)
    lines = text.split("\n")
    return problem + " (the file ends too early)", len(lines), len(lines[-1]) + 1


def _wrong_type(root: Path, key: str, expected: str) -> str:
    return (f"In {root / PROJECT_FILE}, '{key}' must be {expected}. Fix the value; Workbench left "
            "the file untouched.")


def _main_file(root: Path, main: str | None) -> Path | None:
    """The file a new window opens first: ``main`` if given, else README.md, else the first
    ``*.py`` at the root by name."""
    if main:
        chosen = (root / main).resolve()
        # A main file that is missing or outside the folder is ignored rather than fatal: the
        # window still opens, and the user sees the project instead of an error.
        if chosen.is_file() and chosen.is_relative_to(root):
            return chosen
    readme = root / "README.md"
    if readme.is_file():
        return readme
    scripts = sorted(p for p in root.glob("*.py") if p.is_file())
    return scripts[0] if scripts else None

"""Creating, renaming and deleting files in a project, as the file tree does it.

Delete never destroys: it moves the item into ``.workbench/trash/<time>/`` under its path
relative to the project, so it can be put back by hand.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from workbench.project.errors import ProjectError
from workbench.project.project_file import PROJECT_FILE, STATE_DIR, ensure_state_dir

TRASH_DIR = "trash"


def check_name(name: str) -> str:
    """``name`` without surrounding spaces, if it can name one file or folder; else ProjectError."""
    cleaned = name.strip()
    if not cleaned:
        raise ProjectError("The name is empty. Type a name for the file or folder.")
    if "\0" in cleaned:
        raise ProjectError("The name contains a NUL character. Type the name again.")
    if "/" in cleaned or "\\" in cleaned:
        raise ProjectError(f"'{cleaned}' contains a slash. Type a single name; create folders one "
                           "at a time with New Folder.")
    if cleaned in (".", ".."):
        raise ProjectError(f"'{cleaned}' cannot be used as a name. Choose another name.")
    return cleaned


def create_file(folder: Path, name: str) -> Path:
    """Create an empty file ``name`` in ``folder`` and return its path."""
    target = _new_target(folder, name)
    try:
        # O_EXCL: never replace a file that appeared since the check above.
        os.close(os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        raise ProjectError(_exists_message(target)) from None
    except OSError as exc:
        raise ProjectError(f"Could not create {target}: {exc.strerror}.") from None
    return target


def create_folder(folder: Path, name: str) -> Path:
    """Create a folder ``name`` in ``folder`` and return its path."""
    target = _new_target(folder, name)
    try:
        target.mkdir()
    except FileExistsError:
        raise ProjectError(_exists_message(target)) from None
    except OSError as exc:
        raise ProjectError(f"Could not create the folder {target}: {exc.strerror}.") from None
    return target


def rename(path: Path, new_name: str) -> Path:
    """Give the file or folder at ``path`` the name ``new_name`` (same folder); return the new
    path."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise ProjectError(f"{path} does not exist any more. Refresh the file tree.")
    new_name = check_name(new_name)
    target = path.with_name(new_name)
    if new_name == path.name:
        return path
    # A case-only rename on a case-insensitive disk finds the "target" is the file itself.
    if (target.exists() or target.is_symlink()) and not _same_file(path, target):
        raise ProjectError(_exists_message(target))
    try:
        path.rename(target)
    except OSError as exc:
        raise ProjectError(f"Could not rename {path.name} to {new_name}: {exc.strerror}.") from None
    return target


def delete(path: Path, root: Path | None = None) -> Path:
    """Move ``path`` into the project's ``.workbench/trash/`` and return where it went.

    ``root`` is the project folder; by default the nearest folder above ``path`` holding a
    ``workbench.toml`` or ``.workbench``, else the folder ``path`` is in.
    """
    path = Path(path).absolute()
    if not path.exists() and not path.is_symlink():
        raise ProjectError(f"{path} does not exist any more. Refresh the file tree.")
    root = Path(root).absolute() if root is not None else _project_root_of(path)
    if path == root:
        raise ProjectError("The project folder itself cannot be deleted from the file tree. "
                           "Close the project and delete it in your file manager.")
    if not path.is_relative_to(root):
        raise ProjectError(f"{path} is not inside the project {root}; it was not deleted.")
    relative = path.relative_to(root)
    if relative.parts[0] == STATE_DIR:
        raise ProjectError(f"{relative} is Workbench's own state and cannot be moved to the trash. "
                           "Delete it in your file manager if you need to.")
    trash = _unique_folder(ensure_state_dir(root) / TRASH_DIR,
                           datetime.now().strftime("%Y%m%d-%H%M%S-%f"))
    destination = trash / relative
    try:
        destination.parent.mkdir(parents=True, exist_ok=True)
        import shutil  # only deleting needs it; the module is on the window's start-up path

        # shutil.move renames when it can and copies when the trash is on another disk.
        shutil.move(os.fspath(path), os.fspath(destination))
    except OSError as exc:
        raise ProjectError(f"Could not move {relative} to the trash: {exc.strerror or exc}. "
                           "Nothing was deleted.") from None
    return destination


def _new_target(folder: Path, name: str) -> Path:
    folder = Path(folder)
    if not folder.is_dir():
        raise ProjectError(f"The folder {folder} does not exist any more. Refresh the file tree.")
    target = folder / check_name(name)
    if target.exists() or target.is_symlink():
        raise ProjectError(_exists_message(target))
    return target


def _exists_message(target: Path) -> str:
    kind = "folder" if target.is_dir() else "file"
    return f"A {kind} named '{target.name}' already exists in {target.parent}. Choose another name."


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _project_root_of(path: Path) -> Path:
    for folder in path.parents:
        if (folder / PROJECT_FILE).is_file() or (folder / STATE_DIR).is_dir():
            return folder
    return path.parent


def _unique_folder(parent: Path, name: str) -> Path:
    parent.mkdir(parents=True, exist_ok=True)
    candidate, number = parent / name, 1
    while True:
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            candidate = parent / f"{name}-{number}"
            number += 1

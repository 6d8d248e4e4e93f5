"""Project templates: folders under ``resources/templates/`` that a new project is copied from.

Each template folder has a ``template.toml`` (``title``, ``description``) that describes it and
is not copied; everything else is, and the new project's name is written into its
``workbench.toml``.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from workbench.project.atomic_file import write_text_atomically
from workbench.project.errors import ProjectError
from workbench.project.project_file import PROJECT_FILE, Project, is_writable, load_project
from workbench.project.resources import templates_dir as bundled_templates_dir

TEMPLATE_FILE = "template.toml"

# Never carried from a template into a project: the description, and leftovers from trying the
# template out in place.
NOT_COPIED = (TEMPLATE_FILE, "__pycache__", "*.pyc", ".workbench", "runs", "outputs")


@dataclass(frozen=True)
class TemplateInfo:
    """A template as the New Project dialog lists it."""

    name: str
    title: str
    description: str
    folder: Path | None = None


def list_templates(templates_dir: Path | None = None) -> list[TemplateInfo]:
    """The available templates, by name. ``templates_dir`` defaults to the bundled ones."""
    folder = templates_dir or bundled_templates_dir()
    found = []
    for candidate in sorted(folder.iterdir()) if folder.is_dir() else []:
        if (candidate / TEMPLATE_FILE).is_file():
            found.append(_read_template(candidate))
    return found


def create_from_template(template: str, dest: Path | str, name: str | None = None,
                         templates_dir: Path | None = None) -> Project:
    """Make a new project at ``dest`` from ``template`` and return it, opened.

    ``dest`` must not exist or be an empty folder; its parent must exist and be writable.
    ``name`` defaults to the folder name. The project is built in a hidden sibling folder and
    renamed into place, so a failure never leaves a half-made project behind.
    """
    # Here, not at the top: only creating a project needs them, and window start-up is timed.
    import shutil
    import tempfile

    source = _find_template(template, templates_dir)
    dest = Path(dest).expanduser().absolute()
    _check_destination(dest)
    name = (name or dest.name).strip()
    if not name:
        raise ProjectError("The project name is empty. Give the project a name.")

    building = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".creating", dir=dest.parent))
    try:
        project_dir = building / "project"
        shutil.copytree(source, project_dir, ignore=shutil.ignore_patterns(*NOT_COPIED))
        _write_project_name(project_dir / PROJECT_FILE, name)
        if dest.exists():
            dest.rmdir()  # checked empty above; rename cannot replace a folder on every OS
        project_dir.rename(dest)
    except OSError as exc:
        raise ProjectError(f"Could not create the project at {dest}: {exc.strerror or exc}. "
                           "Nothing was created; check the disk space and permissions.") from exc
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return load_project(dest)


def _read_template(folder: Path) -> TemplateInfo:
    try:
        data = tomllib.loads((folder / TEMPLATE_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ProjectError(f"The template description {folder / TEMPLATE_FILE} cannot be read "
                           f"({exc}). Fix or remove that template.") from None
    return TemplateInfo(
        name=folder.name,
        title=str(data.get("title", folder.name)),
        description=str(data.get("description", "")),
        folder=folder,
    )


def _find_template(template: str, templates_dir: Path | None) -> Path:
    known = list_templates(templates_dir)
    for info in known:
        if info.name == template:
            return info.folder
    names = ", ".join(info.name for info in known) or "none are installed"
    raise ProjectError(f"There is no project template '{template}'. Choose one of: {names}.")


def _check_destination(dest: Path) -> None:
    if dest.is_file():
        raise ProjectError(f"{dest} is a file. Choose a new folder name for the project.")
    if dest.is_dir() and any(dest.iterdir()):
        raise ProjectError(f"The folder {dest} is not empty. Choose a new or empty folder; "
                           "nothing in it was changed.")
    parent = dest.parent
    # Missing folders on the way are made, as `mkdir -p` would; the nearest one that exists must
    # be a folder we can write in.
    existing = next(folder for folder in (parent, *parent.parents) if folder.exists())
    if not existing.is_dir():
        raise ProjectError(f"{existing} is a file, not a folder. Choose another place for the project.")
    if not is_writable(existing):
        raise ProjectError(f"Cannot write in {existing}. Choose a folder you can write to.")
    parent.mkdir(parents=True, exist_ok=True)


def _write_project_name(project_file: Path, name: str) -> None:
    """Set ``[project] name`` in ``project_file``, keeping the template's comments and layout."""
    # A JSON string is a valid TOML basic string (same escapes), so this quotes any name safely.
    quoted = json.dumps(name, ensure_ascii=False)
    text = project_file.read_text(encoding="utf-8") if project_file.is_file() else ""
    header = re.search(r"^\[project\][ \t]*$", text, flags=re.MULTILINE)
    if header is None:
        text = f"[project]\nname = {quoted}\n\n{text}"
    else:
        next_table = re.search(r"^\[", text[header.end():], flags=re.MULTILINE)
        end = header.end() + next_table.start() if next_table else len(text)
        table = text[header.end():end]
        name_line = re.compile(r"^name[ \t]*=.*$", flags=re.MULTILINE)
        if name_line.search(table):
            table = name_line.sub(lambda _: f"name = {quoted}", table, count=1)
        else:
            table = f"\nname = {quoted}" + table
        text = text[: header.end()] + table + text[end:]
    write_text_atomically(project_file, text)

"""Project templates: folders under ``resources/templates/`` that a new project is copied from.

Each template folder has a ``template.toml`` (``title``, ``description``) that describes it and
is not copied; everything else is, and the new project's name is written into its
``workbench.toml``. A project made outside any Git repository becomes one, with the template's
files as its first commit: its runs record the commit they trained, and a run on a cluster ships
the code through Git.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from workbench.project.errors import ProjectError
from workbench.project.project_file import PROJECT_FILE, Project, is_writable, load_project
from workbench.project.resources import templates_dir as bundled_templates_dir

TEMPLATE_FILE = "template.toml"

# Never carried from a template into a project: the description, and leftovers from trying the
# template out in place.
NOT_COPIED = (TEMPLATE_FILE, "__pycache__", "*.pyc", ".workbench", "runs", "outputs", ".git")
# The first commit's author and committer when the user has not told Git who they are; their
# own identity is set for the commits that follow (Source Control asks for it).
FALLBACK_NAME = "Workbench"
FALLBACK_EMAIL = "workbench@localhost"
DEFAULT_BRANCH = "main"   # unless the user's init.defaultBranch says otherwise


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
    ``name`` defaults to the folder name. Outside a Git repository, the project is made one
    with a first commit of its files (see ``_start_repository``). The project is built in a
    hidden sibling folder and renamed into place, so a failure never leaves a half-made project
    behind.
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
        _start_repository(project_dir, template, dest.parent)
        if dest.exists():
            dest.rmdir()  # checked empty above; rename cannot replace a folder on every OS
        project_dir.rename(dest)
    except OSError as exc:
        raise ProjectError(f"Could not create the project at {dest}: {exc.strerror or exc}. "
                           "Nothing was created; check the disk space and permissions.") from exc
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return load_project(dest)


def _start_repository(project_dir: Path, template: str, parent: Path) -> None:
    """Make ``project_dir`` (to be moved into ``parent``) a Git repository whose first commit
    holds its files (what the template's .gitignore leaves out stays out), unless ``parent`` is
    in a repository already or there is no git program. The author is the user's Git identity;
    without one, a neutral one for this commit only. ProjectError when Git fails."""
    try:
        # Leave this import here: GitPython is only needed to create a project. It fails to
        # import when there is no git program; the project is then made without a repository.
        import git
    except ImportError:
        return
    try:
        git.Git(str(parent)).rev_parse("--show-toplevel")
        return  # in a repository: the project is the user's to add to it
    except git.GitCommandError:
        pass
    try:
        options = {} if _git_setting("init.defaultBranch") else {"initial_branch": DEFAULT_BRANCH}
        repo = git.Repo.init(project_dir, **options)
        repo.git.add("--all")
        fallback = git.Actor(FALLBACK_NAME, FALLBACK_EMAIL)
        reader = repo.config_reader()
        author = _identity(reader, "AUTHOR") or fallback
        committer = _identity(reader, "COMMITTER") or fallback
        repo.index.commit(f"New project from the {template} template", author=author, committer=committer)
        repo.close()
    except (git.GitCommandError, OSError, ValueError) as exc:
        raise ProjectError(f"Could not make the new project a Git repository: {exc}. Nothing was created; check "
                           "that git works here (`git --version`).") from exc


def _identity(reader, role: str):
    """The identity Git would sign as ``role`` ("AUTHOR" or "COMMITTER") with: its GIT_<role>_*
    variables, else user.name and user.email from the Git configuration; None when either part
    is missing (Git would make one up from the account and host name)."""
    import git

    name = os.environ.get(f"GIT_{role}_NAME") or reader.get_value("user", "name", "")
    email = os.environ.get(f"GIT_{role}_EMAIL") or reader.get_value("user", "email", "")
    return git.Actor(str(name), str(email)) if name and email else None


def _git_setting(key: str) -> str:
    """A value of the user's Git configuration ("" when unset)."""
    import git

    try:
        return git.Git().config("--get", key)
    except git.GitCommandError:
        return ""


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
    from workbench.platform.toml_files import TomlFileError, editing

    try:
        with editing(project_file) as document:
            if "project" in document:
                document["project"]["name"] = name
            else:
                document["project"] = {"name": name}
    except TomlFileError as exc:
        raise ProjectError(f"The template's {PROJECT_FILE} cannot be changed: {exc}.") from None

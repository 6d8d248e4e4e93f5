"""The project capability: the project folder and its ``workbench.toml``, templates, the recent
projects list, per-project window state and file operations. Qt-free; widgets are in
``workbench.project.widgets``.

Names are imported from their modules on first use (PEP 562), so ``from workbench.project import
RecentProjects`` does not also load templates and file operations on a timed start-up path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.project.lazy_exports import lazy_exports

_WHERE = {
    "ProjectError": "errors",
    "check_name": "file_ops",
    "create_file": "file_ops",
    "create_folder": "file_ops",
    "delete": "file_ops",
    "rename": "file_ops",
    "PROJECT_FILE": "project_file",
    "STATE_DIR": "project_file",
    "Project": "project_file",
    "ensure_state_dir": "project_file",
    "is_writable": "project_file",
    "load_project": "project_file",
    "project_key": "project_file",
    "RecentProject": "recent",
    "RecentProjects": "recent",
    "user_config_dir": "recent",
    "resources_dir": "resources",
    "templates_dir": "resources",
    "TemplateInfo": "templates",
    "create_from_template": "templates",
    "list_templates": "templates",
    "OpenFile": "window_state",
    "WindowState": "window_state",
    "WindowStateStore": "window_state",
}

__all__ = sorted(_WHERE)


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, globals())


if TYPE_CHECKING:
    from workbench.project.errors import ProjectError
    from workbench.project.file_ops import (
        check_name,
        create_file,
        create_folder,
        delete,
        rename,
    )
    from workbench.project.project_file import (
        PROJECT_FILE,
        STATE_DIR,
        Project,
        ensure_state_dir,
        is_writable,
        load_project,
        project_key,
    )
    from workbench.project.recent import RecentProject, RecentProjects, user_config_dir
    from workbench.project.resources import resources_dir, templates_dir
    from workbench.project.templates import TemplateInfo, create_from_template, list_templates
    from workbench.project.window_state import OpenFile, WindowState, WindowStateStore

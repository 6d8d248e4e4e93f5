"""The project capability: the project folder and its ``workbench.toml``, templates, the recent
projects list, per-project window state and file operations. Qt-free; widgets are in
``workbench.project.widgets``."""

from workbench.project.errors import ProjectError
from workbench.project.file_ops import check_name, create_file, create_folder, delete, rename
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

__all__ = [
    "PROJECT_FILE",
    "STATE_DIR",
    "OpenFile",
    "Project",
    "ProjectError",
    "RecentProject",
    "RecentProjects",
    "TemplateInfo",
    "WindowState",
    "WindowStateStore",
    "check_name",
    "create_file",
    "create_folder",
    "create_from_template",
    "delete",
    "ensure_state_dir",
    "is_writable",
    "list_templates",
    "load_project",
    "project_key",
    "rename",
    "resources_dir",
    "templates_dir",
    "user_config_dir",
]

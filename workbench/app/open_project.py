"""`workbench open PATH`: find the project, then hand it to the running hub or start its window.

Kept free of Qt and of the CLI framework: with no hub running, this is the whole work of the
command, and every millisecond here comes before the window can start (see workbench.launch).
"""

from __future__ import annotations

import socket
from pathlib import Path

from workbench.ipc.endpoint import socket_path


class OpenError(Exception):
    """The path cannot be opened; the message says why and what to do."""


def project_root_for(path: Path) -> tuple[Path, Path | None]:
    """The project folder to open for ``path``, and the file to show if ``path`` is a file."""
    if not path.exists():
        if path.parent.is_dir():
            raise OpenError(f"{path} does not exist. Check the file name (or create the file first).")
        raise OpenError(f"{path} does not exist. Check the path, or create a project with `workbench new`.")
    if path.is_dir():
        return path, None
    for folder in path.parents:
        if (folder / "workbench.toml").is_file():
            return folder, path
    return path.parent, path


def hub_is_listening() -> bool:
    """Whether something accepts connections on the hub socket (a cheap look, no hello)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(socket_path()))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def check_project(root: Path) -> None:
    from workbench.project import load_project

    load_project(root)


def start_project_window(root: Path, file: Path | None, line: int | None) -> dict:
    """With no hub: start the project's window at once and check the project while it starts.

    The window starts the hub itself once it has painted (so the two do not compete for the CPU
    while it starts) and registers with it; on a bad project it stops by itself and the
    ProjectError raised here says why.
    """
    from workbench.app import launcher

    window_id = launcher.new_window_id()
    process = launcher.spawn_window(window_id, root, file, line, start_hub=True)
    check_project(root)
    return {"window_id": window_id, "pid": process.pid, "already_open": False}

"""Starting Workbench processes: the hub and window processes, each detached in its own session.

Detached (a new session, stdin closed, output to a log) so that killing one process, or its
terminal, never takes another with it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from workbench.ipc.endpoint import hub_log_path, runtime_dir


def new_window_id() -> str:
    return os.urandom(6).hex()


def _spawn(module: str, args: list[str], log_name: str) -> subprocess.Popen:
    log_path = runtime_dir() / "logs" / log_name
    log_path.parent.mkdir(mode=0o700, exist_ok=True)
    with open(log_path, "ab") as log_file:
        return subprocess.Popen(
            [sys.executable, "-m", module, *args],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            env=os.environ.copy(),
        )


def spawn_hub(show_welcome: bool = True) -> subprocess.Popen:
    args = [] if show_welcome else ["--no-welcome"]
    log_path = hub_log_path()
    with open(log_path, "ab") as log_file:
        return subprocess.Popen(
            [sys.executable, "-m", "workbench.app.hub_process", *args],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )


def spawn_window(
    window_id: str,
    project: Path | None = None,
    file: Path | None = None,
    line: int | None = None,
    start_hub: bool = False,
) -> subprocess.Popen:
    """Start a window process: for ``project``, or a spare (no project) waiting for one. With
    ``start_hub`` the window starts a hub itself if it finds none once it has painted."""
    args = ["--window-id", window_id]
    if start_hub:
        args.append("--start-hub")
    if project is not None:
        args += ["--project", str(project)]
    if file is not None:
        args += ["--file", str(file)]
    if line is not None:
        args += ["--line", str(line)]
    return _spawn("workbench.app.window_process", args, f"window-{window_id}.log")


def spawn_tool_window(window_id: str, tool: str, values: dict | None = None, project: str | Path | None = None,
                      run: bool = False) -> subprocess.Popen:
    """Start a model tool window process for ``tool`` with its form filled from ``values``
    (``run``: start the job at once)."""
    import json

    invocation = {"tool": tool, "values": values or {}, "project": str(project) if project else None}
    args = ["--window-id", window_id, "--tool", tool, "--invocation-json", json.dumps(invocation)]
    if project:
        args += ["--project", str(project)]
    if run:
        args.append("--run")
    return _spawn("workbench.app.tool_window_process", args, f"tool-{window_id}.log")


def open_tool_window(params: dict) -> tuple[str, subprocess.Popen]:
    """``hub.open_tool``'s work: check ``params`` ({tool, values, project?, run?}) and start the
    tool window; returns its window id and process. ValueError for unusable params."""
    tool = params.get("tool")
    values = params.get("values") or {}
    if not isinstance(tool, str) or not tool:
        raise ValueError("hub.open_tool needs a 'tool' name.")
    if not isinstance(values, dict):
        raise ValueError("hub.open_tool: 'values' must be an object.")
    window_id = new_window_id()
    return window_id, spawn_tool_window(window_id, tool, values, params.get("project"), bool(params.get("run")))

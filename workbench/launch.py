"""The `workbench` command's entry point.

`workbench open PATH` with no hub running is the path people take most and wait on (like
`code .`), so it is served here without loading the CLI framework; everything else goes to
workbench.cli.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def _quick_open(argv: list[str]) -> int | None:
    """Handle `open PATH [--line N]` when no hub runs; None when the full CLI should."""
    if len(argv) not in (2, 4) or argv[0] != "open" or argv[1].startswith("-"):
        return None
    line = None
    if len(argv) == 4:
        if argv[2] != "--line" or not argv[3].isdigit() or int(argv[3]) < 1:
            return None
        line = int(argv[3])
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or os.environ.get("QT_QPA_PLATFORM")):
        return None  # the CLI explains what to do without a display
    from workbench.app.open_project import OpenError, hub_is_listening, project_root_for, start_project_window

    try:
        if hub_is_listening():
            return None  # forwarding (and a socket that is not a hub's) is the CLI's work
        root, file = project_root_for(Path(argv[1]).expanduser().resolve())
        result = start_project_window(root, file, line)
    except OpenError as exc:
        print(f"workbench: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        from workbench.project import ProjectError

        if not isinstance(exc, ProjectError):
            raise
        print(f"workbench: {exc}", file=sys.stderr)
        return 1
    print(f"Opened {root} (pid {result['pid']})")
    return 0


def main() -> None:
    code = _quick_open(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from workbench.cli import main as cli_main

    cli_main()

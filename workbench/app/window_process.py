"""A window process: one project window (or a spare waiting to become one) and its hub link.

Run as ``python -m workbench.app.window_process --window-id ID [--project PATH]``. Without a
project it is a *spare*: it has already paid for Python, Qt and the window modules, so when the
hub hands it a project the window appears at once.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from workbench.app.hub_link import QUIT_ALL_TIMEOUT_MS
from workbench.app.heavy_modules import heavy_modules_loaded
from workbench.app.window_host import WindowHost
from workbench.ipc import messages
from workbench.ipc.endpoint import project_lock
from workbench.ipc.errors import IpcError, RpcError
from workbench.platform.locks import FileLock
from workbench.project import ProjectError, RecentProjects, load_project, project_key, user_config_dir
from workbench.qt.paint import after_first_paint, mark_first_paint
from workbench.ui.project_window import ProjectWindow

if TYPE_CHECKING:
    from workbench.ipc.connection import RpcConnection

log = logging.getLogger("workbench.window")

# A spare holds nothing of the user's: once it has had no hub for this long, it ends.
SPARE_ALONE_MS = 3000


class ProjectAlreadyOpen(Exception):
    pass


class ProjectWindowHost(WindowHost):
    """Keeps this process registered with whichever hub is running and answers its requests."""

    def __init__(self, window_id: str, start_hub: bool = False):
        super().__init__(window_id, start_hub=start_hub)
        self.window: ProjectWindow | None = None
        self._project_lock: FileLock | None = None

    heavy_modules_at_start: list[str] | None = None

    def _note_start_done(self) -> None:
        self.heavy_modules_at_start = heavy_modules_loaded()

    # --- the project --------------------------------------------------------------------------

    @property
    def kind(self) -> str:
        return messages.KIND_PROJECT if self.window is not None else messages.KIND_SPARE

    def open_project(self, path: Path, file: Path | None = None, line: int | None = None) -> None:
        project = load_project(path)
        lock = project_lock(project_key(project.root))
        if not lock.try_acquire():
            raise ProjectAlreadyOpen(str(project.root))
        self._project_lock = lock
        self.hub.give_up_after(None)  # a project window outlives hubs
        RecentProjects(user_config_dir()).add(project.root, project.name)
        self.window = ProjectWindow(project)
        # What the start-up loaded, noted as it ends (the capabilities just installed): what a
        # capability starts after it (a language server) loads off the start-up path.
        self.window.sig_capabilities_installed.connect(self._note_start_done)
        self.window.sig_closed.connect(self._on_window_closed)
        self.window.sig_broadcast.connect(self.broadcast)
        self.window.hub_requester = self.request_hub
        if file is not None:
            self.window.open_file(file, line)
        # The hub link loads after the first paint (Qt runs the newest event filter first, so
        # the paint mark is taken before it).
        after_first_paint(self.window, self.hub.connect_if_needed)
        mark_first_paint(self.window, "project")
        self.window.show()
        self.window.raise_()
        self.window.activateWindow()

    def warm_up(self) -> None:
        """Build and throw away a window on a scratch project, so that the real one is built
        from warm caches (lexer tables, Qt enums, fonts, styles): a spare's whole purpose."""
        scratch = Path(tempfile.mkdtemp(prefix="workbench-spare-"))
        try:
            (scratch / "main.py").write_text('"""Warm-up."""\nimport os\n\n\ndef f(x):\n    return [x, 1.0, "s"]  # c\n')
            window = ProjectWindow(load_project(scratch))
            # The settings package, the style and the palette: a real window takes them only
            # after its first paint, the spare's has them already.
            window.follow_settings()
            window.resize(1200, 780)
            window.grab()
            window.deleteLater()
            QApplication.processEvents()
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def broadcast(self, event: str, data: object) -> None:
        self.hub.broadcast(event, data)

    def request_hub(self, method: str, params: dict | None = None, on_result=None, on_error=None) -> None:
        """The window's requests to the hub (``ProjectWindow.request_hub``). With no hub to
        answer, a tool window is started directly, so the model tools work without one."""

        def failed(error: RpcError) -> None:
            if method == messages.HUB_OPEN_TOOL and error.code == RpcError.TIMEOUT:
                from workbench.app.launcher import open_tool_window

                try:
                    window_id, process = open_tool_window(params or {})
                except (OSError, ValueError) as exc:
                    error = RpcError(RpcError.APPLICATION_ERROR, f"Cannot start the tool window: {exc}")
                else:
                    if on_result is not None:
                        on_result({"window_id": window_id, "pid": process.pid, "without_hub": True})
                    return
            if on_error is not None:
                on_error(error)

        timeout_ms = QUIT_ALL_TIMEOUT_MS if method == messages.HUB_QUIT_ALL else 10_000
        self.hub.request(method, params, on_result=on_result, on_error=failed, timeout_ms=timeout_ms)

    def _on_window_closed(self) -> None:
        if self._project_lock is not None:
            self._project_lock.release()
        super()._on_window_closed()

    # --- the hub link -------------------------------------------------------------------------

    def wait_as_spare(self) -> None:
        """Link to the hub as a spare; with no hub for SPARE_ALONE_MS (it was stopped or
        killed, and none came after it), end: a spare has nothing to keep."""
        self.hub.give_up_after(SPARE_ALONE_MS, self._end_spare)
        self.hub.connect()

    def _end_spare(self) -> None:
        if self.window is None:
            log.info("Spare window without a hub for %s ms: ending", SPARE_ALONE_MS)
            self.hub.closing = True
            QApplication.instance().quit()

    def registered_project(self) -> str | None:
        return str(self.window.project.root) if self.window is not None else None

    def registered_title(self) -> str:
        return self.window.project.name if self.window is not None else ""

    def describe_window(self) -> dict:
        described = self.window.describe() if self.window is not None else {}
        return {**described, "heavy_modules_at_start": self.heavy_modules_at_start}

    # --- requests from the hub ----------------------------------------------------------------

    def on_window_open_project(self, params: dict, link: RpcConnection) -> dict:
        if self.window is not None:
            raise RpcError(RpcError.INVALID_REQUEST, "This window already has a project.")
        file = params.get("file")
        try:
            self.open_project(Path(params["path"]), Path(file) if file else None, params.get("line"))
        except (ProjectError, ProjectAlreadyOpen) as exc:
            QTimer.singleShot(0, QApplication.instance().quit)
            raise RpcError(RpcError.APPLICATION_ERROR, f"Cannot open the project: {exc}") from None
        link.notify(messages.WINDOW_STATE_CHANGED, {"window_id": self.window_id, **self._registration()})
        return {}

    def on_window_open_file(self, params: dict, link: RpcConnection) -> dict:
        if self.window is None:
            raise RpcError(RpcError.INVALID_REQUEST, "This window has no project yet.")
        self.window.open_file(Path(params["path"]), params.get("line"))
        return {}

    def on_window_run_command(self, params: dict, link: RpcConnection) -> dict:
        if self.window is None:
            raise RpcError(RpcError.INVALID_REQUEST, "This window has no project yet.")
        return self.run_command(self.window.commands, str(params.get("command")), params.get("args") or {})

    def on_window_quit(self, params: dict, link: RpcConnection):
        """Close as the user would (``force``: without asking anything); the answer says
        whether the window closed, and comes once it has."""
        if self.window is None or params.get("force"):
            if self.window is not None:
                self.window.discard_changes_on_close = True
            QTimer.singleShot(0, self._quit_now)
            return {"closed": True}
        return self.close_window_as_the_user_would()

    def _quit_now(self) -> None:
        if self.window is not None:
            self.window.close()
        else:
            self.hub.closing = True
            QApplication.instance().quit()

    def on_event(self, params: dict, link: RpcConnection) -> None:
        if self.window is not None:
            self.window.handle_event(str(params.get("event")), params.get("data"))


def _forward_to_running_window(project_root: str) -> None:
    """The project is open in another process: ask the hub to bring that window forward."""
    from workbench.ipc.client import HubClient

    try:
        with HubClient.connect(timeout=2.0) as hub:
            hub.call(messages.HUB_OPEN_PROJECT, {"path": project_root}, timeout=5.0)
    except (IpcError, RpcError) as exc:
        log.info("Project already open; could not ask the hub to focus it: %s", exc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="workbench-window")
    parser.add_argument("--window-id", required=True)
    parser.add_argument("--project", type=Path)
    parser.add_argument("--file", type=Path)
    parser.add_argument("--line", type=int)
    parser.add_argument("--start-hub", action="store_true", help="start a hub if none runs")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")

    app = QApplication(sys.argv[:1])
    app.setApplicationName("Workbench")
    host = ProjectWindowHost(args.window_id, start_hub=args.start_hub)
    if args.project is not None:
        try:
            host.open_project(args.project, args.file, args.line)
        except ProjectAlreadyOpen as exc:
            _forward_to_running_window(str(exc))
            return 0
        except ProjectError as exc:
            # The CLI and the hub check the project before starting a window, so this is rare;
            # a dialog here could wait forever on a machine without a display.
            print(f"workbench: {exc}", file=sys.stderr)
            return 2
    else:
        host.warm_up()
        host.wait_as_spare()
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())

"""A model tool window process: one tool invocation in a window of its own.

Run as ``python -m workbench.app.tool_window_process --window-id ID --tool NAME
--invocation-json FILE_OR_JSON [--project PATH] [--run]``. The hub starts it for
``hub.open_tool`` (a project window starts it directly when no hub runs). It registers with the
hub as a ``tool`` window, so it is listed and can be driven like a project window, and it
broadcasts ``model.produced`` when its job writes a model. Its job runs in a child process;
whatever happens to this process, no project window is affected.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtWidgets import QApplication

from workbench.app.heavy_modules import heavy_modules_loaded
from workbench.app.hub_link import QUIT_ALL_TIMEOUT_MS, HubLink
from workbench.ipc import messages
from workbench.ipc.errors import RpcError

if TYPE_CHECKING:
    from workbench.ipc.connection import RpcConnection
    from workbench.modeltools.widgets.tool_window import ToolWindow

log = logging.getLogger("workbench.tool_window")


class ToolWindowHost(QObject):
    """Keeps a tool window registered with whichever hub runs and answers the hub's requests.

    ``window.run_command`` takes the commands ``tool.run``, ``tool.cancel``, ``tool.describe``,
    ``tool.set_values`` ({values}), ``tool.export_markdown`` ({path}) and ``tool.close``."""

    def __init__(self, window_id: str, window: "ToolWindow"):
        super().__init__()
        self.window_id = window_id
        self.window = window
        self.started_at = time.time()
        self.hub = HubLink(self, self._registration, parent=self)
        window.sig_model_produced.connect(lambda data: self.hub.broadcast(messages.EVENT_MODEL_PRODUCED, data))
        window.sig_closed.connect(self._on_window_closed)
        window.windowTitleChanged.connect(self._title_changed)
        # The menu's title is there from the first paint, so nothing moves when install_commands
        # fills the menu just after it (a process's first shortcut costs tens of milliseconds).
        window.menuBar().addMenu("File")
        self.commands = None
        self.menus = None

    def install_commands(self) -> None:
        """The tool window's File menu: Close Window and Quit Workbench."""
        if self.commands is not None:
            return
        from workbench.ui.commands import CommandRegistry, add_quit_command
        from workbench.ui.menus import MenuBuilder

        self.commands = CommandRegistry()
        self.commands.add("file.closeWindow", "Close Window", self.window.close, category="File", menu="File",
                          shortcut="Ctrl+Shift+W")
        self.menus = MenuBuilder(self.window, self.commands, self._show_error)
        self.menus.add_separator("File")
        add_quit_command(self.commands, self.quit_workbench)
        self.menus.prune_empty()

    def quit_workbench(self) -> None:
        """Ask the hub to close every window and end Workbench; with no hub, close this one."""

        def failed(error: RpcError) -> None:
            if getattr(error, "no_hub", False):
                self.window.close()
            elif error.code != RpcError.TIMEOUT:
                self._show_error(f"Workbench could not quit: {error.message}")

        self.hub.request(messages.HUB_QUIT_ALL, {}, on_error=failed, timeout_ms=QUIT_ALL_TIMEOUT_MS)

    def _show_error(self, message: str) -> None:
        from PySide6.QtWidgets import QMessageBox

        box = QMessageBox(QMessageBox.Icon.Warning, "Workbench", message, QMessageBox.StandardButton.Ok, self.window)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()

    def _registration(self) -> dict:
        return {
            "window_id": self.window_id,
            "pid": os.getpid(),
            "kind": messages.KIND_TOOL,
            "project": str(self.window.project) if self.window.project else None,
            "state": messages.STATE_READY,
            "title": self.window.windowTitle(),
            "started_at": self.started_at,
        }

    def _title_changed(self, title: str) -> None:
        self.hub.notify(messages.WINDOW_STATE_CHANGED,
                        {"window_id": self.window_id, "state": messages.STATE_READY, "title": title})

    def _on_window_closed(self) -> None:
        self.hub.say_closing(self.window_id)
        QTimer.singleShot(0, QApplication.instance().quit)

    # --- requests from the hub ----------------------------------------------------------------

    def on_window_focus(self, params: dict, link: RpcConnection) -> dict:
        if self.window.isMinimized():
            self.window.showNormal()
        self.window.raise_()
        self.window.activateWindow()
        return {}

    def on_window_describe(self, params: dict, link: RpcConnection) -> dict:
        return {"window_id": self.window_id, "pid": os.getpid(), "kind": messages.KIND_TOOL,
                "heavy_modules_loaded": heavy_modules_loaded(),
                "project": str(self.window.project) if self.window.project else None,
                **self.window.describe()}

    def on_window_run_command(self, params: dict, link: RpcConnection) -> dict:
        command = str(params.get("command"))
        args = params.get("args") or {}
        window = self.window
        if command == "tool.run":
            result: Any = window.run()
        elif command == "tool.cancel":
            window.cancel()
            result = True
        elif command == "tool.describe":
            result = window.describe()
        elif command == "tool.set_values":
            window.form.set_values(dict(args.get("values") or {}))
            result = window.form.values()
        elif command == "tool.export_markdown":
            result = window.result_view.export_markdown(str(args["path"])) if "path" in args else None
        elif command == "tool.close":
            QTimer.singleShot(0, window.close)
            result = True
        elif self.commands is not None and command in self.commands:
            from workbench.ui.commands import CommandError

            try:
                result = self.commands.execute(command, **args)
            except CommandError as exc:
                raise RpcError(RpcError.APPLICATION_ERROR, str(exc)) from None
        else:
            raise RpcError(RpcError.APPLICATION_ERROR, f"There is no command {command!r} in a tool window.")
        return {"result": result}

    def on_window_quit(self, params: dict, link: RpcConnection):
        """Close as the user would (a running job is cancelled); the answer says whether the
        window closed, and comes once it has."""
        from workbench.ipc.connection import DeferredAnswer

        answer = DeferredAnswer()

        def close() -> None:
            closed = self.window.close()
            answer.resolve({"closed": bool(closed)})
            self.hub.flush()  # the process ends with the window

        QTimer.singleShot(0, close)
        return answer

    def on_event(self, params: dict, link: RpcConnection) -> None:
        """Other windows' events do not concern a tool window."""


def read_invocation(text: str) -> dict:
    """``--invocation-json``: the JSON itself, or the path of a file holding it."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        stripped = Path(stripped).read_text(encoding="utf-8")
    data = json.loads(stripped)
    if not isinstance(data, dict):
        raise ValueError("the invocation must be a JSON object")
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="workbench-tool-window")
    parser.add_argument("--window-id", required=True)
    parser.add_argument("--tool", required=True)
    parser.add_argument("--invocation-json", default="{}", help="the ToolInvocation as JSON, or a file holding it")
    parser.add_argument("--project", type=Path)
    parser.add_argument("--run", action="store_true", help="start the job as soon as the window shows")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")

    from workbench.modeltools.errors import ModelToolError
    from workbench.modeltools.params import ToolInvocation
    from workbench.modeltools.registry import get_tool

    try:
        data = read_invocation(args.invocation_json)
        spec = get_tool(args.tool)
    except (OSError, ValueError, ModelToolError) as exc:
        print(f"workbench: cannot open the {args.tool} tool window: {exc}", file=sys.stderr)
        return 2
    invocation = ToolInvocation(args.tool, dict(data.get("values") or {}),
                                str(args.project) if args.project else data.get("project"))

    app = QApplication(sys.argv[:1])
    app.setApplicationName("Workbench")
    from workbench.modeltools.widgets.tool_window import ToolWindow
    from workbench.qt.paint import after_first_paint, mark_first_paint
    from workbench.qt.tasks import TaskRunner

    tasks = TaskRunner()
    window = ToolWindow(spec, invocation, tasks=tasks)
    tasks.setParent(window)
    host = ToolWindowHost(args.window_id, window)
    after_first_paint(window, host.hub.connect_if_needed)
    after_first_paint(window, host.install_commands)
    mark_first_paint(window, "tool")
    window.show()
    window.raise_()
    window.activateWindow()
    if args.run:
        QTimer.singleShot(0, window.run)
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())

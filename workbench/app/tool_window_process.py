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
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication

from workbench.app.hub_link import QUIT_ALL_TIMEOUT_MS
from workbench.app.window_host import WindowHost
from workbench.ipc import messages
from workbench.ipc.errors import RpcError

if TYPE_CHECKING:
    from workbench.ipc.connection import RpcConnection
    from workbench.modeltools.widgets.tool_window import ToolWindow

log = logging.getLogger("workbench.tool_window")


class ToolWindowHost(WindowHost):
    """Keeps a tool window registered with whichever hub runs and answers the hub's requests.

    ``window.run_command`` takes the commands ``tool.run``, ``tool.cancel``, ``tool.describe``,
    ``tool.set_values`` ({values}), ``tool.export_markdown`` ({path}) and ``tool.close``."""

    kind = messages.KIND_TOOL

    def __init__(self, window_id: str, window: "ToolWindow"):
        super().__init__(window_id, window)
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

    def registered_project(self) -> str | None:
        return str(self.window.project) if self.window.project else None

    def registered_title(self) -> str:
        return self.window.windowTitle()

    def describe_window(self) -> dict:
        return {"project": self.registered_project(), **self.window.describe()}

    def _title_changed(self, title: str) -> None:
        self.hub.notify(messages.WINDOW_STATE_CHANGED,
                        {"window_id": self.window_id, "state": messages.STATE_READY, "title": title})

    # --- requests from the hub ----------------------------------------------------------------

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
            return self.run_command(self.commands, command, args)
        else:
            raise RpcError(RpcError.APPLICATION_ERROR, f"There is no command {command!r} in a tool window.")
        return {"result": result}


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

    from workbench.ui.appearance import follow_settings_files, follow_theme_setting, window_settings

    # The theme of the project the tool works on (else the user's), like its project window,
    # followed as the settings files change.
    settings = window_settings(args.project / "workbench.toml" if args.project else None)
    follow_settings_files(settings, app)
    follow_theme_setting(settings)
    tasks = TaskRunner()
    window = ToolWindow(spec, invocation, tasks=tasks)
    tasks.setParent(window)
    host = ToolWindowHost(args.window_id, window)
    after_first_paint(window, host.hub.connect_if_needed)
    after_first_paint(window, host.install_commands)
    from workbench.ui.window_icons import install_tool_window_icons

    # After the first paint: the icon font and Qt's SVG plugin load with them.
    after_first_paint(window, lambda: install_tool_window_icons(window))
    mark_first_paint(window, "tool")
    window.show()
    window.raise_()
    window.activateWindow()
    if args.run:
        QTimer.singleShot(0, window.run)
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())

"""What every window process does for the hub, whatever its window: keep registered with
whichever hub runs, and answer the hub's focus, describe, run-command and quit requests.

The project window's process (``window_process``) and a model tool window's process
(``tool_window_process``) each subclass ``WindowHost`` with what differs: the kind they register
as, their project and title, what a description adds, and their commands.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QApplication

from workbench.app.heavy_modules import heavy_modules_loaded
from workbench.app.hub_link import HubLink
from workbench.ipc import messages
from workbench.ipc.errors import RpcError

if TYPE_CHECKING:
    from workbench.ipc.connection import DeferredAnswer, RpcConnection


class WindowHost(QObject):
    """One window process's side of the hub link, for its one window (``window``; a spare
    project process has none yet)."""

    kind = ""
    """What the hub lists the window as (``messages.KIND_*``)."""

    def __init__(self, window_id: str, window: Any = None, start_hub: bool = False):
        super().__init__()
        self.window_id = window_id
        self.window = window
        self.started_at = time.time()
        self.hub = HubLink(self, self._registration, start_hub, self)

    # --- what a subclass says about its window ------------------------------------------------

    def registered_project(self) -> str | None:
        """The project folder the window shows, as the hub lists it."""
        return None

    def registered_title(self) -> str:
        """The window's title, as the hub lists it."""
        return ""

    def describe_window(self) -> dict:
        """What ``window.describe`` adds to the process's own description."""
        return {}

    # --- registration -------------------------------------------------------------------------

    def _registration(self) -> dict:
        return {
            "window_id": self.window_id,
            "pid": os.getpid(),
            "kind": self.kind,
            "project": self.registered_project(),
            "state": messages.STATE_READY,
            "title": self.registered_title(),
            "started_at": self.started_at,
        }

    def _on_window_closed(self) -> None:
        self.hub.say_closing(self.window_id)
        QTimer.singleShot(0, QApplication.instance().quit)

    # --- requests from the hub ----------------------------------------------------------------

    def on_window_focus(self, params: dict, link: RpcConnection) -> dict:
        if self.window is not None:
            if self.window.isMinimized():
                self.window.showNormal()
            self.window.raise_()
            self.window.activateWindow()
        return {}

    def on_window_describe(self, params: dict, link: RpcConnection) -> dict:
        return {"window_id": self.window_id, "pid": os.getpid(), "kind": self.kind,
                "heavy_modules_loaded": heavy_modules_loaded(), **self.describe_window()}

    def on_window_quit(self, params: dict, link: RpcConnection) -> DeferredAnswer:
        """Close as the user would; the answer says whether the window closed, and comes once
        it has."""
        return self.close_window_as_the_user_would()

    def on_event(self, params: dict, link: RpcConnection) -> None:
        """Another window's event; a window that has a use for events overrides this."""

    def close_window_as_the_user_would(self) -> DeferredAnswer:
        """Close the window (which may ask the user first) and answer ``{"closed": bool}``."""
        from workbench.ipc.connection import DeferredAnswer

        answer = DeferredAnswer()

        def close() -> None:
            # Not inside the request's handler: the window may ask the user first, and the
            # link keeps working while it does.
            closed = self.window.close()
            answer.resolve({"closed": bool(closed)})
            self.hub.flush()  # the process ends with the window

        QTimer.singleShot(0, close)
        return answer

    @staticmethod
    def run_command(commands, command: str, args: dict) -> dict:
        """Run ``command`` of the registry ``commands`` for the hub: ``{"result": ...}`` with
        the result made JSON-able, or an RpcError that says why it could not run."""
        from workbench.ui.commands import CommandError

        try:
            result = commands.execute(command, **args)
        except CommandError as exc:
            raise RpcError(RpcError.APPLICATION_ERROR, str(exc)) from None
        return {"result": jsonable(result)}


def jsonable(value: Any) -> Any:
    """``value`` as JSON can carry it: paths as text, tuples as lists, anything else as its repr."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, Path):
        return str(value)
    return repr(value)

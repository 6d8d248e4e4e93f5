"""The hub: the welcome window, the registry of windows, and the IPC server.

It holds no project state, so losing it costs nothing: windows keep working and register again
with the next hub. The process entry point is workbench.app.hub_process.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
from pathlib import Path

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QApplication

from workbench import __version__
from workbench.app import launcher
from workbench.app.heavy_modules import heavy_modules_loaded
from workbench.app.quit_all import QuitAll
from workbench.app.registry import WindowEntry, WindowRegistry
from workbench.ipc import messages
from workbench.ipc.connection import DeferredAnswer, RpcConnection
from workbench.ipc.endpoint import socket_path
from workbench.ipc.errors import RpcError
from workbench.ipc.server import RpcServer
from workbench.platform.processes import is_alive
from workbench.project import ProjectError, RecentProjects, load_project, user_config_dir

log = logging.getLogger("workbench.hub")

# A spare window process is started this long after the hub has painted, so it does not compete
# with the first window for the two cores it may have.
SPARE_DELAY_MS = 800
# How long a window that lost its link may take to be seen dead before it is called unreachable.
CRASH_CHECK_MS = (50, 200, 500, 1000, 2000)
IDLE_QUIT_MS = 30_000
# A project's trigger watcher is started this long after its window was asked for: off the open
# path, and after the window's own start has had the cores.
TRIGGER_WATCHER_DELAY_MS = 1500


class Hub(QObject):
    """Answers the hub.* messages and keeps the registry true."""

    def __init__(self, welcome=None, keep_spare: bool = True):
        """``welcome`` is the welcome window when the hub process already shows one."""
        super().__init__()
        self.registry = WindowRegistry()
        self.recent = RecentProjects(user_config_dir())
        self._children: dict[str, subprocess.Popen] = {}
        self._links: dict[str, RpcConnection] = {}
        self._closing: set[str] = set()
        self._quitting: QuitAll | None = None
        self._shutting_down = False
        self._keep_spare = keep_spare and os.environ.get("WORKBENCH_NO_SPARE") != "1"
        self._welcome = None
        self.server = RpcServer(self, self)
        self.server.sig_connection_closed.connect(self._on_link_closed)
        self._reaper = QTimer(self)
        self._reaper.timeout.connect(self._reap_children)
        self._reaper.start(1000)
        if welcome is not None:
            self._adopt_welcome(welcome)
        else:
            # Started for a window that may fail to start: a hub with nothing to show goes away.
            QTimer.singleShot(IDLE_QUIT_MS, self._quit_if_idle)
        if self._keep_spare:
            QTimer.singleShot(SPARE_DELAY_MS, self._ensure_spare)

    def start(self) -> None:
        self.server.listen(socket_path())
        log.info("Hub %s listening on %s", os.getpid(), socket_path())

    # --- welcome window -------------------------------------------------------------------

    def show_welcome(self) -> None:
        if self._welcome is None:
            from workbench.ui.welcome_window import WelcomeWindow  # built on first need only

            self._adopt_welcome(WelcomeWindow(self.recent))
        self._welcome.show()
        self._welcome.raise_()
        self._welcome.activateWindow()

    def _adopt_welcome(self, welcome) -> None:
        self._welcome = welcome
        welcome.sig_open_project.connect(self._open_from_welcome)
        welcome.sig_reopen_window.connect(self._reopen_from_welcome)
        welcome.sig_closed.connect(lambda: self._quit_if_idle(welcome_closing=True))
        welcome.sig_quit_requested.connect(self._quit_from_welcome)
        welcome.install_commands()
        self._refresh_welcome()

    def _reopen_from_welcome(self, window_id: str) -> None:
        try:
            self.reopen_window(window_id)
        except RpcError as exc:
            self._welcome.show_error(exc.message)

    def _refresh_welcome(self) -> None:
        if self._welcome is not None:
            self._welcome.set_windows([e.to_json() for e in self.registry.entries()])

    def _open_from_welcome(self, path: str) -> None:
        try:
            self.open_project(path)
        except RpcError as exc:
            if self._welcome is not None:
                self._welcome.show_error(exc.message)

    def _quit_if_idle(self, welcome_closing: bool = False) -> None:
        welcome_shown = not welcome_closing and self._welcome is not None and self._welcome.isVisible()
        if not self.registry.has_user_windows() and not welcome_shown:
            self.shutdown()

    def shutdown(self) -> None:
        """End the hub. Spare windows end with it (they hold nothing of the user's); project and
        tool windows keep working and register with the next hub."""
        if self._shutting_down:
            return
        self._shutting_down = True
        log.info("Hub %s quitting", os.getpid())
        for entry in self.registry.entries(include_spares=True):
            if entry.kind != messages.KIND_SPARE:
                continue
            link = self._links.get(entry.window_id)
            process = self._children.get(entry.window_id)
            if link is not None and link.is_open:
                link.request(messages.WINDOW_QUIT, {"force": True})
                link.socket.flush()
            elif process is not None and process.poll() is None:
                process.terminate()  # started, not linked yet: nobody else will tell it
        self.server.close()
        QTimer.singleShot(100, QApplication.instance().quit)

    # --- quitting everything ------------------------------------------------------------------

    def quit_all(self, first: str | None = None, on_done=None) -> None:
        """Close every project and tool window the way its user would (``first`` is asked
        first), then end; a window that stays open stops it there. ``on_done`` gets
        ``{"quit": bool, "kept_open"?: window_id}``."""
        if self._quitting is not None:
            raise RpcError(RpcError.APPLICATION_ERROR, "Workbench is already quitting.")
        entries = [e for e in self.registry.entries() if e.kind in (messages.KIND_PROJECT, messages.KIND_TOOL)
                   and e.window_id in self._links]
        # Whoever asked first, then project windows (they may ask about unsaved edits), then
        # tool windows (they never keep the quit from happening).
        entries.sort(key=lambda e: (e.window_id != first, e.kind == messages.KIND_TOOL))

        def done(outcome: dict) -> None:
            self._quitting = None
            if on_done is not None:
                on_done(outcome)
            if outcome.get("quit"):
                self.shutdown()
            elif not self.registry.has_user_windows():
                self.show_welcome()

        self._quitting = QuitAll([(e.window_id, self._links[e.window_id]) for e in entries], done, self)
        self._quitting.start()

    def _quit_from_welcome(self) -> None:
        try:
            self.quit_all()
        except RpcError:
            pass  # already quitting

    # --- opening windows --------------------------------------------------------------------

    def open_project(self, path: str, file: str | None = None, line: int | None = None) -> dict:
        try:
            project = load_project(Path(path).expanduser())
        except ProjectError as exc:
            raise RpcError(RpcError.APPLICATION_ERROR, str(exc)) from None
        root = str(project.root)
        live = self.registry.live_for_project(root)
        if live is not None:
            link = self._links.get(live.window_id)
            if link is not None:
                link.request(messages.WINDOW_FOCUS)
                if file:
                    link.request(messages.WINDOW_OPEN_FILE, {"path": file, "line": line})
            return {"window_id": live.window_id, "pid": live.pid, "already_open": True}
        for crashed in self.registry.crashed_for_project(root):
            self.registry.remove(crashed.window_id)
        spare = self.registry.spare()
        if spare is not None and spare.window_id in self._links:
            spare.kind, spare.project, spare.state = messages.KIND_PROJECT, root, messages.STATE_STARTING
            self._links[spare.window_id].request(
                messages.WINDOW_OPEN_PROJECT, {"path": root, "file": file, "line": line},
                on_error=lambda error, wid=spare.window_id: log.warning("Spare %s failed: %s", wid, error.message),
            )
            entry = spare
            QTimer.singleShot(SPARE_DELAY_MS, self._ensure_spare)
        else:
            window_id = launcher.new_window_id()
            process = launcher.spawn_window(window_id, project.root, Path(file) if file else None, line)
            self._children[window_id] = process
            entry = self.registry.add(WindowEntry(window_id, process.pid, messages.KIND_PROJECT, root))
        self._windows_changed()
        self._start_trigger_watcher_soon(root)
        return {"window_id": entry.window_id, "pid": entry.pid, "already_open": False}

    def _start_trigger_watcher_soon(self, root: str) -> None:
        # On a thread: reading the project file, the first import of the triggers module and
        # starting a process take tens of milliseconds the welcome window should not wait for.
        QTimer.singleShot(TRIGGER_WATCHER_DELAY_MS, lambda: threading.Thread(
            target=self.start_trigger_watcher, args=(root,), name="starting a trigger watcher", daemon=True).start())

    def start_trigger_watcher(self, root: str | Path) -> bool:
        """Start the project's pipeline trigger watcher, detached (it outlives the window and
        the hub), when its workbench.toml declares [pipeline.triggers] without
        ``start_with_workbench = false``. Whether one was started. A watcher already running is
        left alone by the watcher's own lock (the started one ends at once); what the started
        one says before it watches goes to ``.workbench/pipeline/watcher-on-open.log``."""
        # Both are small and Qt-free; here rather than at the top so the hub's start loads neither.
        from workbench.pipeline.triggers import ON_OPEN_LOG, watcher_wanted_on_open
        from workbench.platform.detach import start_detached

        if self._shutting_down:
            return False
        try:
            settings = load_project(Path(root)).settings
        except ProjectError:
            return False  # the window says what is wrong with the project
        if not watcher_wanted_on_open(settings):
            return False
        log_file = Path(root) / ON_OPEN_LOG
        try:
            log_file.parent.mkdir(parents=True, exist_ok=True)
            start_detached("workbench.pipeline.watcher",
                           [str(root), "--on-open", "--started-by", "Workbench, on opening the project"],
                           log_file, cwd=root, wait=False)
        except OSError as exc:
            log.warning("Cannot start the trigger watcher of %s: %s", root, exc)
            return False
        log.info("Trigger watcher asked for %s (its start: %s)", root, log_file)
        return True

    def open_tool(self, params: dict) -> dict:
        """Start a model tool window process (one per call: any number may run at once)."""
        try:
            window_id, process = launcher.open_tool_window(params)
        except ValueError as exc:
            raise RpcError(RpcError.INVALID_PARAMS, str(exc)) from None
        except OSError as exc:
            raise RpcError(RpcError.APPLICATION_ERROR, f"Cannot start the tool window: {exc}") from None
        project = params.get("project")
        self._children[window_id] = process
        self.registry.add(WindowEntry(window_id, process.pid, messages.KIND_TOOL,
                                      str(Path(project).resolve()) if project else None,
                                      title=str(params["tool"])))
        self._windows_changed()
        return {"window_id": window_id, "pid": process.pid}

    def reopen_window(self, window_id: str) -> dict:
        entry = self.registry.get(window_id)
        if entry is None or entry.project is None:
            raise RpcError(RpcError.INVALID_PARAMS, f"There is no window {window_id!r} to reopen.")
        if entry.state != messages.STATE_CRASHED:
            raise RpcError(RpcError.INVALID_PARAMS, f"Window {window_id} is still running.")
        return self.open_project(entry.project)

    def _has_spare(self) -> bool:
        return any(e.kind == messages.KIND_SPARE for e in self.registry.entries(include_spares=True))

    def _ensure_spare(self) -> None:
        if not self._keep_spare or self._shutting_down or self._has_spare():
            return
        window_id = launcher.new_window_id()
        process = launcher.spawn_window(window_id)
        self._children[window_id] = process
        self.registry.add(WindowEntry(window_id, process.pid, messages.KIND_SPARE, None))

    # --- requests ----------------------------------------------------------------------------

    def on_hub_hello(self, params: dict, link: RpcConnection) -> dict:
        return {"app": messages.APP_NAME, "protocol": messages.PROTOCOL_VERSION,
                "version": __version__, "pid": os.getpid(), "heavy_modules_loaded": heavy_modules_loaded()}

    def on_hub_ping(self, params: dict, link: RpcConnection) -> dict:
        return {}

    def on_hub_open_project(self, params: dict, link: RpcConnection) -> dict:
        path = params.get("path")
        if not isinstance(path, str) or not path:
            raise RpcError(RpcError.INVALID_PARAMS, "hub.open_project needs a 'path' string.")
        return self.open_project(path, params.get("file"), params.get("line"))

    def on_hub_open_tool(self, params: dict, link: RpcConnection) -> dict:
        return self.open_tool(params)

    def on_hub_show_welcome(self, params: dict, link: RpcConnection) -> dict:
        self.show_welcome()
        return {}

    def on_hub_list_windows(self, params: dict, link: RpcConnection) -> dict:
        entries = self.registry.entries(include_spares=bool(params.get("all")))
        return {"windows": [e.to_json() for e in entries]}

    def on_hub_describe_welcome(self, params: dict, link: RpcConnection) -> dict:
        if self._welcome is None:
            return {"visible": False, "notice": "", "windows": []}
        return self._welcome.describe()

    def on_hub_reopen_window(self, params: dict, link: RpcConnection) -> dict:
        return self.reopen_window(str(params.get("window_id", "")))

    def on_hub_quit_all(self, params: dict, link: RpcConnection) -> DeferredAnswer:
        answer = DeferredAnswer()
        self.quit_all(first=link.peer.get("window_id"), on_done=answer.resolve)
        return answer

    def on_hub_window_command(self, params: dict, link: RpcConnection) -> DeferredAnswer:
        return self._ask_window(params, messages.WINDOW_RUN_COMMAND,
                                {"command": params.get("command"), "args": params.get("args") or {}})

    def on_hub_describe_window(self, params: dict, link: RpcConnection) -> DeferredAnswer:
        return self._ask_window(params, messages.WINDOW_DESCRIBE, {})

    def _ask_window(self, params: dict, method: str, window_params: dict) -> DeferredAnswer:
        """Pass a request on to a window and answer with what it answers."""
        window_id = str(params.get("window_id", ""))
        target = self._links.get(window_id)
        if target is None:
            raise RpcError(RpcError.INVALID_PARAMS, f"Window {window_id!r} is not connected.")
        answer = DeferredAnswer()
        target.request(method, window_params, on_result=answer.resolve, on_error=answer.reject,
                       timeout_ms=int(params.get("timeout_ms", 10_000)))
        return answer

    def on_window_register(self, params: dict, link: RpcConnection) -> dict:
        try:
            window_id, pid = str(params["window_id"]), int(params["pid"])
        except (KeyError, TypeError, ValueError):
            raise RpcError(RpcError.INVALID_PARAMS, "window.register needs window_id and pid.") from None
        kind = params.get("kind", messages.KIND_PROJECT)
        project = params.get("project")
        if kind == messages.KIND_SPARE and window_id not in self._children and self._has_spare():
            # A spare left by an earlier hub, while this hub has its own: one is enough.
            link.request(messages.WINDOW_QUIT, {"force": True})
            return {"hub_pid": os.getpid()}
        entry = self.registry.get(window_id)
        if entry is None:
            entry = self.registry.add(WindowEntry(window_id, pid, kind, project))
            entry.started_at = float(params.get("started_at", entry.started_at))
            if kind == messages.KIND_PROJECT and project:
                # Opened without this hub (`workbench open` with no hub running, or a window of
                # an earlier hub): its project's watcher is asked for here.
                self._start_trigger_watcher_soon(project)
        entry.pid, entry.kind, entry.project = pid, kind, project
        entry.state = params.get("state", messages.STATE_READY)
        entry.title = params.get("title", entry.title)
        link.peer = {"window_id": window_id}
        self._links[window_id] = link
        self._forget_crashes_of(entry)
        self._windows_changed()
        return {"hub_pid": os.getpid()}

    def on_window_state_changed(self, params: dict, link: RpcConnection) -> None:
        entry = self.registry.get(str(params.get("window_id", "")))
        if entry is not None:
            entry.state = params.get("state", entry.state)
            entry.title = params.get("title", entry.title)
            if "project" in params:
                entry.project = params["project"]
                entry.kind = params.get("kind", entry.kind)
            self._forget_crashes_of(entry)
            self._windows_changed()

    def on_window_closing(self, params: dict, link: RpcConnection) -> None:
        self._closing.add(str(params.get("window_id", "")))

    def on_broadcast(self, params: dict, link: RpcConnection) -> None:
        sender = link.peer.get("window_id")
        event = {"event": params.get("event"), "data": params.get("data"), "sender": sender}
        for window_id, other in list(self._links.items()):
            if window_id != sender and other.is_open:
                other.notify(messages.EVENT, event)

    # --- windows going away -------------------------------------------------------------------

    def _on_link_closed(self, link: RpcConnection) -> None:
        window_id = link.peer.get("window_id")
        if window_id is None or self._links.get(window_id) is not link:
            return
        del self._links[window_id]
        if window_id in self._closing:
            self._closing.discard(window_id)
            self._forget(window_id)
            return
        self._check_exit(window_id, 0)

    def _check_exit(self, window_id: str, attempt: int) -> None:
        entry = self.registry.get(window_id)
        if entry is None or window_id in self._links:
            return
        process = self._children.get(window_id)
        dead = process.poll() is not None if process else not is_alive(entry.pid)
        if dead:
            self._children.pop(window_id, None)
            if entry.kind == messages.KIND_SPARE:
                self.registry.remove(window_id)
                QTimer.singleShot(SPARE_DELAY_MS, self._ensure_spare)
                return
            if entry.kind == messages.KIND_TOOL:
                # Nothing to reopen: the job it ran is gone with it, and its project window
                # never depended on it.
                log.warning("Tool window %s (pid %s, %s) ended without closing", window_id, entry.pid, entry.title)
                self.registry.remove(window_id)
                self._windows_changed()
                return
            entry.state = messages.STATE_CRASHED
            log.warning("Window %s (pid %s, %s) ended without closing", window_id, entry.pid, entry.project)
            self._windows_changed()
            self.show_welcome()
            if self._welcome is not None:
                self._welcome.offer_reopen(entry.to_json())
        elif attempt + 1 < len(CRASH_CHECK_MS):
            QTimer.singleShot(CRASH_CHECK_MS[attempt + 1], lambda: self._check_exit(window_id, attempt + 1))
        else:
            entry.state = messages.STATE_UNREACHABLE
            self._windows_changed()

    def _forget_crashes_of(self, entry: WindowEntry) -> None:
        """A window of ``entry``'s project runs again, however it was started: the crashed
        windows of that project are history (their unsaved edits are the new window's now)."""
        if entry.project is None or entry.state == messages.STATE_CRASHED or entry.kind != messages.KIND_PROJECT:
            return
        for crashed in self.registry.crashed_for_project(entry.project):
            if crashed.window_id != entry.window_id:
                self.registry.remove(crashed.window_id)

    def _forget(self, window_id: str) -> None:
        entry = self.registry.remove(window_id)
        process = self._children.pop(window_id, None)
        if process is not None:
            QTimer.singleShot(2000, process.poll)
        self._windows_changed()
        if self._quitting is not None or self._shutting_down:
            return  # the hub is about to end: no welcome window for a moment
        if entry is not None and entry.kind != messages.KIND_SPARE and not self.registry.has_user_windows():
            if self._welcome is None or not self._welcome.isVisible():
                self.show_welcome()

    def _reap_children(self) -> None:
        for window_id, process in list(self._children.items()):
            if process.poll() is not None and window_id not in self._links:
                entry = self.registry.get(window_id)
                if entry is None:
                    del self._children[window_id]
                elif entry.state == messages.STATE_STARTING:
                    # Died before it ever registered: a start-up failure.
                    self._check_exit(window_id, len(CRASH_CHECK_MS))

    def _windows_changed(self) -> None:
        self._refresh_welcome()
        for link in list(self._links.values()):
            if link.is_open:
                link.notify(messages.EVENT, {"event": messages.EVENT_WINDOWS_CHANGED, "data": {}, "sender": None})

"""The debugger's commands, in the Run menu and the palette.

Keys: F5 debugs the Python file being edited when no session runs, and continues while the
program is stopped (elsewhere F5 still trains: two commands may share a key, and the one
registered last that is enabled wins); F10, F11 and Shift+F11 step over, into and out;
Shift+F5 stops and Ctrl+Shift+F5 restarts. Toggle Breakpoint is Ctrl+F8: F9 is the console's
Run Selection (as in Spyder) and F12 the language server's Go to Definition.

Every command takes keyword arguments, so a script or a test runs it as a person would:
``commands.execute("debug.debugFile", path="sample.py")``,
``commands.execute("debug.debugTraining", overrides=["num_epochs=1"])``.
"""

from __future__ import annotations

from pathlib import Path

from workbench.debug.widgets.controller import DebugController

CATEGORY = "Debug"
MENU = "Run"
DEBUGGABLE_SUFFIXES = (".py", ".pyw")


def _is_python_file(path) -> bool:
    return Path(path).suffix.lower() in DEBUGGABLE_SUFFIXES and Path(path).is_file()


class DebugCommands:
    """Declares the debug commands of one window and runs them through its controller."""

    def __init__(self, window, controller: DebugController, dock):
        self.window = window
        self.controller = controller
        self.dock = dock

    def register(self) -> list[str]:
        """Add every command to the window's registry; returns their ids."""
        c = self.controller
        idle = lambda: not c.active  # noqa: E731
        stopped = lambda: c.stopped  # noqa: E731
        entries = [
            ("debug.debugFile", "Debug File", self.debug_file,
             dict(shortcut="F5", enabled=lambda: idle() and self.python_editor() is not None)),
            ("debug.debugTraining", "Debug Training Run", self.debug_training, dict(enabled=idle)),
            ("debug.debugOnDevice", "Debug on Device", self.debug_on_device,
             dict(enabled=idle, context=("explorer",), applies_to=_is_python_file)),
            ("debug.debugCell", "Debug Cell in Console", self.debug_cell,
             dict(enabled=lambda: idle() and self.python_editor() is not None)),
            ("debug.continue", "Continue", c.resume, dict(shortcut="F5", enabled=stopped)),
            ("debug.pause", "Pause", c.pause, dict(enabled=lambda: c.session_state == "running")),
            ("debug.stepOver", "Step Over", c.step_over, dict(shortcut="F10", enabled=stopped)),
            ("debug.stepInto", "Step Into", c.step_into, dict(shortcut="F11", enabled=stopped)),
            ("debug.stepOut", "Step Out", c.step_out, dict(shortcut="Shift+F11", enabled=stopped)),
            ("debug.restart", "Restart Debugging", c.restart,
             dict(shortcut="Ctrl+Shift+F5", enabled=lambda: c.session is not None)),
            ("debug.stop", "Stop Debugging", c.stop, dict(shortcut="Shift+F5", enabled=lambda: c.active)),
            ("debug.toggleBreakpoint", "Toggle Breakpoint", self.toggle_breakpoint,
             dict(shortcut="Ctrl+F8", enabled=lambda: self.python_editor() is not None)),
            ("debug.removeAllBreakpoints", "Remove All Breakpoints", self.remove_all_breakpoints,
             dict(enabled=lambda: bool(c.state.breakpoints))),
        ]
        menus = getattr(self.window, "menus", None)
        if menus is not None:
            menus.add_separator(MENU)
        add = self.window.commands.add
        for command_id, title, run, options in entries:
            add(command_id, title, run, category=CATEGORY, menu=MENU, **options)
        return [entry[0] for entry in entries]

    # --- conditions ---------------------------------------------------------------------------

    def python_editor(self):
        """The current editor tab when it shows a Python file in a code editor, else None."""
        tab = self.window.current_editor()
        if tab is None or tab.editor is None or tab.path.suffix.lower() not in DEBUGGABLE_SUFFIXES:
            return None
        return tab

    # --- commands -----------------------------------------------------------------------------

    def debug_file(self, path: str | None = None) -> None:
        """Debug ``path`` (the current editor's file by default), saving its edits first."""
        if path is None:
            tab = self.python_editor()
            if tab is None:
                self.controller.sig_message.emit("Open a Python file in the editor to debug it.")
                return
            if tab.is_modified() and not tab.is_read_only():
                from workbench.editor import EditorError

                try:
                    tab.save()
                except EditorError as exc:
                    self.controller.sig_message.emit(f"Not started: {exc}")
                    return
            path = str(tab.path)
        elif not Path(path).is_absolute():
            path = str(self.window.project.root / path)
        self.show_dock()
        self.controller.debug_file(path)

    def debug_on_device(self, path: str | None = None, paths: list | None = None,
                        device: str | None = None) -> bool:
        """Debug ``path`` (else the current editor's script, its unsaved text included) on
        ``device`` (else the one selected in the Devices dock); False, with the reason in the
        Devices dock, when there is nothing to debug or no device."""
        from workbench.device.scripts import CHOOSE_SCRIPT_TARGET

        if CHOOSE_SCRIPT_TARGET not in self.window.commands:
            self.controller.sig_message.emit("Devices are not available in this window: debugging "
                                             "on a device needs the Devices dock.")
            return False
        chosen = self.window.commands.execute(CHOOSE_SCRIPT_TARGET, path=path or (paths[0] if paths else None),
                                              device=device, verb="debug")
        if chosen is None:
            return False
        self.show_dock()
        self.controller.debug_on_device(chosen.address, chosen.script, chosen.text, chosen.devices,
                                        chosen.device)
        return True

    def debug_cell(self, line: int | None = None) -> bool:
        """Debug the ``# %%`` cell around ``line`` (the cursor's by default) of the current
        editor in the console: it runs in the console's namespace, stopping at the file's
        breakpoints. The file is saved first, as for Run File. False, with the reason in the
        Debug dock, when it cannot start."""
        from workbench.console.run_code import cell_at
        from workbench.debug.console_cell import ENDPOINT_EXPRESSION, SETUP_CODE, debugcell_line

        tab = self.python_editor()
        if tab is None:
            self.controller.sig_message.emit("Open a Python file in the editor to debug one of its cells.")
            return False
        if "console.evaluate" not in self.window.commands:
            self.controller.sig_message.emit("This window has no console to debug a cell in.")
            return False
        line = line or tab.cursor_position()[0]
        cell = cell_at(tab.text(), line)
        if not cell.code.strip():
            self.controller.sig_message.emit("The cell is empty: there is nothing to debug.")
            return False
        if tab.is_modified() and not tab.is_read_only():
            from workbench.editor import EditorError

            try:
                tab.save()
            except EditorError as exc:
                self.controller.sig_message.emit(f"Not started: {exc}")
                return False
        path = Path(tab.path)
        name = f"cell {cell.title!r} of {path.name}" if cell.title else f"cell at line {cell.first} of {path.name}"
        code = debugcell_line(path, cell.first, cell.last, self.window.project.root)
        commands = self.window.commands

        def attach(endpoint: str) -> None:
            self.controller.debug_console_cell(
                endpoint, name.capitalize(),
                run_cell=lambda on_done: commands.execute("console.execute", code=code, on_done=on_done),
                interrupt=lambda: commands.execute("console.interrupt"),
                relaunch=lambda: self._debug_cell_again(path, line))

        self.show_dock()
        commands.execute("console.evaluate", code=SETUP_CODE, expression=ENDPOINT_EXPRESSION,
                         on_done=attach,
                         on_error=lambda message: self.controller.sig_message.emit(
                             f"The cell could not be debugged: {message}"))
        return True

    def _debug_cell_again(self, path: Path, line: int) -> None:
        tab = self.window.open_file(path)
        if tab is not None:
            self.debug_cell(line)

    def debug_training(self, overrides: list[str] | None = None, hparams_file: str | None = None) -> None:
        """Debug the project's training run as one process (``overrides``: ``key=value``s)."""
        self.show_dock()
        self.controller.debug_training(list(overrides or []), hparams_file)

    def toggle_breakpoint(self, line: int | None = None) -> None:
        """Toggle a breakpoint on ``line`` of the current editor (the cursor's line by default)."""
        tab = self.python_editor()
        if tab is None:
            return
        self.controller.toggle_breakpoint(str(tab.path), line or tab.cursor_position()[0])

    def remove_all_breakpoints(self) -> None:
        for path in self.controller.state.files():
            self.controller.move_breakpoints(path, [])

    def show_dock(self) -> None:
        self.dock.show()
        self.dock.raise_()

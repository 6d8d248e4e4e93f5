"""The Console dock's content: a toolbar (New Console, Interrupt, Restart, Clear), the consoles as
tabs, and the Variables view of the current one beside them.

qtconsole is loaded once per window, on a worker thread, the first time a console starts
(``ensure_frontend``); until then this panel holds only plain Qt widgets.
"""

from __future__ import annotations

import itertools
from typing import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QLabel, QSplitter, QTabWidget, QToolBar, QVBoxLayout, QWidget

from workbench.console.widgets.console_tab import DEAD, READY, STARTING, ConsoleTab
from workbench.console.widgets.frontend import load_frontend
from workbench.console.widgets.variables_view import VariablesView
from workbench.qt import theme

FRONTEND_TASK = "console.loadFrontend"


def _shut_down(kernels) -> None:
    for kernel in kernels:
        kernel.shutdown()


class ConsolePanel(QWidget):
    """The consoles of one project window."""

    sig_current_changed = Signal()
    """Another console became the current one (or the last one closed)."""

    def __init__(self, project, tasks, parent: QWidget | None = None):
        super().__init__(parent)
        self.project = project
        self.tasks = tasks
        self._numbers = itertools.count(1)
        self._frontend_state = "absent"  # absent, loading, loaded
        self._frontend_waiting: list[Callable[[], None]] = []

        self.toolbar = QToolBar()
        self.toolbar.setObjectName("console-toolbar")
        self.toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.new_action = self._action("New Console", "Open another console with its own kernel",
                                       self.new_console)
        self.toolbar.addSeparator()
        self.interrupt_action = self._action("Interrupt", "Stop what the console runs (Ctrl+C in the console)",
                                             lambda: self._on_current("interrupt"))
        self.restart_action = self._action("Restart", "End the kernel (its variables go) and start a new one",
                                           lambda: self._on_current("restart"))
        self.clear_action = self._action("Clear", "Empty the console's screen; the variables stay",
                                         lambda: self._on_current("clear"))
        self.interpreter_label = QLabel()
        theme.set_themed_style_sheet(self.interpreter_label, "color: @MUTED_TEXT; padding-left: 8px;")
        self.toolbar.addWidget(self.interpreter_label)

        self.tabs = QTabWidget()
        self.tabs.setObjectName("console-tabs")
        self.tabs.setDocumentMode(True)
        self.tabs.setTabsClosable(True)
        self.tabs.setMovable(True)
        self.tabs.tabCloseRequested.connect(self.close_console)
        self.tabs.currentChanged.connect(self._on_current_changed)
        self.variables = VariablesView()
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.tabs)
        self.splitter.addWidget(self.variables)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setChildrenCollapsible(True)
        self._sized = False

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.toolbar)
        layout.addWidget(self.splitter, 1)
        self._update_actions()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().resizeEvent(event)
        if not self._sized and self.width() > 200:
            # The first real width is shared 3:2; from then on the user's splitter position holds.
            self._sized = True
            self.splitter.setSizes([self.width() * 3 // 5, self.width() * 2 // 5])

    def _action(self, text: str, tip: str, run: Callable[[], object]) -> QAction:
        action = QAction(text, self)
        action.setToolTip(tip)
        action.triggered.connect(lambda _checked=False: run())
        self.toolbar.addAction(action)
        return action

    # --- consoles -----------------------------------------------------------------------------

    def consoles(self) -> list[ConsoleTab]:
        return [self.tabs.widget(i) for i in range(self.tabs.count())]

    def current(self) -> ConsoleTab | None:
        widget = self.tabs.currentWidget()
        return widget if isinstance(widget, ConsoleTab) else None

    def new_console(self) -> ConsoleTab:
        """Open a console in a new tab and start its kernel."""
        console = ConsoleTab(f"Console {next(self._numbers)}", self)
        console.sig_state_changed.connect(lambda _state, c=console: self._on_state_changed(c))
        console.sig_variables_changed.connect(lambda c=console: self._on_variables(c))
        index = self.tabs.addTab(console, console.title)
        self.tabs.setCurrentIndex(index)
        console.start()
        return console

    def ensure_console(self) -> ConsoleTab:
        """The current console, started; a first one is opened when there is none."""
        console = self.current()
        if console is None:
            return self.new_console()
        if console.state not in (STARTING, READY, DEAD):
            console.start()
        return console

    def close_console(self, index: int | None = None) -> None:
        """Close a console (the current one by default) and end its kernel."""
        console = self.tabs.widget(self.tabs.currentIndex() if index is None else index)
        if not isinstance(console, ConsoleTab):
            return
        self.tabs.removeTab(self.tabs.indexOf(console))
        kernels = console.release()
        # Ending a kernel takes a tenth of a second: a worker does it.
        self.tasks.run(f"console.close.{id(console)}", _shut_down, kernels)
        console.setParent(None)
        console.deleteLater()
        self._on_current_changed()

    def close_down(self) -> None:
        """End every console's kernel (the window is closing)."""
        for console in self.consoles():
            console.close_down()

    def _on_current(self, method: str) -> None:
        console = self.current()
        if console is not None:
            getattr(console, method)()

    # --- qtconsole ----------------------------------------------------------------------------

    def ensure_frontend(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` on the GUI thread once qtconsole is loaded (loading it on a worker
        the first time)."""
        if self._frontend_state == "loaded":
            callback()
            return
        self._frontend_waiting.append(callback)
        if self._frontend_state == "absent":
            self._frontend_state = "loading"
            self.tasks.run(FRONTEND_TASK, load_frontend, on_done=self._on_frontend_loaded,
                           on_error=self._on_frontend_failed)

    def _on_frontend_loaded(self, _result) -> None:
        self._frontend_state = "loaded"
        waiting, self._frontend_waiting = self._frontend_waiting, []
        for callback in waiting:
            callback()

    def _on_frontend_failed(self, error: Exception) -> None:
        self._frontend_state = "absent"
        self._frontend_waiting.clear()
        for console in self.consoles():
            if console.state == STARTING:
                console.close_down()
                console.fail(f"The console cannot be shown: qtconsole did not load ({error}). Install it in "
                             "Workbench's environment (pip install qtconsole), then press Restart.")

    # --- state --------------------------------------------------------------------------------

    def _on_state_changed(self, console: ConsoleTab) -> None:
        index = self.tabs.indexOf(console)
        if index >= 0:
            suffix = {STARTING: " (starting)", DEAD: " (no kernel)"}.get(console.state, "")
            self.tabs.setTabText(index, console.title + suffix)
        if console is self.current():
            self._update_actions()

    def _on_variables(self, console: ConsoleTab) -> None:
        if console is self.current():
            self.variables.show_variables(console.variables, console.variables_truncated)

    def _on_current_changed(self, _index: int = -1) -> None:
        console = self.current()
        self.variables.show_variables(console.variables if console else [],
                                      console.variables_truncated if console else False)
        self._update_actions()
        self.sig_current_changed.emit()

    def _update_actions(self) -> None:
        console = self.current()
        ready = console is not None and console.state == READY
        self.interrupt_action.setEnabled(ready)
        self.clear_action.setEnabled(console is not None and console.widget is not None)
        self.restart_action.setEnabled(console is not None)
        kernel = console.kernel if console is not None else None
        self.interpreter_label.setText(str(kernel.interpreter.path) if kernel is not None else "")

"""The banner that offers to set up training, and what happens once workbench.toml is written:
the window's project reads it again and the Runs dock comes forward."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QDockWidget, QFrame, QHBoxLayout, QLabel, QPushButton, QToolBar, QToolButton

from workbench.qt.theme import set_themed_style_sheet


class SetUpTraining(QObject):
    """The window's Set Up Training banner and dialog."""

    sig_project_file_written = Signal(str)
    """workbench.toml was written (its path) and the window's project now trains."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.entry_points: list = []
        self.dialog = None
        self.offered = False
        """Whether the banner should be in view (scripts were found; not closed, not done)."""
        # A tool bar at the top holds the notice: the window's own layout is left as it is. Its
        # widget is never hidden on its own (a tool bar shows its widgets through their actions),
        # the bar as a whole is.
        self.notice = QFrame()
        self.notice.setObjectName("adopt-setup-notice")
        set_themed_style_sheet(self.notice, "#adopt-setup-notice { background: @INFO_BACKGROUND; "
                                            "border-bottom: 1px solid @INFO_BORDER; }")
        row = QHBoxLayout(self.notice)
        row.setContentsMargins(8, 3, 4, 3)
        self.label = QLabel("")
        self.label.setWordWrap(True)
        row.addWidget(self.label, 1)
        self.set_up_button = QPushButton("Set Up Training…")
        self.set_up_button.clicked.connect(lambda _checked=False: self.open_dialog())
        row.addWidget(self.set_up_button)
        close = QToolButton()
        close.setText("×")
        close.setAutoRaise(True)
        close.setToolTip("Hide this notice (Run ▸ Set Up Training… stays)")
        close.clicked.connect(lambda _checked=False: self._withdraw())
        row.addWidget(close)
        self.banner = QToolBar("Set Up Training")
        self.banner.setObjectName("adopt-setup-banner")
        self.banner.setMovable(False)
        self.banner.setFloatable(False)
        self.banner.toggleViewAction().setVisible(False)
        self.banner.addWidget(self.notice)
        self.banner.hide()
        window.addToolBar(Qt.ToolBarArea.TopToolBarArea, self.banner)
        # The window restores its saved layout after its capabilities are in (and again while
        # its docks settle); a layout saved while the banner was hidden hides it again.
        self.banner.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:
        if watched is self.banner and event.type() == QEvent.Type.Hide and self.offered:
            QTimer.singleShot(0, self.banner, self.banner.show)
        return False

    def _withdraw(self) -> None:
        self.offered = False
        self.banner.hide()

    def look_for_entry_points(self) -> None:
        """Find the folder's entry points in a worker thread; show the banner if there are any."""
        from workbench.adopt.entry_points import find_entry_points

        self.window.tasks.run("adopt.entryPoints", find_entry_points, self.window.project.root,
                              on_done=self._found, on_error=lambda exc: None)

    def _found(self, entry_points: list) -> None:
        self.entry_points = entry_points
        if not entry_points or self.window.project.has_project_file:
            return
        first = entry_points[0].script
        others = f" and {len(entry_points) - 1} other possible training script{'s' * (len(entry_points) > 2)}" \
            if len(entry_points) > 1 else ""
        self.label.setText(f"This folder has no workbench.toml, so Workbench cannot train it yet. Found "
                                  f"{first}{others}.")
        self.offered = True
        self.banner.show()

    def open_dialog(self):
        """The Set Up Training dialog (opened, not run: it works in the background)."""
        from workbench.adopt.widgets.setup_dialog import SetUpTrainingDialog

        if self.window.project.has_project_file:
            self.window.show_error(f"{self.window.project.project_file} already exists: edit its [training] table "
                                   "to change what trains.")
            return None
        if self.dialog is not None:
            self.dialog.raise_()
            return self.dialog
        self.dialog = SetUpTrainingDialog(self.window.project.root, self.window.tasks, self.entry_points or None,
                                          self.window)
        self.dialog.sig_written.connect(self._written)
        self.dialog.finished.connect(lambda _result: setattr(self, "dialog", None))
        self.dialog.open()
        return self.dialog

    def _written(self, path: str) -> None:
        from workbench.project import load_project

        fresh = load_project(self.window.project.root)
        self.window.project.settings = fresh.settings
        self.window.project.has_project_file = True
        self._withdraw()
        dock = self.window.findChild(QDockWidget, "dock-runs")
        if dock is not None:
            dock.show()
            dock.raise_()
        self.sig_project_file_written.emit(path)

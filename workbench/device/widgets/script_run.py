"""Run on Device: a project's Python script run on the device selected in the Devices dock, its
output streamed into the dock's Script tab as it comes (standard error in red), with Stop.

The command runs the script of the editor's current tab (its unsaved text too) or, from the
Explorer's right-click menu, the file clicked. The device is the one selected in the Devices
list (the first one online is selected when the list comes).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from workbench.device.scripts import CHOOSE_SCRIPT_TARGET, ScriptTarget
from workbench.qt.elided_label import ElidedLabel

SCRIPT_SUFFIXES = (".py",)
STDERR_COLOR = QColor("#b3261e")
PASS_COLOR, FAIL_COLOR = QColor("#1b7f3b"), QColor("#b3261e")
MAX_LINES = 20000


class ScriptView(QWidget):
    """The Script tab: what runs where, its output, and how it ended."""

    def __init__(self, session, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.running = False
        self.heading = ElidedLabel()
        self.heading.setObjectName("device-script-heading")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the script on the device")
        self.stop_button.setEnabled(False)
        self.stop_button.clicked.connect(self.session.stop_script)
        self.output = QPlainTextEdit()
        self.output.setObjectName("device-script-output")
        self.output.setReadOnly(True)
        self.output.setMaximumBlockCount(MAX_LINES)
        self.output.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.output.setPlaceholderText("Run on Device (a script's right-click menu in the Explorer, "
                                       "or the command palette) shows the script's output here.")
        self.ending = QLabel()
        self.ending.setObjectName("device-script-ending")
        self.ending.setWordWrap(True)
        self.ending.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        top = QHBoxLayout()
        top.addWidget(self.heading, 1)
        top.addWidget(self.stop_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.output, 1)
        layout.addWidget(self.ending)
        self._plain = QTextCharFormat()
        self._error = QTextCharFormat()
        self._error.setForeground(STDERR_COLOR)
        session.sig_script_output.connect(self.append)
        session.sig_script_finished.connect(self.finish)
        session.sig_script_failed.connect(self.fail)

    def begin(self, script: Path, device: str) -> None:
        self.running = True
        self.output.clear()
        self.heading.setText(f"{script.name} on {device}")
        self.heading.setToolTip(str(script))
        self.ending.setText("Running…")
        self.ending.setStyleSheet("")
        self.stop_button.setEnabled(True)

    def append(self, stream: str, text: str) -> None:
        cursor = self.output.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(text, self._error if stream == "stderr" else self._plain)
        bar = self.output.verticalScrollBar()
        bar.setValue(bar.maximum())

    def finish(self, run) -> None:
        self.running = False
        self.stop_button.setEnabled(False)
        color = PASS_COLOR if run.succeeded else FAIL_COLOR
        self.ending.setStyleSheet(f"color: {color.name()}")
        self.ending.setText(run.summary())

    def fail(self, message: str) -> None:
        if not self.running:
            return
        self.running = False
        self.stop_button.setEnabled(False)
        self.ending.setStyleSheet(f"color: {FAIL_COLOR.name()}")
        self.ending.setText(message)

    def text(self) -> str:
        return self.output.toPlainText()


def install_run_on_device(window, panel, dock) -> ScriptView:
    """Add the Script tab to the Devices panel and the Run on Device command (palette and the
    Explorer's menu of .py files)."""
    view = ScriptView(panel.session)
    view.setObjectName("device-script-view")
    panel.tabs.addTab(view, "Script")

    def run(path=None, paths=None, device: str | None = None) -> bool:
        """Run ``path`` (else the current editor's file) on ``device`` (else the selected one);
        False, with the reason in the panel, when there is nothing to run or nowhere."""
        dock.show()
        dock.raise_()
        chosen = script_target(window, panel, path or (paths[0] if paths else None), device, "run")
        if chosen is None:
            return False
        script, text, target = chosen.script, chosen.text, chosen.address
        if panel.session.is_busy("device.script"):
            panel.session.stop_script()
        view.begin(script, panel.device_name(target))
        panel.tabs.setCurrentWidget(view)
        panel.session.run_script(target, script, text)
        return True

    # The status line said what was running; it says how that ended once it has.
    panel.session.sig_script_finished.connect(lambda done: panel.status.setText(
        f"Ran {Path(done.script).name} on {done.device}"))
    panel.session.sig_script_failed.connect(lambda message: panel.status.setText(
        message if message == "Stopped" else ""))
    def choose(path=None, device: str | None = None, verb: str = "run") -> ScriptTarget | None:
        """For another capability's command (Debug on Device): the script and the device, as
        Run on Device chooses them; None, with the reason in the Devices dock, shown."""
        chosen = script_target(window, panel, path, device, verb)
        if chosen is None:
            dock.show()
            dock.raise_()
        return chosen

    window.commands.add("device.runScript", "Run on Device", run, category="Devices",
                        context=("explorer",),
                        applies_to=lambda path: (Path(path).suffix.lower() in SCRIPT_SUFFIXES
                                                 and Path(path).is_file()))
    window.commands.add(CHOOSE_SCRIPT_TARGET, "Choose a Script and a Device", choose,
                        category="Devices", in_palette=False)
    return view


def script_target(window, panel, path, device: str | None, verb: str) -> ScriptTarget | None:
    """The script to ``verb`` on a device (``path``, else the current editor's file), with its
    unsaved text, and the device (``device``, else the one selected in the Devices list); None,
    with the reason in the panel's banner, when either is missing."""
    script, text = _script_and_text(window, path)
    if script is None:
        panel.show_error(f"Open a Python script in the editor (or right-click one in the "
                         f"Explorer) to {verb} it on a device.")
        return None
    if device is not None and not panel.select_device(device):
        panel.show_error(f"{device} is not in the device list: pair it first (Pair…).")
        return None
    target = panel.selected_address()
    if not target:
        panel.show_error("Select a device in the list first (Pair… or Start Local Device "
                         "adds one).")
        return None
    panel.banner.hide()
    return ScriptTarget(script, text, target, panel.device_name(target), panel.session.paired_devices())


def _script_and_text(window, path) -> tuple[Path | None, str | None]:
    """The script to run and, when an editor holds it with unsaved changes, that text."""
    editors = list(getattr(window, "editors", lambda: [])())
    if path is None:
        current = getattr(window, "current_editor", lambda: None)()
        if current is None or getattr(current, "path", None) is None:
            return None, None
        path = current.path
    script = Path(path)
    if not script.is_absolute():
        script = Path(window.project.root) / script
    if script.suffix.lower() not in SCRIPT_SUFFIXES:
        return None, None
    for tab in editors:
        if getattr(tab, "path", None) == script.resolve() and tab.is_modified():
            return script, tab.text()
    return (script, None) if script.is_file() else (None, None)

"""The debug console: what the program and its log points print, and a line that evaluates
Python in the selected frame while the program is stopped (Up and Down recall earlier lines)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QKeyEvent, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QLineEdit, QPlainTextEdit, QVBoxLayout, QWidget

from workbench.debug.widgets.controller import DebugController
from workbench.qt import theme

# The console keeps this much of the program's output; older lines go.
MAX_BLOCKS = 5000
COLOURS = {"stderr": "#c01c28", "important": "#a35200", "console": "#555555", "input": "#1a5fb4",
           "result": "#1f1f1f", "error": "#c01c28"}


class HistoryLine(QLineEdit):
    """A line edit whose Up and Down keys walk through the lines entered before."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.history: list[str] = []
        self._index = 0

    def remember(self, text: str) -> None:
        if text and (not self.history or self.history[-1] != text):
            self.history.append(text)
        self._index = len(self.history)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt override)
        if event.key() in (Qt.Key.Key_Up, Qt.Key.Key_Down) and self.history:
            step = -1 if event.key() == Qt.Key.Key_Up else 1
            self._index = max(0, min(len(self.history), self._index + step))
            self.setText(self.history[self._index] if self._index < len(self.history) else "")
            return
        super().keyPressEvent(event)


class DebugConsole(QWidget):
    """Output above, an evaluate line below."""

    def __init__(self, controller: DebugController, parent: QWidget | None = None):
        super().__init__(parent)
        self.controller = controller
        self.output = QPlainTextEdit()
        self.output.setReadOnly(True)
        self.output.setMaximumBlockCount(MAX_BLOCKS)
        self.output.setFont(theme.editor_font())
        self.output.setObjectName("debug-console-output")
        self.input = HistoryLine()
        self.input.setFont(theme.editor_font())
        self.input.setPlaceholderText("Evaluate in the selected frame while stopped (e.g. loss.shape)")
        self.input.setObjectName("debug-console-input")
        self.input.returnPressed.connect(self.submit)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.output, 1)
        layout.addWidget(self.input)
        controller.sig_output.connect(self.write)
        controller.sig_ended.connect(lambda end: self.write("important", end.message + "\n"))
        controller.sig_stopped.connect(lambda event: self.write("console", event.headline() + "\n"))

    def write(self, category: str, text: str) -> None:
        """Append ``text`` in the colour of its ``category``, keeping the view at the end."""
        char_format = QTextCharFormat()
        char_format.setForeground(QColor(COLOURS.get(category, theme.FOREGROUND)))
        cursor = self.output.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(text, char_format)
        self.output.verticalScrollBar().setValue(self.output.verticalScrollBar().maximum())

    def submit(self) -> None:
        """Evaluate the input line in the selected frame and print the answer."""
        expression = self.input.text().strip()
        if not expression:
            return
        self.input.remember(expression)
        self.input.clear()
        self.write("input", f">>> {expression}\n")
        frame = self.controller.current_frame
        session = self.controller.session
        if not self.controller.stopped or frame is None or session is None:
            self.write("error", "The program is not stopped: set a breakpoint or pause it (the Debug dock's Pause) "
                                "to evaluate in a frame.\n")
            return
        self.controller.call(session.evaluate, expression, frame.id, "repl",
                             on_done=lambda result: self._answer(result.variable),
                             on_error=lambda exc: self.write("error", f"{exc}\n"))

    def _answer(self, variable) -> None:
        text = variable.display_value()
        if variable.summary is not None and not isinstance(variable.summary, str):
            text = f"{text}\n{variable.value}"
        if text:
            self.write("result", text + "\n")

    def text(self) -> str:
        return self.output.toPlainText()

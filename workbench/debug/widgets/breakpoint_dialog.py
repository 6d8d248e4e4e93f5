"""Editing one breakpoint: its condition, hit count and log message, and whether it is on."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from workbench.debug.breakpoints import Breakpoint
from workbench.qt import theme


class BreakpointDialog(QDialog):
    """A small form; OK emits ``sig_saved`` with the edited breakpoint, Remove ``sig_removed``."""

    sig_saved = Signal(object)
    """The breakpoint as edited (a ``Breakpoint``)."""

    sig_removed = Signal(object)
    """The user removed the breakpoint (the one the dialog was opened on)."""

    def __init__(self, breakpoint: Breakpoint, parent: QWidget | None = None, focus: str = "condition"):
        super().__init__(parent)
        self.breakpoint = breakpoint
        self.setWindowTitle(f"Breakpoint on line {breakpoint.line} of {Path(breakpoint.path).name}")
        self.condition = QLineEdit(breakpoint.condition)
        self.condition.setPlaceholderText("stop only when this is true, e.g. loss > 10")
        self.hit_condition = QLineEdit(breakpoint.hit_condition)
        self.hit_condition.setPlaceholderText("5 (the 5th hit), >= 5, % 10 (every 10th)")
        self.log_message = QLineEdit(breakpoint.log_message)
        self.log_message.setPlaceholderText("print this instead of stopping, e.g. step {step}: loss {loss.item()}")
        self.enabled = QCheckBox("Enabled")
        self.enabled.setChecked(breakpoint.enabled)
        form = QFormLayout()
        form.addRow("Condition:", self.condition)
        form.addRow("Hit count:", self.hit_condition)
        form.addRow("Log message:", self.log_message)
        form.addRow("", self.enabled)
        hint = QLabel("Expressions are Python, evaluated in the program where the breakpoint is. "
                      "A log message makes a log point: it prints and goes on.")
        hint.setWordWrap(True)
        theme.set_themed_style_sheet(hint, "color: @MUTED_TEXT;")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.remove_button = buttons.addButton("Remove", QDialogButtonBox.ButtonRole.DestructiveRole)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        self.remove_button.clicked.connect(self._remove)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(hint)
        layout.addWidget(buttons)
        self.resize(520, self.sizeHint().height())
        {"condition": self.condition, "hit_condition": self.hit_condition,
         "log_message": self.log_message}.get(focus, self.condition).setFocus()

    def edited(self) -> Breakpoint:
        """The breakpoint as the form has it now."""
        return Breakpoint(self.breakpoint.path, self.breakpoint.line, self.condition.text().strip(),
                          self.hit_condition.text().strip(), self.log_message.text().strip(), self.enabled.isChecked())

    def accept(self) -> None:
        self.sig_saved.emit(self.edited())
        super().accept()

    def _remove(self) -> None:
        self.sig_removed.emit(self.breakpoint)
        self.reject()

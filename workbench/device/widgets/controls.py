"""The Devices panel's small widgets: the Pair dialog and the one-line error banner."""

from __future__ import annotations

from PySide6.QtCore import QRegularExpression, Qt
from PySide6.QtGui import QRegularExpressionValidator
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QToolButton,
    QWidget,
)


class PairDialog(QDialog):
    """Asks for the agent's HOST:PORT and the 6-digit code it prints; OK only once both are
    there, so what goes to the device is a code at least."""

    def __init__(self, parent: QWidget | None = None, address: str = ""):
        super().__init__(parent)
        self.setWindowTitle("Pair Device")
        self.address = QLineEdit(address)
        self.address.setPlaceholderText("192.168.1.20:7300")
        self.code = QLineEdit()
        self.code.setPlaceholderText("123456")
        self.code.setMaxLength(6)
        self.code.setValidator(QRegularExpressionValidator(QRegularExpression(r"\d{0,6}"), self.code))
        hint = QLabel("Start the agent on the device (workbench-device-agent): it prints "
                      "its address and a pairing code.")
        hint.setWordWrap(True)
        hint.setStyleSheet("color: #555;")
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form = QFormLayout(self)
        form.addRow(hint)
        form.addRow("Address (HOST:PORT)", self.address)
        form.addRow("Pairing code", self.code)
        form.addRow(self.buttons)
        self.address.textChanged.connect(self._update_ok)
        self.code.textChanged.connect(self._update_ok)
        self._update_ok()
        self.setMinimumWidth(380)

    def _update_ok(self) -> None:
        code = self.code.text()
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(
            bool(self.address.text().strip()) and len(code) == 6 and code.isdigit())


class Banner(QWidget):
    """A one-line message across the top of the panel, closed by its ×."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("device-banner")
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QToolButton()
        close.setText("×")
        close.setAutoRaise(True)
        close.clicked.connect(self.hide)
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 4, 4, 4)
        row.addWidget(self.label, 1)
        row.addWidget(close)
        self.setStyleSheet("#device-banner { background: #fdecea; border: 1px solid #f1aeb5; }"
                           "#device-banner QLabel { color: #611a15; }")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.hide()

    def show_message(self, message: str) -> None:
        self.label.setText(message)
        self.show()

    def text(self) -> str:
        return self.label.text() if self.isVisible() else ""

"""The Devices panel's small widgets: the Pair dialog, and the banners of an error and of a
notice."""

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
from workbench.qt import theme


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
        theme.set_themed_style_sheet(hint, "color: @MUTED_TEXT;")
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


# Background, border and text colours of each kind of banner.
BANNER_COLORS = {"error": ("#fdecea", "#f1aeb5", "#611a15"),
                 "notice": ("#fff8e1", "#ecd58f", "#4d3b00")}


class Banner(QWidget):
    """A one-line message across the top of the panel, closed by its ×: an "error" (what failed)
    or a "notice" (what the user should know, no failure)."""

    def __init__(self, parent: QWidget | None = None, kind: str = "error"):
        super().__init__(parent)
        name = "device-banner" if kind == "error" else f"device-{kind}"
        self.setObjectName(name)
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
        background, border, text = BANNER_COLORS[kind]
        self.setStyleSheet(f"#{name} {{ background: {background}; border: 1px solid {border}; }}"
                           f"#{name} QLabel {{ color: {text}; }}")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.hide()

    def show_message(self, message: str) -> None:
        self.label.setText(message)
        self.show()

    def text(self) -> str:
        return self.label.text() if self.isVisible() else ""

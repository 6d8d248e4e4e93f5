"""The language server's state in the status bar, shown only while it is not simply running.

It shortens itself rather than widen the window: the status bar's permanent widgets set the
window's minimum width."""

from __future__ import annotations

from PySide6.QtWidgets import QSizePolicy

from workbench.lsp.results import ServerStatus
from workbench.qt.elided_label import ElidedLabel

TEXTS = {
    "starting": ("Python: starting…", "#666666"),
    "restarting": ("Python: restarting…", "#9a6700"),
    "failed": ("Python: server not running", "#c42b1c"),
}


class ServerStatusLabel(ElidedLabel):
    def __init__(self, controller):
        super().__init__()
        self.setObjectName("lsp-status")
        self.setContentsMargins(8, 0, 8, 0)
        # Its text's width when there is room (its minimum stays none, so it never widens the
        # window): with the elided label's "ignored" policy the status bar gives it nothing.
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        controller.sig_status_changed.connect(self.show_status)
        self.show_status(controller.status)

    def show_status(self, status: ServerStatus) -> None:
        text, colour = TEXTS.get(status.state, ("", ""))
        self.setText(text)
        self.setStyleSheet(f"color: {colour};" if colour else "")
        if status.message:
            self.setToolTip(status.message)
        self.setVisible(bool(text))

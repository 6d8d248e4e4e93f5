"""The signature of the call being typed, in a small frame just above the caret: the parameter
the caret is at in bold, and the first lines of the function's help below it."""

from __future__ import annotations

import html

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QFrame, QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from workbench.lsp.results import SignatureHelp
from workbench.qt import theme

MAX_WIDTH = 720
HELP_LINES = 4
HELP_CHARACTERS = 400


class SignaturePopup(QFrame):
    """Shows a ``SignatureHelp`` over ``editor`` without taking its focus."""

    def __init__(self, editor: QWidget):
        super().__init__(editor, Qt.WindowType.ToolTip | Qt.WindowType.FramelessWindowHint)
        self.setObjectName("lsp-signature-popup")
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setStyleSheet(
            "#lsp-signature-popup { background: #f8f8f8; border: 1px solid #c8c8c8; border-radius: 3px; }"
            f"QLabel {{ color: {theme.FOREGROUND}; background: transparent; }}"
            "QLabel#lsp-signature-help { color: #555555; }")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 5, 8, 5)
        layout.setSpacing(3)
        self.label = QLabel(self)
        self.label.setObjectName("lsp-signature-label")
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setWordWrap(True)
        self.label.setFont(editor.font())
        self.help = QLabel(self)
        self.help.setObjectName("lsp-signature-help")
        self.help.setTextFormat(Qt.TextFormat.PlainText)
        self.help.setWordWrap(True)
        layout.addWidget(self.label)
        layout.addWidget(self.help)
        self.line = 0
        """The editor line (1-based) the popup is about."""
        self.parameter = ""
        """The active parameter's text ("" when the signature has none)."""

    def show_help(self, help: SignatureHelp, editor: QPlainTextEdit) -> None:
        """Show ``help``'s active signature above ``editor``'s caret."""
        signature = help.active
        if signature is None:
            self.hide()
            return
        span = signature.parameter_span(help.active_parameter)
        label = signature.label
        if span is not None:
            start, end = span
            self.parameter = label[start:end]
            rich = (html.escape(label[:start]) + "<b><u>" + html.escape(label[start:end]) + "</u></b>"
                    + html.escape(label[end:]))
        else:
            self.parameter = ""
            rich = html.escape(label)
        self.label.setText(rich)
        documentation = _first_lines(signature.documentation)
        self.help.setText(documentation)
        self.help.setVisible(bool(documentation))
        cursor = editor.textCursor()
        self.line = cursor.blockNumber() + 1
        caret = editor.cursorRect(cursor)
        width = min(MAX_WIDTH, max(260, editor.viewport().width() - 20))
        if not documentation:
            width = min(width, self.label.fontMetrics().horizontalAdvance(label) + 24)
        # A wrapped label's size hint is for a narrower width: ask the layout for this one.
        self.setFixedSize(width, self.layout().totalHeightForWidth(width))
        below_line = editor.viewport().mapToGlobal(QPoint(caret.left(), caret.top()))
        place = QPoint(below_line.x() - 8, below_line.y() - self.height() - 2)
        if place.y() < editor.window().mapToGlobal(QPoint(0, 0)).y():  # no room above: below the line
            place.setY(editor.viewport().mapToGlobal(QPoint(0, caret.bottom())).y() + 2)
        self.move(place)
        self.show()
        self.raise_()


def _first_lines(documentation: str) -> str:
    """The help's opening lines, without markdown fences."""
    lines = [line for line in documentation.replace("```python", "").replace("```", "").splitlines()]
    kept = []
    for line in lines:
        if not line.strip() and kept:
            break  # the first paragraph is the summary
        if line.strip():
            kept.append(line.strip())
        if len(kept) >= HELP_LINES:
            break
    text = " ".join(kept)
    return text if len(text) <= HELP_CHARACTERS else text[:HELP_CHARACTERS].rsplit(" ", 1)[0] + " …"

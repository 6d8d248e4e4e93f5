"""Small questions the Git commands ask when they are run without arguments.

Each returns the answer, or None when the user cancelled. Commands call them through this
module (``dialogs.ask_text(...)``) so a test can replace one with an answer.
"""

from __future__ import annotations

from PySide6.QtWidgets import QInputDialog, QLineEdit, QWidget


def ask_text(parent: QWidget, title: str, label: str, text: str = "") -> str | None:
    """One line of text; None when cancelled or left empty."""
    answer, ok = QInputDialog.getText(parent, title, label, QLineEdit.EchoMode.Normal, text)
    answer = answer.strip()
    return answer if ok and answer else None


def ask_optional_text(parent: QWidget, title: str, label: str, text: str = "") -> str | None:
    """One line of text that may be empty (""), None when cancelled."""
    answer, ok = QInputDialog.getText(parent, title, label, QLineEdit.EchoMode.Normal, text)
    return answer.strip() if ok else None


def ask_multiline(parent: QWidget, title: str, label: str, text: str = "") -> str | None:
    """Several lines (a commit message); None when cancelled or left empty."""
    answer, ok = QInputDialog.getMultiLineText(parent, title, label, text)
    return answer if ok and answer.strip() else None


def ask_choice(parent: QWidget, title: str, label: str, choices: list[str], current: str | None = None,
               editable: bool = False) -> str | None:
    """One of ``choices``; None when cancelled (or when there is nothing to choose)."""
    if not choices and not editable:
        return None
    index = choices.index(current) if current in choices else 0
    answer, ok = QInputDialog.getItem(parent, title, label, choices, index, editable)
    return answer.strip() if ok and answer.strip() else None

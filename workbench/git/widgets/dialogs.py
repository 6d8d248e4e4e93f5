"""Small questions the Git commands ask when they are run without arguments.

Each returns the answer, or None when the user cancelled. Commands call them through this
module (``dialogs.ask_text(...)``) so a test can replace one with an answer.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)
from workbench.qt import theme


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


DIALOG_WIDTH = 480


class FlowSetupDialog(QDialog):
    """Git Flow: Init, as one form: the production and integration branches (the local ones
    offered, a new name allowed), each kind's branch prefix and the version tag prefix, filled
    with what ``git flow init -d`` would pick."""

    def __init__(self, parent: QWidget | None, proposal, branches: list[str]):
        super().__init__(parent)
        self.setWindowTitle("Git Flow: Init")
        self.setMinimumWidth(DIALOG_WIDTH)  # the fields show a whole branch name or placeholder
        form = QFormLayout()
        note = QLabel("Branches for production releases and for the next release; the prefixes name "
                      "the branches Git Flow starts. The proposed values are git-flow's usual ones.")
        note.setWordWrap(True)
        self.master = _branch_box(branches, proposal.master)
        self.develop = _branch_box(branches, proposal.develop)
        form.addRow("Production releases:", self.master)
        form.addRow("Next release (integration):", self.develop)
        self.prefixes: dict[str, QLineEdit] = {}
        for kind, prefix in proposal.prefixes.items():
            edit = QLineEdit(prefix)
            edit.setObjectName(f"flow-prefix-{kind}")
            self.prefixes[kind] = edit
            form.addRow(f"{kind.capitalize()} branches:", edit)
        self.version_tag = QLineEdit(proposal.version_tag_prefix)
        self.version_tag.setPlaceholderText("none (tags are the bare version, e.g. 1.2.0)")
        form.addRow("Version tag prefix:", self.version_tag)
        self.problem = QLabel()
        self.problem.setObjectName("flow-setup-problem")
        self.problem.setWordWrap(True)
        theme.set_themed_style_sheet(self.problem, "color: @ERROR_TEXT;")
        self.problem.hide()
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Set Up Git Flow")
        self.buttons.accepted.connect(self._accept_if_valid)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(note)
        layout.addLayout(form)
        layout.addWidget(self.problem)
        layout.addWidget(self.buttons)
        for box in (self.master, self.develop):
            box.currentTextChanged.connect(lambda _text: self.problem.hide())

    def answer(self) -> dict:
        """The ``flow.init`` keyword arguments the form holds."""
        return {"master": self.master.currentText().strip(), "develop": self.develop.currentText().strip(),
                "prefixes": {kind: edit.text().strip() for kind, edit in self.prefixes.items()},
                "version_tag_prefix": self.version_tag.text().strip()}

    def problem_text(self) -> str:
        """What is wrong with the form ("" when it can be used)."""
        answer = self.answer()
        if not answer["master"] or not answer["develop"]:
            return "Name both branches."
        if answer["master"] == answer["develop"]:
            return "The production and integration branches must differ."
        empty = [kind for kind, prefix in answer["prefixes"].items() if not prefix]
        if empty:
            return f"Give the {', '.join(empty)} branches a prefix (such as {empty[0]}/)."
        return ""

    def _accept_if_valid(self) -> None:
        problem = self.problem_text()
        if problem:
            self.problem.setText(problem)
            self.problem.show()
            return
        self.accept()


def _branch_box(branches: list[str], current: str) -> QComboBox:
    box = QComboBox()
    box.setEditable(True)
    box.addItems(branches if current in branches else [*branches, current])
    box.setCurrentText(current)
    return box


def ask_flow_setup(parent: QWidget, proposal, branches: list[str]) -> dict | None:
    """The branch names and prefixes for Git Flow: Init; None when cancelled."""
    dialog = FlowSetupDialog(parent, proposal, branches)
    return dialog.answer() if dialog.exec() == QDialog.DialogCode.Accepted else None


class IdentityDialog(QDialog):
    """Git: Set Identity, as one form: name and e-mail together, for this repository or for
    every repository of this user (git's global config), filled with what git uses now."""

    def __init__(self, parent: QWidget | None, name: str, email: str, repository: str):
        super().__init__(parent)
        self.setWindowTitle("Git: Set Identity")
        self.setMinimumWidth(DIALOG_WIDTH)  # a whole e-mail address shows
        form = QFormLayout()
        self.name = QLineEdit(name)
        self.name.setPlaceholderText("Ada Lovelace")
        self.email = QLineEdit(email)
        self.email.setPlaceholderText("ada@example.com")
        form.addRow("Name:", self.name)
        form.addRow("E-mail:", self.email)
        self.here = QRadioButton(f"This repository only ({repository})")
        self.everywhere = QRadioButton("Every repository on this computer (global)")
        self.here.setChecked(True)
        note = QLabel("Commits are signed with this name and e-mail.")
        note.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Set Identity")
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.name.textChanged.connect(lambda: ok.setEnabled(self._complete()))
        self.email.textChanged.connect(lambda: ok.setEnabled(self._complete()))
        ok.setEnabled(self._complete())
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(note)
        layout.addLayout(form)
        layout.addWidget(self.here)
        layout.addWidget(self.everywhere)
        layout.addWidget(self.buttons)

    def _complete(self) -> bool:
        return bool(self.name.text().strip()) and "@" in self.email.text()

    def answer(self) -> tuple[str, str, bool]:
        """(name, e-mail, global)."""
        return self.name.text().strip(), self.email.text().strip(), self.everywhere.isChecked()


def ask_identity(parent: QWidget, name: str, email: str, repository: str) -> tuple[str, str, bool] | None:
    """Name, e-mail and whether for every repository; None when cancelled."""
    dialog = IdentityDialog(parent, name, email, repository)
    return dialog.answer() if dialog.exec() == QDialog.DialogCode.Accepted else None

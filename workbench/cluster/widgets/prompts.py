"""The questions a connection can raise: trust a host seen for the first time, refuse a host whose
key changed, and the passphrase of a locked key file.

Each is a function of the error the service raised, so the profiles dialog and the Run on Cluster
dialog ask the same way. ``ask_*`` functions block in a modal box; tests replace them on the
dialog that uses them (``dialog.ask_trust``, ``dialog.ask_passphrase``).
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QLabel,
    QLineEdit,
    QMessageBox,
    QVBoxLayout,
    QWidget,
)
from workbench.qt import theme


def trust_question(error) -> str:
    """What the user is asked about an UnknownHostKey, in ssh's words."""
    where = error.host if error.port == 22 else f"[{error.host}]:{error.port}"
    kind = f"{error.key_type} key" if error.key_type else "key"
    return (f"The authenticity of host {where} can't be established.\n"
            f"Its {kind} has the fingerprint {error.fingerprint}.\n\n"
            f"Trust it and remember?")


def ask_trust_host(parent: QWidget | None, error) -> bool:
    """Ask whether to trust the host key of an UnknownHostKey; True when the user agrees."""
    box = QMessageBox(QMessageBox.Icon.Question, "Unknown Host Key", trust_question(error),
                      QMessageBox.StandardButton.NoButton, parent)
    box.setObjectName("trust-host-question")
    box.setInformativeText("Compare the fingerprint with the one the cluster's administrators publish. "
                           "Workbench remembers the key in its own known_hosts file.")
    trust = box.addButton("Trust and Remember", QMessageBox.ButtonRole.AcceptRole)
    cancel = box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(cancel)
    box.setEscapeButton(cancel)
    box.exec()
    return box.clickedButton() is trust


def show_host_key_changed(parent: QWidget | None, error) -> None:
    """Say that a host's key changed and nothing was sent; there is no way to go on from here."""
    box = QMessageBox(QMessageBox.Icon.Critical, "Host Key Changed", str(error), QMessageBox.StandardButton.Ok,
                      parent)
    box.setObjectName("host-key-changed")
    box.exec()


class PassphraseDialog(QDialog):
    """Asks for the passphrase of a key file; it is kept only in the OS keyring, and only when
    "remember in the keyring" is ticked."""

    def __init__(self, key_file: str, problem: str = "", parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Key Passphrase")
        self.setObjectName("passphrase-dialog")
        text = QLabel(f"The key file {key_file} is locked. Enter its passphrase:")
        text.setWordWrap(True)
        self.passphrase = QLineEdit()
        self.passphrase.setEchoMode(QLineEdit.EchoMode.Password)
        self.passphrase.setObjectName("passphrase")
        self.remember = QCheckBox("Remember in the keyring")
        self.remember.setToolTip("Runs and their followers need the key too: they take it from the OS keyring "
                                 "or the ssh-agent. Workbench never writes a passphrase to a file.")
        note = QLabel("Without the keyring the passphrase is used for this test only; runs then need the key "
                      "in the ssh-agent (ssh-add).")
        note.setWordWrap(True)
        theme.set_themed_style_sheet(note, "color: @MUTED_TEXT;")
        self.problem = QLabel(problem)
        theme.set_themed_style_sheet(self.problem, "color: @ERROR_TEXT;")
        self.problem.setVisible(bool(problem))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        for widget in (text, self.passphrase, self.problem, self.remember, note, buttons):
            layout.addWidget(widget)
        self.resize(440, self.sizeHint().height())


def ask_passphrase(parent: QWidget | None, key_file: str, problem: str = "") -> tuple[str, bool] | None:
    """``(passphrase, remember in the keyring)``, or None when the user cancels."""
    dialog = PassphraseDialog(key_file, problem, parent)
    if dialog.exec() != QDialog.DialogCode.Accepted or not dialog.passphrase.text():
        return None
    return dialog.passphrase.text(), dialog.remember.isChecked()

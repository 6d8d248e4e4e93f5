"""Run ▸ Cluster Profiles…: the list of profiles, one profile's fields, and its test.

A test runs every check of ``workbench.cluster.checks`` on a worker, each shown as it ends. A
host seen for the first time is asked about (its fingerprint, "Trust it and remember?"), and the
test runs again once the user trusts exactly that key; a host whose key changed is refused, with
no way to go on from here. A locked key file asks for its passphrase, kept in the OS keyring only
when the user ticks "Remember in the keyring".
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from workbench.cluster.errors import ClusterError
from workbench.cluster.widgets import prompts
from workbench.cluster.widgets.check_list import CheckList
from workbench.cluster.widgets.profile_form import ProfileForm
from workbench.cluster.widgets.session import ClusterSession

NEW_PROFILE = "(new profile)"
NAME_ROLE = Qt.ItemDataRole.UserRole


class ProfilesDialog(QDialog):
    """Add, edit, test and remove cluster profiles."""

    sig_test_finished = Signal(object)
    """A test ended (its ``TestOutcome``), after any question it raised was answered."""

    def __init__(self, session: ClusterSession, select: str = "", parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Cluster Profiles")
        self.setObjectName("cluster-profiles-dialog")
        self.session = session
        self.ask_trust: Callable = prompts.ask_trust_host
        """``(parent, UnknownHostKey) -> bool`` (replaceable in tests)."""
        self.show_changed: Callable = prompts.show_host_key_changed
        """``(parent, HostKeyChanged)`` (replaceable in tests)."""
        self.ask_passphrase: Callable = prompts.ask_passphrase
        """``(parent, key file, problem) -> (passphrase, remember) | None`` (replaceable in tests)."""
        self.confirm: Callable[[str], bool] = self._confirm
        """Asks a yes/no question before a profile is removed (replaceable in tests)."""
        self._editing = ""  # the saved name of the profile in the form ("" for a new one)
        self._new = False  # the form holds a profile not saved yet
        self._dirty = False
        self._want = select
        self._by_name: dict = {}

        self.profiles = QListWidget()
        self.profiles.setObjectName("profiles-list")
        self.profiles.currentItemChanged.connect(self._on_current_changed)
        self.add_button = QPushButton("Add")
        self.add_button.clicked.connect(self.add_profile)
        self.remove_button = QPushButton("Remove")
        self.remove_button.clicked.connect(self.remove_current)
        list_buttons = QHBoxLayout()
        list_buttons.addWidget(self.add_button)
        list_buttons.addWidget(self.remove_button)
        list_buttons.addStretch(1)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(self.profiles, 1)
        left_layout.addLayout(list_buttons)

        self.form = ProfileForm()
        self.form.sig_edited.connect(self._on_edited)
        form_scroll = QScrollArea()
        form_scroll.setWidgetResizable(True)
        form_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        form_scroll.setWidget(self.form)
        self.save_button = QPushButton("Save")
        self.save_button.setObjectName("save-profile")
        self.save_button.clicked.connect(self.save)
        self.test_button = QPushButton("Test")
        self.test_button.setObjectName("test-profile")
        self.test_button.setToolTip("Connect and check the work root, data root, git, Python, torch and the scheduler")
        self.test_button.clicked.connect(self.test)
        self.message = QLabel("")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        actions = QHBoxLayout()
        actions.addWidget(self.save_button)
        actions.addWidget(self.test_button)
        actions.addWidget(self.message, 1)
        self.checks = CheckList()
        self.checks.setObjectName("profile-checks")
        self.checks.setMinimumHeight(150)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        # The whole form shows when the screen has room; the checks take what is left.
        form_scroll.setMinimumHeight(min(self.form.sizeHint().height() + 2, 560))
        right_layout.addWidget(form_scroll)
        right_layout.addLayout(actions)
        right_layout.addWidget(self.checks, 1)

        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([200, 640])
        splitter.setChildrenCollapsible(False)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(splitter, 1)
        layout.addWidget(close)
        self.resize(920, 800)

        self.session.sig_profiles_changed.connect(self._show_profiles)
        if self.session.profiles:
            self._show_profiles(self.session.profiles)
        self.session.load_profiles(on_error=self._show_error)

    # --- the list -----------------------------------------------------------------------------

    def _show_profiles(self, profiles: list) -> None:
        """List ``profiles``, keeping the form when it holds unsaved changes or a new profile."""
        self._by_name = {p.name: p for p in profiles}
        want = self._want or self._editing
        self._want = ""
        blocked = self.profiles.blockSignals(True)
        try:
            self.profiles.clear()
            for profile in profiles:
                item = QListWidgetItem(profile.name)
                item.setData(NAME_ROLE, profile.name)
                item.setToolTip(f"{profile.destination} ({profile.scheduler})")
                self.profiles.addItem(item)
            if self._new:
                self._add_new_row()
        finally:
            self.profiles.blockSignals(blocked)
        if self._new:
            self._select_row("")
        elif want in self._by_name:
            self._select_row(want)
            if want != self._editing:  # else the form already shows it (just saved), checks and all
                self._edit(self._by_name[want])
            self.remove_button.setEnabled(True)
        elif profiles:
            self._select_row(profiles[0].name)
            self._edit(profiles[0])
        else:
            self.add_profile()

    def _select_row(self, name: str) -> None:
        blocked = self.profiles.blockSignals(True)
        for row in range(self.profiles.count()):
            if self.profiles.item(row).data(NAME_ROLE) == name:
                self.profiles.setCurrentRow(row)
        self.profiles.blockSignals(blocked)

    def _add_new_row(self) -> None:
        item = QListWidgetItem(NEW_PROFILE)
        item.setData(NAME_ROLE, "")
        font = item.font()
        font.setItalic(True)
        item.setFont(font)
        self.profiles.addItem(item)

    def _drop_new_row(self) -> None:
        for row in range(self.profiles.count()):
            if self.profiles.item(row).data(NAME_ROLE) == "":
                blocked = self.profiles.blockSignals(True)
                self.profiles.takeItem(row)
                self.profiles.blockSignals(blocked)
                return

    def _on_current_changed(self, current: QListWidgetItem | None, _previous) -> None:
        if current is None:
            return
        name = current.data(NAME_ROLE)
        if (name == "" and self._new) or (name == self._editing and not self._new):
            return
        if self._dirty and not self._may_discard():
            self._select_row("" if self._new else self._editing)
            return
        if self._new:
            self._new = False
            self._drop_new_row()
        self._edit(self._by_name.get(name))

    def _edit(self, profile) -> None:
        """Show ``profile`` in the form (None: a new, empty one)."""
        self.form.set_profile(profile)
        self._editing = profile.name if profile is not None else ""
        self._dirty = False
        self.remove_button.setEnabled(profile is not None)
        self.checks.clear()
        self.message.setText("")

    # --- actions ------------------------------------------------------------------------------

    def add_profile(self) -> None:
        """An empty form for a new profile."""
        if self._dirty and not self._may_discard():
            return
        self._new = True
        self._drop_new_row()
        self._add_new_row()
        self._select_row("")
        self._edit(None)
        self.form.name.setFocus()

    def save(self) -> None:
        """Check the form and save it as a profile (renaming the one being edited)."""
        try:
            profile = self.form.profile()
        except ClusterError as exc:
            self._show_error(exc)
            return
        problems = profile.problems()
        if problems:
            self._show_error(" ".join(problems))
            return
        if profile.name != self._editing and profile.name in self._by_name:
            self._show_error(f"There is already a profile named {profile.name!r}: choose another name.")
            return
        previous, was_new = self._editing, self._new
        self._say(f"Saving {profile.name}…")
        self.save_button.setEnabled(False)

        def saved(_profiles) -> None:
            self.save_button.setEnabled(True)
            self._say(f"Saved {profile.name}.")

        def failed(error) -> None:
            self.save_button.setEnabled(True)
            self._editing, self._new, self._dirty = previous, was_new, True
            self._show_error(error)

        self._editing, self._dirty, self._want, self._new = profile.name, False, profile.name, False
        self.session.save_profile(profile, previous, on_done=saved, on_error=failed)

    def remove_current(self) -> None:
        name = self._editing
        if not name or not self.confirm(f"Remove the cluster profile {name}? Runs made with it keep their folders; "
                                        f"following them needs a profile of that name."):
            return
        self._editing, self._dirty, self._new = "", False, False
        self.session.remove_profile(name, on_done=lambda _p: self._say(f"Removed {name}."),
                                    on_error=self._show_error)

    def test(self, trust=None, passphrase: str | None = None, remember: bool = False) -> None:
        """Run every check on the profile as it stands in the form (saved or not)."""
        from workbench.cluster.checks import CHECK_NAMES

        try:
            profile = self.form.profile()
            profile.validate()
        except ClusterError as exc:
            self._show_error(exc)
            return
        self.checks.start(CHECK_NAMES)
        self.test_button.setEnabled(False)
        self._say(f"Testing {profile.destination}…")
        self.session.test_profile(profile, on_check=self.checks.add_check,
                                  on_done=lambda outcome: self._tested(profile, outcome),
                                  on_error=self._test_failed, trust=trust, passphrase=passphrase,
                                  remember_passphrase=remember)

    def _tested(self, profile, outcome) -> None:
        self.test_button.setEnabled(True)
        self.checks.finish()
        if outcome.needs_passphrase:
            answer = self.ask_passphrase(self, profile.key_file, outcome.passphrase_problem)
            if answer is not None:
                self.test(passphrase=answer[0], remember=answer[1])
                return
        elif outcome.unknown_host is not None:
            if self.ask_trust(self, outcome.unknown_host):
                self.test(trust=outcome.unknown_host)
                return
            self._show_error("The host key was not trusted: nothing was sent to the host.")
        elif outcome.changed_host is not None:
            self._show_error(outcome.changed_host)
            self.show_changed(self, outcome.changed_host)
        elif outcome.ok:
            self._say(f"{profile.name or profile.destination} is ready for runs.", "#2e9d48")
        else:
            failed = [check.name for check in outcome.checks if not check.ok and not check.skipped]
            self._show_error(f"{len(failed)} check(s) failed: {', '.join(failed)}. Each says what to do.")
        self.sig_test_finished.emit(outcome)

    def _test_failed(self, error) -> None:
        self.test_button.setEnabled(True)
        self.checks.finish()
        self._show_error(error)
        self.sig_test_finished.emit(None)

    # --- small things -------------------------------------------------------------------------

    def _on_edited(self) -> None:
        self._dirty = True

    def _say(self, text: str, colour: str = "") -> None:
        self.message.setStyleSheet(f"color: {colour};" if colour else "")
        self.message.setText(text)

    def _show_error(self, error) -> None:
        self._say(str(error), "#d93025")

    def _may_discard(self) -> bool:
        return self.confirm(f"Discard the changes to {self._editing or 'the new profile'}?")

    def _confirm(self, question: str) -> bool:
        answer = QMessageBox.question(self, "Cluster Profiles", question)
        return answer == QMessageBox.StandardButton.Yes

    def reject(self) -> None:
        if self._dirty and not self._may_discard():
            return
        super().reject()

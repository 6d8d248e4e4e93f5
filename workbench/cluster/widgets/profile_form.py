"""The fields of one cluster profile: how to reach the cluster, where to work there, its scheduler."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QRadioButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from workbench.cluster.errors import ClusterError

SCHEDULER_TITLES = (("slurm", "Slurm"), ("ssh", "None: one machine over SSH"))


def _text_box(placeholder: str, lines: int) -> QPlainTextEdit:
    box = QPlainTextEdit()
    box.setPlaceholderText(placeholder)
    box.setTabChangesFocus(True)
    box.setFixedHeight(box.fontMetrics().lineSpacing() * lines + 14)
    return box


class ProfileForm(QWidget):
    """Edits a ``ClusterProfile``; ``profile()`` reads it back (ClusterError for lines that are
    not NAME=VALUE; the profile's own checks say the rest)."""

    sig_edited = Signal()
    """The user changed a field."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.name = QLineEdit()
        self.name.setPlaceholderText("gpu-cluster")
        self.host = QLineEdit()
        self.host.setPlaceholderText("login.cluster.example.org")
        self.port = QSpinBox()
        self.port.setRange(1, 65535)
        self.port.setValue(22)
        self.user = QLineEdit()
        self.user.setPlaceholderText("your local user name")
        self.use_key = QRadioButton("Key file:")
        self.use_agent = QRadioButton("Use ssh-agent")
        self._key_choice = QButtonGroup(self)
        self._key_choice.addButton(self.use_key)
        self._key_choice.addButton(self.use_agent)
        self.key_file = QLineEdit()
        self.key_file.setPlaceholderText("~/.ssh/id_ed25519")
        self.browse_key = QPushButton("Browse…")
        self.browse_key.clicked.connect(self._browse_key)
        self.use_key.toggled.connect(self._key_choice_changed)
        self.use_agent.setChecked(True)
        key_row = QHBoxLayout()
        key_row.addWidget(self.use_agent)
        key_row.addSpacing(12)
        key_row.addWidget(self.use_key)
        key_row.addWidget(self.key_file, 1)
        key_row.addWidget(self.browse_key)
        self.jump_host = QLineEdit()
        self.jump_host.setPlaceholderText("optional: user@bastion.example.org:22")
        self.work_root = QLineEdit()
        self.work_root.setPlaceholderText("~/workbench")
        self.data_root = QLineEdit()
        self.data_root.setPlaceholderText("shared storage for datasets (default: work root/data)")
        self.python_setup = _text_box("source ~/venv/bin/activate", 2)
        self.env = _text_box("NAME=value, one a line (exported for every command)", 2)
        self.scheduler = QComboBox()
        for value, title in SCHEDULER_TITLES:
            self.scheduler.addItem(title, value)
        self.scheduler.currentIndexChanged.connect(self._scheduler_changed)
        self.partition = QLineEdit()
        self.account = QLineEdit()
        self.qos = QLineEdit()
        for field, hint in ((self.partition, "default partition"), (self.account, "default account"),
                            (self.qos, "default QoS")):
            field.setPlaceholderText(f"optional: {hint}")

        reach = QFormLayout()
        reach.addRow("Name:", self.name)
        host_row = QHBoxLayout()
        host_row.addWidget(self.host, 1)
        host_row.addWidget(self.port)
        reach.addRow("Host and port:", host_row)
        reach.addRow("User:", self.user)
        reach.addRow("Log in with:", key_row)
        reach.addRow("Jump host:", self.jump_host)
        there = QFormLayout()
        there.addRow("Work root:", self.work_root)
        there.addRow("Data root:", self.data_root)
        there.addRow("Python set-up:", self.python_setup)
        there.addRow("Environment:", self.env)
        scheduling = QFormLayout()
        scheduling.addRow("Scheduler:", self.scheduler)
        scheduling.addRow("Partition:", self.partition)
        scheduling.addRow("Account:", self.account)
        scheduling.addRow("QoS:", self.qos)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        forms = (reach, there, scheduling)
        for title, form in zip(("Connection", "On the cluster", "Jobs"), forms):
            group = QGroupBox(title)
            group.setLayout(form)
            layout.addWidget(group)
        layout.addStretch(1)
        # One label width for the three groups, so their fields line up.
        labels = [form.itemAt(row, QFormLayout.ItemRole.LabelRole).widget()
                  for form in forms for row in range(form.rowCount())]
        width = max(label.sizeHint().width() for label in labels)
        for label in labels:
            label.setMinimumWidth(width)

        for line in (self.name, self.host, self.user, self.key_file, self.jump_host, self.work_root,
                     self.data_root, self.partition, self.account, self.qos):
            line.textEdited.connect(self.sig_edited)
        for box in (self.python_setup, self.env):
            box.textChanged.connect(self.sig_edited)
        self.port.valueChanged.connect(self.sig_edited)
        self.scheduler.currentIndexChanged.connect(self.sig_edited)
        self._key_choice.buttonToggled.connect(self.sig_edited)
        self._key_choice_changed()
        self._scheduler_changed()

    def set_profile(self, profile) -> None:
        """Show ``profile`` (None: an empty form for a new one)."""
        from workbench.cluster.profiles import DEFAULT_WORK_ROOT, ClusterProfile

        new = profile is None
        profile = profile or ClusterProfile(name="", host="", work_root=DEFAULT_WORK_ROOT)
        blocked = self.blockSignals(True)
        try:
            self.name.setText(profile.name)
            self.host.setText(profile.host)
            self.port.setValue(profile.port)
            self.user.setText(profile.user)
            self.key_file.setText(profile.key_file)
            (self.use_key if profile.key_file else self.use_agent).setChecked(True)
            self.jump_host.setText(profile.jump_host)
            self.work_root.setText(profile.work_root)
            self.data_root.setText("" if new else profile.data_root)
            self.python_setup.setPlainText(profile.python_setup)
            self.env.setPlainText("\n".join(f"{k}={v}" for k, v in profile.env.items()))
            self.scheduler.setCurrentIndex(max(0, self.scheduler.findData(profile.scheduler)))
            self.partition.setText(profile.partition)
            self.account.setText(profile.account)
            self.qos.setText(profile.qos)
        finally:
            self.blockSignals(blocked)

    def profile(self):
        """The profile as entered (not yet checked); ClusterError for a bad environment line."""
        from workbench.cluster.profiles import ClusterProfile, parse_env_assignment

        env = {}
        for line in self.env.toPlainText().splitlines():
            if line.strip():
                try:
                    key, value = parse_env_assignment(line.strip())
                except ClusterError as exc:
                    raise ClusterError(f"Environment: {exc}") from None
                env[key] = value
        scheduler = self.scheduler.currentData()
        slurm = scheduler == "slurm"
        return ClusterProfile(
            name=self.name.text().strip(), host=self.host.text().strip(), port=self.port.value(),
            user=self.user.text().strip(),
            key_file=self.key_file.text().strip() if self.use_key.isChecked() else "",
            jump_host=self.jump_host.text().strip(), work_root=self.work_root.text().strip(),
            data_root=self.data_root.text().strip(), python_setup=self.python_setup.toPlainText().strip(),
            scheduler=scheduler, partition=self.partition.text().strip() if slurm else "",
            account=self.account.text().strip() if slurm else "", qos=self.qos.text().strip() if slurm else "",
            env=env)

    def _key_choice_changed(self, *_args) -> None:
        for widget in (self.key_file, self.browse_key):
            widget.setEnabled(self.use_key.isChecked())

    def _scheduler_changed(self, *_args) -> None:
        slurm = self.scheduler.currentData() == "slurm"
        for field in (self.partition, self.account, self.qos):
            field.setEnabled(slurm)

    def _browse_key(self) -> None:
        start = self.key_file.text().strip() or str(Path.home() / ".ssh")
        path, _ = QFileDialog.getOpenFileName(self, "Private Key File", str(Path(start).expanduser()),
                                              "All files (*)")
        if path:
            self.key_file.setText(path)
            self.use_key.setChecked(True)
            self.sig_edited.emit()

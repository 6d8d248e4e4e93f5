"""Run ▸ Run on Cluster…: the profile, the resources, the hyper-parameters, what will be synced,
and the start itself with its stages (connect, code, helpers, data, submit).

Everything slow happens on workers through the ``ClusterSession``: reading the project's choices,
the sync plan (it connects to the cluster), and the start. The dialog stays open while the run
starts, so an error is shown where the user can change what caused it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from workbench.cluster.errors import HostKeyChanged, UnknownHostKey
from workbench.cluster.widgets import prompts
from workbench.cluster.widgets.session import ClusterSession, RunChoices
from workbench.cluster.widgets.sync_preview import SyncPreview, format_size
from workbench.qt.elided_label import ElidedLabel
from workbench.qt import theme

NO_FILE = "(none: the schema's defaults)"
# The stages of a start as the user reads them (remote_run.STAGES, "follow" being the end).
STAGE_TITLES = (("connect", "Connect"), ("code", "Code"), ("trainkit", "Helpers"), ("data", "Data"),
                ("submit", "Submit"))
STAGE_MARKS = {"waiting": ("○", "#8a8a8a"), "active": ("●", "#1a73e8"), "done": ("✓", "#2e9d48"),
               "skipped": ("–", "#8a8a8a"), "failed": ("✗", "#d93025")}
SLURM_ONLY = "Slurm only: a plain SSH host runs the job as it is"


def _show_text(label: ElidedLabel, text: str) -> None:
    """A line the dialog shows only while it has something to say."""
    label.setText(text)
    label.setVisible(bool(text))


class RunOnClusterDialog(QDialog):
    """Asks where and with what to train, shows what will be synced, and starts the run."""

    sig_run_started = Signal(object)
    """The job was submitted (its ``RunInfo``)."""

    sig_plan_shown = Signal()
    """The "What will be synced" list was filled (or says why it could not be)."""

    def __init__(self, session: ClusterSession, open_profiles: Callable[[str], None] | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Run on Cluster")
        self.setObjectName("run-on-cluster-dialog")
        self.session = session
        self.open_profiles = open_profiles
        self.ask_trust: Callable = prompts.ask_trust_host
        """``(parent, UnknownHostKey) -> bool`` (replaceable in tests)."""
        self.choices: RunChoices | None = None
        self._profiles: dict = {}
        self._cancel = None
        self._stage_state: dict[str, str] = {}
        self._untrusted: UnknownHostKey | None = None

        # --- where -------------------------------------------------------------------------
        self.profile = QComboBox()
        self.profile.setObjectName("cluster-profile")
        self.profile.setMinimumContentsLength(18)
        self.profile.currentIndexChanged.connect(self._on_profile_changed)
        self.profiles_button = QPushButton("Profiles…")
        self.profiles_button.clicked.connect(self._open_profiles)
        self.destination = ElidedLabel(elide_mode=Qt.TextElideMode.ElideMiddle)
        theme.set_themed_style_sheet(self.destination, "color: @MUTED_TEXT;")
        where = QHBoxLayout()
        where.addWidget(self.profile, 1)
        where.addWidget(self.profiles_button)

        # --- resources ---------------------------------------------------------------------
        self.nodes = self._spin(1, 4096, 1)
        self.gpus = self._spin(0, 64, 0)
        self.gpus.setToolTip("GPUs on each node; one training process per GPU (one process without GPUs)")
        self.cpus = self._spin(1, 1024, 1)
        self.cpus.setToolTip("CPUs for the training processes of each node")
        self.mem = QLineEdit()
        self.mem.setPlaceholderText("e.g. 16G")
        self.time = QLineEdit()
        self.time.setPlaceholderText("e.g. 02:00:00")
        self.partition = QLineEdit()
        grid = QGridLayout()
        grid.setHorizontalSpacing(8)
        cells = (("Nodes:", self.nodes), ("GPUs per node:", self.gpus), ("CPUs:", self.cpus),
                 ("Memory:", self.mem), ("Time limit:", self.time), ("Partition:", self.partition))
        for index, (label, widget) in enumerate(cells):
            row, column = divmod(index, 3)
            grid.addWidget(QLabel(label), row, column * 2)
            grid.addWidget(widget, row, column * 2 + 1)
            widget.setMinimumWidth(110)
        grid.setColumnStretch(6, 1)  # the fields keep their size; the room left stays on the right
        grid.setColumnMinimumWidth(2, 8)
        resources = QGroupBox("Resources")
        resources.setLayout(grid)

        # --- hyper-parameters --------------------------------------------------------------
        self.hparams = QComboBox()
        self.hparams.setEditable(True)
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        file_row = QHBoxLayout()
        file_row.addWidget(self.hparams, 1)
        file_row.addWidget(browse)
        self.overrides = QPlainTextEdit()
        self.overrides.setPlaceholderText("learning_rate=0.01\nnum_epochs=10")
        self.overrides.setTabChangesFocus(True)
        self.overrides.setFixedHeight(self.overrides.fontMetrics().lineSpacing() * 3 + 14)
        training_form = QFormLayout()
        training_form.addRow("Hyper-parameter file:", file_row)
        training_form.addRow("Overrides (key=value):", self.overrides)
        training = QGroupBox("Training")
        training.setLayout(training_form)

        # --- what will be synced -----------------------------------------------------------
        self.plan_status = QLabel("")
        self.plan_status.setWordWrap(True)
        self.plan_status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.plan_target = ElidedLabel(elide_mode=Qt.TextElideMode.ElideMiddle)
        theme.set_themed_style_sheet(self.plan_target, "color: @MUTED_TEXT;")
        self.trust_button = QPushButton("Trust Host…")
        self.trust_button.clicked.connect(self._trust_from_plan)
        self.trust_button.hide()
        self.refresh_plan_button = QPushButton("Refresh")
        self.refresh_plan_button.clicked.connect(self.refresh_plan)
        plan_bar = QHBoxLayout()
        plan_bar.addWidget(self.plan_status, 1)
        plan_bar.addWidget(self.trust_button)
        plan_bar.addWidget(self.refresh_plan_button)
        self.plan = SyncPreview()
        self.plan.setObjectName("sync-preview")
        synced = QGroupBox("What will be synced")
        synced_layout = QVBoxLayout(synced)
        synced_layout.addLayout(plan_bar)
        synced_layout.addWidget(self.plan_target)
        synced_layout.addWidget(self.plan, 1)

        # --- the start ---------------------------------------------------------------------
        self.stage_labels: dict[str, QLabel] = {}
        stages = QHBoxLayout()
        for stage, title in STAGE_TITLES:
            label = QLabel()
            label.setObjectName(f"stage-{stage}")
            self.stage_labels[stage] = label
            stages.addWidget(label)
        stages.addStretch(1)
        self.progress = QProgressBar()
        self.progress.setTextVisible(False)
        self.progress.setFixedHeight(6)
        self.progress_text = QLabel("")
        self.progress_text.setWordWrap(True)
        self.starting = QWidget()
        starting_layout = QVBoxLayout(self.starting)
        starting_layout.setContentsMargins(0, 0, 0, 0)
        starting_layout.addLayout(stages)
        starting_layout.addWidget(self.progress)
        starting_layout.addWidget(self.progress_text)
        self.starting.hide()
        self.error = QLabel("")
        self.error.setObjectName("run-error")
        theme.set_themed_style_sheet(self.error, "color: @ERROR_TEXT;")
        self.error.setWordWrap(True)
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.start_button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.start_button.setText("Start")
        self.start_button.setEnabled(False)
        self.buttons.accepted.connect(self.start)
        self.buttons.rejected.connect(self.reject)

        top = QFormLayout()
        top.addRow("Cluster:", where)
        top.addRow("", self.destination)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(resources)
        layout.addWidget(training)
        layout.addWidget(synced, 1)
        layout.addWidget(self.starting)
        layout.addWidget(self.error)
        layout.addWidget(self.buttons)
        self.resize(720, 720)

        self.session.sig_profiles_changed.connect(self._show_profiles)
        self.plan_status.setText("Reading the project…")
        self.session.read_run_choices(self._on_choices, self._show_error)

    # --- filling ------------------------------------------------------------------------------

    @staticmethod
    def _spin(low: int, high: int, value: int) -> QSpinBox:
        spin = QSpinBox()
        spin.setRange(low, high)
        spin.setValue(value)
        return spin

    def _on_choices(self, choices: RunChoices) -> None:
        self.choices = choices
        last = choices.last
        files = list(choices.hparams_files)
        self.hparams.addItems(files)
        self.hparams.addItem(NO_FILE)
        if last.profile:  # started here before: as then
            current = last.hparams_file
        else:
            current = choices.default_hparams or (files[0] if files else None)
        index = self.hparams.findText(current) if current else self.hparams.findText(NO_FILE)
        if index < 0:
            self.hparams.insertItem(0, current)
            index = 0
        self.hparams.setCurrentIndex(index)
        self.overrides.setPlainText("\n".join(last.overrides))
        self._show_profiles(choices.profiles, prefer=last.profile)

    def _show_profiles(self, profiles: list, prefer: str = "") -> None:
        if self.choices is None:
            return
        keep = prefer or self.profile.currentData() or ""
        self._profiles = {p.name: p for p in profiles}
        blocked = self.profile.blockSignals(True)
        self.profile.clear()
        for profile in profiles:
            self.profile.addItem(profile.name, profile.name)
        self.profile.blockSignals(blocked)
        if not profiles:
            _show_text(self.destination, "No cluster profile yet: add one with Profiles…")
            self.plan_status.setText("Choose a cluster to see what will be synced.")
            self.plan.clear()
            self.start_button.setEnabled(False)
            return
        index = self.profile.findData(keep)
        self.profile.setCurrentIndex(max(0, index))
        self._on_profile_changed()

    def _on_profile_changed(self, *_args) -> None:
        profile = self._profiles.get(self.profile.currentData() or "")
        if profile is None:
            return
        slurm = profile.scheduler == "slurm"
        _show_text(self.destination, f"{profile.destination} · {'Slurm' if slurm else 'plain SSH, no scheduler'}"
                                 f" · work root {profile.work_root}")
        from workbench.cluster.jobs import Resources

        remembered = (self.choices.last.resources.get(profile.name) if self.choices else None) or {}
        resources = Resources.from_json(remembered) if remembered else Resources().with_profile_defaults(profile)
        self.nodes.setValue(resources.nodes)
        self.gpus.setValue(resources.gpus_per_node)
        self.cpus.setValue(resources.cpus)
        self.mem.setText(resources.mem)
        self.time.setText(resources.time)
        self.partition.setText(resources.partition)
        self.partition.setPlaceholderText(profile.partition or "default")
        for widget in (self.nodes, self.mem, self.time, self.partition):
            widget.setEnabled(slurm)
            widget.setToolTip("" if slurm else SLURM_ONLY)
        if not slurm:
            self.nodes.setValue(1)
        self._account, self._qos = resources.account, resources.qos
        self.start_button.setEnabled(self._cancel is None)
        self.refresh_plan()

    # --- what will be synced ------------------------------------------------------------------

    def refresh_plan(self, trust: UnknownHostKey | None = None) -> None:
        """Ask the cluster what a sync would send now."""
        name = self.profile.currentData()
        if not name:
            return
        self.trust_button.hide()
        self._untrusted = None
        self.plan.clear()
        _show_text(self.plan_target, "")
        theme.set_themed_style_sheet(self.plan_status, "")
        self.plan_status.setText(f"Comparing the project's data with {name}…")
        self.session.plan_sync(name, self._on_plan, self._on_plan_failed, on_progress=self._on_plan_progress,
                               trust=trust)

    def _on_plan_progress(self, report) -> None:
        self.plan_status.setText(report.message)

    def _on_plan(self, plan) -> None:
        if not plan.configured:
            self.plan_status.setText("No data to sync: the code goes through Git. To send data, add "
                                     "[cluster] data = [\"data/\"] to workbench.toml.")
            _show_text(self.plan_target, "")
        else:
            self.plan_status.setText(f"{len(plan.send)} to send ({format_size(plan.bytes_to_send)}), "
                                     f"{len(plan.unchanged)} unchanged, {len(plan.skipped)} skipped, "
                                     f"{len(plan.excluded)} excluded")
            _show_text(self.plan_target, f"Into {plan.remote_dir} on {self.profile.currentText()}")
        self.plan.show_plan(plan)
        self.sig_plan_shown.emit()

    def _on_plan_failed(self, error) -> None:
        theme.set_themed_style_sheet(self.plan_status, "color: @ERROR_TEXT;")
        if isinstance(error, UnknownHostKey):
            self._untrusted = error
            self.plan_status.setText(f"The host key of {error.host} is not known yet ({error.fingerprint}). "
                                     f"Trust it to see what will be synced.")
            self.trust_button.show()
        else:
            self.plan_status.setText(str(error))
        self.sig_plan_shown.emit()

    def _trust_from_plan(self) -> None:
        error = self._untrusted
        if error is not None and self.ask_trust(self, error):
            self.refresh_plan(trust=error)

    # --- starting -----------------------------------------------------------------------------

    def values(self) -> tuple[str, dict, str | None, list[str]]:
        """(profile name, resources as JSON, hyper-parameter file or None, overrides) as entered."""
        from workbench.training.hparams_files import parse_overrides

        text = self.hparams.currentText().strip()
        overrides, _error = parse_overrides(self.overrides.toPlainText(), self.choices.schema if self.choices else None)
        resources = dict(nodes=self.nodes.value(), gpus_per_node=self.gpus.value(), cpus=self.cpus.value(),
                         mem=self.mem.text().strip(), time=self.time.text().strip(),
                         partition=self.partition.text().strip(), account=getattr(self, "_account", ""),
                         qos=getattr(self, "_qos", ""))
        return self.profile.currentData() or "", resources, (None if not text or text == NO_FILE else text), overrides

    def start(self, trust: UnknownHostKey | None = None) -> None:
        """Check what was entered and start the run; the dialog closes once the job is submitted."""
        from workbench.training.hparams_files import parse_overrides

        if self._cancel is not None:
            return
        schema = self.choices.schema if self.choices else None
        _overrides, problem = parse_overrides(self.overrides.toPlainText(), schema)
        if problem:
            self._show_error(f"Overrides: {problem}")
            return
        name, resources, hparams_file, overrides = self.values()
        if not name:
            self._show_error("Choose a cluster profile first (Profiles… adds one).")
            return
        self.error.setText("")
        self._set_stages({})
        self.starting.show()
        self.progress.setRange(0, 0)
        self.progress_text.setText(f"Starting on {name}…")
        self.start_button.setEnabled(False)
        self._cancel = self.session.start_run(name, resources, hparams_file, overrides, self._on_progress,
                                              self._on_started, self._on_start_failed, self._on_start_cancelled,
                                              trust=trust)

    def _on_progress(self, report) -> None:
        stage = getattr(report, "stage", "")
        if stage:
            order = [s for s, _ in STAGE_TITLES]
            states = {}
            if stage in order:
                reached = order.index(stage)
                for index, name in enumerate(order):
                    if index < reached:
                        states[name] = "done" if self._stage_state.get(name) in ("active", "done") else "skipped"
                    elif index == reached:
                        states[name] = "active"
            else:
                states = {name: "done" if self._stage_state.get(name) in ("active", "done") else "skipped"
                          for name in order}
            self._set_stages(states)
        if report.fraction is None:
            self.progress.setRange(0, 0)
        else:
            self.progress.setRange(0, 1000)
            self.progress.setValue(int(report.fraction * 1000))
        self.progress_text.setText(report.message)

    def _set_stages(self, states: dict[str, str]) -> None:
        self._stage_state = dict(states)
        for stage, title in STAGE_TITLES:
            mark, colour = STAGE_MARKS[states.get(stage, "waiting")]
            label = self.stage_labels[stage]
            label.setText(f"<span style='color:{colour}'>{mark}</span> {title}")
            label.setProperty("stage_state", states.get(stage, "waiting"))

    def _on_started(self, info) -> None:
        self._cancel = None
        self._set_stages({stage: "done" if self._stage_state.get(stage) in ("active", "done") else "skipped"
                          for stage, _ in STAGE_TITLES})
        self.progress.setRange(0, 1)
        self.progress.setValue(1)
        self.progress_text.setText(f"Job {info.job_id} submitted: run {info.id}.")
        self.sig_run_started.emit(info)
        self.accept()

    def _on_start_failed(self, error) -> None:
        self._cancel = None
        failed = {stage: state if state != "active" else "failed" for stage, state in self._stage_state.items()}
        self._set_stages(failed)
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.start_button.setEnabled(True)
        if isinstance(error, UnknownHostKey):
            self.starting.hide()
            if self.ask_trust(self, error):
                self.start(trust=error)
            else:
                self._show_error("The host key was not trusted: nothing was sent to the cluster.")
            return
        if isinstance(error, HostKeyChanged):
            self.progress_text.setText("Refused: the host key changed.")
        else:
            self.progress_text.setText("The run did not start.")
        self._show_error(error)

    def _on_start_cancelled(self) -> None:
        self._cancel = None
        self.starting.hide()
        self.start_button.setEnabled(True)
        self.error.setText("Cancelled: nothing of the run was left, here or on the cluster.")

    def reject(self) -> None:
        """Cancel: while the run is starting, stop the start (until the job is submitted)."""
        if self._cancel is not None:
            self._cancel.cancel()
            self.progress_text.setText("Cancelling…")
            return
        super().reject()

    # --- small things -------------------------------------------------------------------------

    def _show_error(self, error) -> None:
        # A hyper-parameter file that does not check out lists its problems line by line.
        problems = [str(d) for d in (getattr(error, "diagnostics", None) or [])][:5]
        self.error.setText("\n".join([str(error), *problems]))
        if self.choices is None:
            self.plan_status.setText("")

    def _open_profiles(self) -> None:
        if self.open_profiles is not None:
            self.open_profiles(self.profile.currentData() or "")

    def _browse(self) -> None:
        root = self.session.project_dir
        path, _ = QFileDialog.getOpenFileName(self, "Hyper-parameter file", str(root),
                                              "Hyper-parameters (*.hparams);;All files (*)")
        if path:
            try:
                path = Path(path).resolve().relative_to(root.resolve()).as_posix()
            except ValueError:
                pass
            self.hparams.setEditText(path)

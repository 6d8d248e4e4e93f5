""""Train with Hyper-parameters…": pick the file, add key=value overrides, choose processes."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from workbench.training.hparams_files import parse_overrides
from workbench.qt import theme

NO_FILE = "(none: the schema's defaults)"
ALL_DATA = "(the data as the script reads it)"
FROM_SCRATCH = "(from scratch)"


class VersionChoices:
    """What the dialog offers to train on and from: ``(value, text)`` pairs of dataset versions
    and model versions (aliases first), and whether this project can fine-tune from one."""

    def __init__(self, datasets=(), models=(), fine_tunable: bool = True, fine_tunable_reason: str = ""):
        self.datasets = list(datasets)
        self.models = list(models)
        self.fine_tunable = fine_tunable
        self.fine_tunable_reason = fine_tunable_reason


def read_version_choices(project_dir: Path, settings: dict) -> VersionChoices:
    """The project's versions as the dialog lists them, newest first; none when the registry
    cannot be read (the dialog still trains)."""
    from workbench.registry import RegistryError, open_versions

    try:
        versions = open_versions(project_dir, settings)
        datasets = [(v.name, f"{v.name}: {v.samples:,} samples" + (f" ({v.fraction:.0%})" if v.fraction not in
                                                                   (None, 1.0) else "") + (f", {v.reason}" if v.reason else ""))
                    for v in reversed(versions.datasets.list())]
        models = []
        found = list(reversed(versions.models.list()))
        for version in found:
            for alias in version.aliases:
                models.append((alias, f"{alias} ({version.name})"))
        metric = versions.settings.metric
        for version in found:
            value = version.metrics.get(metric) if metric else None
            shown = f", {metric} {value:.4g}" if isinstance(value, (int, float)) else ""
            models.append((version.name, f"{version.name}{shown}" + (f", dataset {version.info['dataset_version']}"
                                                                    if version.info.get("dataset_version") else "")))
    except (RegistryError, OSError):
        return VersionChoices()
    training = settings.get("training", {}) if isinstance(settings.get("training", {}), dict) else {}
    if training.get("parameters") in ("argparse", "hydra"):
        return VersionChoices(datasets, models, False, "Your script takes its own arguments: give it the weights "
                              "of a version with your own flag in the fields above")
    return VersionChoices(datasets, models)


class TrainDialog(QDialog):
    """Asks for a hyper-parameter file, overrides and the number of processes; or, to resume a
    run as a new one (``resume_from``: run id, checkpoint step or None, the run's
    hyper-parameters), only for the overrides."""

    def __init__(self, project_dir: Path, files: list[str], current: str | None = None,
                 overrides: list[str] | None = None, nproc: int = 1, schema=None,
                 parent: QWidget | None = None, resume_from: tuple[str, int | None, dict] | None = None,
                 versions: "VersionChoices | None" = None):
        super().__init__(parent)
        self.schema = schema
        self.resume_from = resume_from
        self.setWindowTitle("Train with Hyper-parameters" if resume_from is None else "Resume as New Run")
        self.project_dir = Path(project_dir)
        self.file = QComboBox()
        self.file.setEditable(True)
        self.file.addItems(files or [])
        self.file.addItem(NO_FILE)
        if current:
            index = self.file.findText(current)
            if index < 0:
                self.file.insertItem(0, current)
                index = 0
            self.file.setCurrentIndex(index)
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        file_row = QHBoxLayout()
        file_row.addWidget(self.file, 1)
        file_row.addWidget(browse)
        self.overrides = QPlainTextEdit("\n".join(overrides or []))
        self.overrides.setPlaceholderText("learning_rate=0.01\nnum_epochs=10")
        self.overrides.setFixedHeight(90)
        self.nproc = QSpinBox()
        self.nproc.setRange(1, max(1, os.cpu_count() or 1) * 4)
        self.nproc.setValue(nproc)
        self.nproc.setToolTip("More than 1 starts the script under torchrun (DistributedDataParallel)")
        self.error = QLabel("")
        theme.set_themed_style_sheet(self.error, "color: @ERROR_TEXT;")
        self.error.setWordWrap(True)
        form = QFormLayout()
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        form.addRow(self.summary)
        form.addRow("Hyper-parameter file:", file_row)
        form.addRow("Overrides (key=value):", self.overrides)
        form.addRow("Processes:", self.nproc)
        self.dataset_version = QComboBox()
        self.from_version = QComboBox()
        self.register = QCheckBox("Register the model as the next model version")
        self.register.setChecked(True)
        choices = versions or VersionChoices()
        self.dataset_version.addItem(ALL_DATA, "")
        for name, text in choices.datasets:
            self.dataset_version.addItem(text, name)
        self.dataset_version.setToolTip("Train on the samples of one dataset version only "
                                        "(workbench dataset version cuts one)")
        self.from_version.addItem(FROM_SCRATCH, "")
        for name, text in choices.models:
            self.from_version.addItem(text, name)
        self.from_version.setToolTip("Fine-tune the weights of a model version (task_type=finetune)")
        if resume_from is None:
            form.addRow("Dataset version:", self.dataset_version)
            form.addRow("Start from:", self.from_version)
            form.addRow("", self.register)
            if not choices.fine_tunable:
                self.from_version.setEnabled(False)
                self.from_version.setToolTip(choices.fine_tunable_reason)
        if resume_from is None:
            form.setRowVisible(self.summary, False)
        else:
            # The new run takes the file and processes of the run it resumes: only what changes is asked.
            run_id, step, hparams = resume_from
            where = f"step {step}" if step is not None else "its last checkpoint"
            self.summary.setText(f"A new run starts from run {run_id} at {where}, with that run's "
                                 "hyper-parameters and these changes (more epochs, say):")
            epochs = (hparams or {}).get("num_epochs")
            if isinstance(epochs, int) and not isinstance(epochs, bool):
                self.overrides.setPlaceholderText(f"num_epochs={epochs * 2}\nlearning_rate=0.001")
            form.setRowVisible(file_row, False)
            form.setRowVisible(self.nproc, False)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Train" if resume_from is None else "Resume")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        self.resize(520, 260 if resume_from is None else self.sizeHint().height())

    def values(self) -> tuple[str | None, list[str], int]:
        """(hyper-parameter file or None, overrides, processes) as entered."""
        text = self.file.currentText().strip()
        overrides, _error = parse_overrides(self.overrides.toPlainText(), self.schema)
        return (None if not text or text == NO_FILE else text), overrides, self.nproc.value()

    def choose_dataset_version(self, version: str | None) -> None:
        """Start with ``version`` chosen (when the project has it)."""
        index = self.dataset_version.findData(version) if version else -1
        if index >= 0:
            self.dataset_version.setCurrentIndex(index)

    def version_values(self) -> dict:
        """``dataset_version``, ``from_version`` (a number, alias or None) and ``register``, as
        RunService.start takes them."""
        return {"dataset_version": self.dataset_version.currentData() or None,
                "from_version": self.from_version.currentData() or None,
                "register": self.register.isChecked()}

    def typed_overrides(self) -> list[str]:
        """The overrides box's lines as typed (blank lines left out), checked or not."""
        return [line.strip() for line in self.overrides.toPlainText().splitlines() if line.strip()]

    def accept(self) -> None:
        _overrides, error = parse_overrides(self.overrides.toPlainText(), self.schema)
        if error:
            self.error.setText(error)
            return
        super().accept()

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Hyper-parameter file", str(self.project_dir),
                                              "Hyper-parameters (*.hparams);;All files (*)")
        if path:
            try:
                path = Path(path).resolve().relative_to(self.project_dir.resolve()).as_posix()
            except ValueError:
                pass
            self.file.setEditText(path)

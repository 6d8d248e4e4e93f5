""""Train with Hyper-parameters…": pick the file, add key=value overrides, choose processes."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtWidgets import (
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


class TrainDialog(QDialog):
    """Asks for a hyper-parameter file, overrides and the number of processes; or, to resume a
    run as a new one (``resume_from``: run id, checkpoint step or None, the run's
    hyper-parameters), only for the overrides."""

    def __init__(self, project_dir: Path, files: list[str], current: str | None = None,
                 overrides: list[str] | None = None, nproc: int = 1, schema=None,
                 parent: QWidget | None = None, resume_from: tuple[str, int | None, dict] | None = None):
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

"""The Cut Dataset Version dialog: first what the data holds that the newest version does not
(looked at off the GUI thread by the dataset view, which feeds the answer in), then how much of
the data to take, why, and whether to replace val.txt. Opened without blocking the window; the
view cuts on ``accepted``."""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QValidator
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from workbench.qt import theme
from workbench.registry.datasets import DataChanges, DatasetVersion
from workbench.registry.widgets.dataset_rows import change_lines, pending_summary
from workbench.tasks import Progress

LOOKING_TEXT = "Looking at the data…"
ALL_TEXT = "all"


class ProgressRelay(QObject):
    """Carries progress reports from the worker that looks at the data to the dialog."""

    sig_progress = Signal(object)
    """A ``Progress`` of the look at the data."""


class FractionSpinBox(QSpinBox):
    """1 to 100 % of the samples; 100 reads "all"."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setRange(1, 100)
        self.setValue(100)
        self.setSingleStep(10)
        self.setAccelerated(True)

    def textFromValue(self, value: int) -> str:
        return ALL_TEXT if value >= 100 else f"{value} %"

    def valueFromText(self, text: str) -> int:
        text = text.strip().rstrip("%").strip()
        if not text or ALL_TEXT.startswith(text.lower()):
            return 100
        return int(text) if text.isdigit() else self.value()

    def validate(self, text: str, position: int):
        bare = text.strip().rstrip("%").strip()
        if bare.lower() == ALL_TEXT or (bare.isdigit() and 1 <= int(bare) <= 100):
            return QValidator.State.Acceptable, text, position
        if not bare or ALL_TEXT.startswith(bare.lower()) or (bare.isdigit() and int(bare) <= 100):
            return QValidator.State.Intermediate, text, position
        return QValidator.State.Invalid, text, position

    @property
    def fraction(self) -> float | None:
        """The part of the samples to take, 0.01 to 0.99; None for all of them."""
        return None if self.value() >= 100 else self.value() / 100


class CutDatasetVersionDialog(QDialog):
    """What is new in the data, and the cut's part, reason and val.txt choice."""

    def __init__(self, latest: DatasetVersion | None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("registry-cut-dialog")
        self.setWindowTitle("Cut Dataset Version")
        self.latest = latest
        self.changes: DataChanges | None = None
        self.relay = ProgressRelay(self)
        self.relay.sig_progress.connect(self.show_progress)

        self.summary = QLabel(LOOKING_TEXT)
        self.summary.setObjectName("registry-cut-summary")
        self.summary.setWordWrap(True)
        self.progress = QProgressBar()
        self.progress.setObjectName("registry-cut-progress")
        self.progress.setRange(0, 0)
        self.progress.setTextVisible(False)
        self.progress.setMaximumHeight(8)
        self.changes_view = QPlainTextEdit()
        self.changes_view.setObjectName("registry-cut-changes")
        self.changes_view.setReadOnly(True)
        self.changes_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.changes_view.setFont(theme.editor_font())
        self.changes_view.setMinimumHeight(120)
        self.changes_view.hide()
        self.error_label = QLabel()
        self.error_label.setObjectName("registry-cut-error")
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        theme.set_themed_style_sheet(self.error_label, "color: @ERROR_TEXT;")
        self.error_label.hide()

        form = QFormLayout()
        self.fraction_box = FractionSpinBox()
        self.fraction_box.setObjectName("registry-cut-fraction")
        self.fraction_box.setToolTip("Take this part of the samples, the first in a fixed order, so versions of "
                                     "50 %, 60 % … all of the same data nest")
        form.addRow("Part of the data:", self.fraction_box)
        self.reason_edit = QLineEdit()
        self.reason_edit.setObjectName("registry-cut-reason")
        self.reason_edit.setPlaceholderText("why this version is cut (kept with it)")
        form.addRow("Reason:", self.reason_edit)
        self.new_val_box = QCheckBox("Replace val.txt with the validation samples the data holds now")
        self.new_val_box.setObjectName("registry-cut-new-val")
        self.new_val_box.setToolTip("Recorded in val-history.jsonl; otherwise val.txt stays as it was, so "
                                    "versions stay comparable")
        form.addRow("", self.new_val_box)

        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.cut_button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.cut_button.setText("Cut")
        self.cut_button.setObjectName("registry-cut-button")
        self.cut_button.setEnabled(False)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

        column = QVBoxLayout(self)
        column.addWidget(self.summary)
        column.addWidget(self.progress)
        column.addWidget(self.changes_view, 1)
        column.addWidget(self.error_label)
        column.addLayout(form)
        column.addStretch(0)
        column.addWidget(self.buttons)
        self.resize(560, self.sizeHint().height())

    # --- what the view feeds in ---------------------------------------------------------------

    def show_progress(self, report: object) -> None:
        """A progress report of the look at the data (hashing new files, say)."""
        if not isinstance(report, Progress) or self.changes is not None:
            return
        self.summary.setText(f"{LOOKING_TEXT} {report.message}")
        if report.fraction is not None:
            self.progress.setRange(0, 1000)
            self.progress.setValue(int(report.fraction * 1000))

    def show_pending(self, changes: DataChanges) -> None:
        """What the data holds that the newest version does not: the Cut button is ready."""
        self.changes = changes
        self.progress.hide()
        self.summary.setText(pending_summary(changes, self.latest))
        lines = change_lines(changes)
        self.changes_view.setPlainText("\n".join(lines))
        self.changes_view.setVisible(bool(lines))
        # Room for the list when there is one; without, the dialog keeps to its fields.
        self.resize(self.width(), 380 if lines else self.minimumSizeHint().height())
        self.cut_button.setEnabled(True)
        self.cut_button.setDefault(True)
        self.reason_edit.setFocus()

    def show_problem(self, message: str) -> None:
        """The data could not be looked at (no [data], a folder missing): cutting would fail alike."""
        self.progress.hide()
        self.summary.setText("The data could not be looked at:")
        self.error_label.setText(message)
        self.error_label.show()
        self.cut_button.setEnabled(False)

    # --- what the user chose ------------------------------------------------------------------

    @property
    def fraction(self) -> float | None:
        return self.fraction_box.fraction

    @property
    def reason(self) -> str:
        return self.reason_edit.text().strip()

    @property
    def new_val(self) -> bool:
        return self.new_val_box.isChecked()

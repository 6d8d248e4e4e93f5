"""Train with Arguments…: the hyper-parameters of a script of the user's own (its argparse flags,
its Hydra config's keys) as typed fields with their defaults and help. A field left at its
default is not passed: the run is the script as its author runs it, with what was changed."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from workbench.qt import theme
from workbench.training.errors import TrainingError

# A whole number field's range: argparse ints are Python ints; the spin box is 32-bit.
INT_LIMIT = 2**31 - 1


class ArgumentsDialog(QDialog):
    """One field per parameter of the script (``parameters``: ``ScriptParameter``), filled with
    ``values`` (the last run's choices, by name) or the defaults, and the number of processes."""

    def __init__(self, project_dir: Path, settings: dict, parameters: list, values: dict | None = None,
                 nproc: int = 1, parent: QWidget | None = None, problem: str = ""):
        super().__init__(parent)
        self.project_dir = Path(project_dir)
        self.settings = settings
        self.parameters = list(parameters)
        script = settings.get("script") or "the script"
        self.setWindowTitle(f"Train {script}")
        self.fields: dict[str, QWidget] = {}
        form = QFormLayout()
        intro = QLabel(f"The hyper-parameters of {script} ({settings.get('parameters')}). What you change is "
                       "passed to it; the rest keeps the script's defaults.")
        intro.setWordWrap(True)
        form.addRow(intro)
        if problem:
            # The parameters are not known (a --help that did not answer): say so; --set still works.
            note = QLabel(problem)
            note.setWordWrap(True)
            theme.set_themed_style_sheet(note, "color: @ERROR_TEXT;")
            form.addRow(note)
        for parameter in self.parameters:
            field = self._field(parameter)
            self.fields[parameter.name] = field
            value = (values or {}).get(parameter.name, parameter.default)
            self._show(field, parameter, value)
            label = parameter.flag or parameter.name
            if parameter.required:
                label += " *"
            field.setToolTip(parameter.describe())
            form.addRow(label, field)
            if parameter.help:
                help_text = QLabel(parameter.help)
                help_text.setWordWrap(True)
                theme.set_themed_style_sheet(help_text, "color: @MUTED_TEXT;")
                form.addRow("", help_text)
        self.nproc = QSpinBox()
        self.nproc.setRange(1, max(1, os.cpu_count() or 1) * 4)
        self.nproc.setValue(nproc)
        self.nproc.setToolTip("More than 1 starts the script under torchrun (DistributedDataParallel)")
        form.addRow("Processes", self.nproc)
        holder = QWidget()
        holder.setLayout(form)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(holder)
        self.error = QLabel("")
        self.error.setWordWrap(True)
        theme.set_themed_style_sheet(self.error, "color: @ERROR_TEXT;")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Train")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(scroll, 1)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        self.resize(560, min(640, holder.sizeHint().height() + 110))

    @staticmethod
    def _field(parameter) -> QWidget:
        if parameter.choices:
            box = QComboBox()
            box.addItems([str(choice) for choice in parameter.choices])
            return box
        if parameter.type == "bool":
            return QCheckBox()
        if parameter.type == "int" and parameter.default is not None:
            spin = QSpinBox()
            spin.setRange(-INT_LIMIT, INT_LIMIT)
            return spin
        edit = QLineEdit()
        edit.setPlaceholderText({"float": "a number", "list": "comma-separated"}.get(parameter.type, "")
                                if not parameter.required else "required")
        return edit

    @staticmethod
    def _show(field: QWidget, parameter, value) -> None:
        if isinstance(field, QComboBox):
            index = field.findText(str(value)) if value is not None else -1
            field.setCurrentIndex(max(index, 0))
        elif isinstance(field, QCheckBox):
            on = str(value).lower() in ("true", "1", "yes", "on")
            # A switch is ticked when its flag is given: --no-shuffle ticked means shuffle false.
            field.setChecked(not on if parameter.action == "store_false" else on)
        elif isinstance(field, QSpinBox):
            try:
                field.setValue(int(value))
            except (TypeError, ValueError):
                field.setValue(int(parameter.default or 0))
        elif value is not None:
            field.setText(",".join(str(v) for v in value) if isinstance(value, (list, tuple)) else str(value))

    @staticmethod
    def _text(field: QWidget, parameter) -> str:
        if isinstance(field, QComboBox):
            return field.currentText()
        if isinstance(field, QCheckBox):
            on = field.isChecked() != (parameter.action == "store_false")
            return "true" if on else "false"
        if isinstance(field, QSpinBox):
            return str(field.value())
        return field.text().strip()

    def overrides(self) -> list[str]:
        """``name=value`` for each field that differs from the script's default (and each
        required one)."""
        chosen = []
        for parameter in self.parameters:
            text = self._text(self.fields[parameter.name], parameter)
            default = parameter.default
            shown_default = (",".join(str(v) for v in default) if isinstance(default, (list, tuple)) else
                             ("true" if default else "false") if parameter.type == "bool" else
                             "" if default is None else str(default))
            if text == "" and not parameter.required:
                continue
            if parameter.required or text != shown_default:
                chosen.append(f"{parameter.name}={text}")
        return chosen

    def values(self) -> tuple[list[str], int]:
        """(overrides, processes) as entered."""
        return self.overrides(), self.nproc.value()

    def accept(self) -> None:
        from workbench.training.script_args import script_arguments

        try:
            script_arguments(self.project_dir, self.settings, self.overrides())
        except TrainingError as exc:
            self.error.setText(str(exc).removeprefix("Not started: "))
            return
        super().accept()

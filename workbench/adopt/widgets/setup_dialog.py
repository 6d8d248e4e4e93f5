"""The Set Up Training dialog: choose the entry point, see the parameters found, write
workbench.toml. Reading a script's parameters can run its ``--help`` (seconds), so it runs on
the window's task runner; a late answer for a script no longer chosen is dropped."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QDialog, QDialogButtonBox, QHeaderView, QLabel, QListWidget,
                               QListWidgetItem, QTableWidget, QTableWidgetItem, QVBoxLayout)

PLAN_TASK = "adopt.plan"
SCRIPT_ROLE = Qt.ItemDataRole.UserRole
COLUMNS = ("Name", "Type", "Default", "Required", "Help")
SOURCES = {"code": "read from the script's code", "--help": "read from the script's --help",
           "config": "read from the Hydra config", "hparams file": "read from the .hparams file"}


class SetUpTrainingDialog(QDialog):
    """Writes the folder's workbench.toml for the chosen entry point."""

    sig_written = Signal(str)
    """workbench.toml was written (its path)."""

    def __init__(self, folder: Path, tasks, entry_points: list | None = None, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Set Up Training")
        self.setObjectName("adopt-setup-dialog")
        self.folder = Path(folder)
        self.tasks = tasks
        self.adoption = None
        self.entry_points: list = []
        layout = QVBoxLayout(self)
        self.intro = QLabel("Looking for training scripts…")
        self.intro.setWordWrap(True)
        layout.addWidget(self.intro)
        self.scripts = QListWidget()
        self.scripts.setObjectName("adopt-scripts")
        self.scripts.currentItemChanged.connect(lambda _now, _before: self._plan())
        layout.addWidget(self.scripts, 1)
        layout.addWidget(QLabel("Hyper-parameters found (a run changes them with --set NAME=VALUE or in the Train "
                                "dialog):"))
        self.parameters = QTableWidget(0, len(COLUMNS))
        self.parameters.setObjectName("adopt-parameters")
        self.parameters.setHorizontalHeaderLabels(COLUMNS)
        self.parameters.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.parameters.horizontalHeader().setSectionResizeMode(len(COLUMNS) - 1, QHeaderView.ResizeMode.Stretch)
        self.parameters.verticalHeader().hide()
        layout.addWidget(self.parameters, 2)
        self.status = QLabel("")
        self.status.setObjectName("adopt-status")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.write_button = self.buttons.addButton("Write workbench.toml", QDialogButtonBox.ButtonRole.AcceptRole)
        self.write_button.setEnabled(False)
        self.buttons.accepted.connect(self.write)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self.resize(760, 560)
        if entry_points is None:
            from workbench.adopt.entry_points import find_entry_points

            tasks.run("adopt.dialogEntryPoints", find_entry_points, self.folder, on_done=self.show_entry_points,
                      on_error=self._failed)
        else:
            self.show_entry_points(entry_points)

    def show_entry_points(self, entry_points: list) -> None:
        from workbench.adopt.entry_points import clear_choice

        self.entry_points = entry_points
        # The list makes its first item current as it fills: nothing is chosen for the user here.
        self.scripts.blockSignals(True)
        self.scripts.clear()
        for entry in entry_points:
            item = QListWidgetItem(entry.describe())
            item.setData(SCRIPT_ROLE, entry.script)
            self.scripts.addItem(item)
        self.scripts.setCurrentRow(-1)
        self.scripts.blockSignals(False)
        if not entry_points:
            self.intro.setText(f"No training script was found in {self.folder} (a train*.py, a __main__ with an "
                               "ArgumentParser, a [project.scripts] entry or a @hydra.main). Write one, or run "
                               "`workbench init --script PATH` in a terminal.")
            return
        chosen = clear_choice(entry_points)
        if chosen is None:
            self.intro.setText(f"{len(entry_points)} scripts could be the training entry point, none more likely "
                               "than the others: choose the one that trains.")
        else:
            self.intro.setText("The training entry point (choose another if this is not the script that trains):")
            self.scripts.setCurrentRow(entry_points.index(chosen))

    def chosen_script(self) -> str | None:
        item = self.scripts.currentItem()
        return item.data(SCRIPT_ROLE) if item is not None else None

    def _plan(self) -> None:
        from workbench.adopt.project_setup import plan_adoption

        script = self.chosen_script()
        self.adoption = None
        self.write_button.setEnabled(False)
        self.parameters.setRowCount(0)
        if script is None:
            return
        self.status.setText(f"Reading the hyper-parameters of {script}…")
        self.tasks.run(PLAN_TASK, plan_adoption, self.folder, script, on_done=self._planned, on_error=self._failed,
                       title=f"Reading {script}")

    def _planned(self, adoption) -> None:
        if adoption.entry.script != self.chosen_script():
            return
        self.adoption = adoption
        rows = adoption.reading.parameters
        self.parameters.setRowCount(len(rows))
        for row, parameter in enumerate(rows):
            default = "" if parameter.default is None else str(parameter.default)
            cells = (parameter.flag or parameter.name, parameter.type, default,
                     "yes" if parameter.required else "", parameter.help)
            for column, text in enumerate(cells):
                self.parameters.setItem(row, column, QTableWidgetItem(text))
        self.parameters.resizeColumnsToContents()
        how = SOURCES.get(adoption.reading.source, "found")
        said = [adoption.reading.problem or f"{len(rows)} hyper-parameters, {how} ({adoption.entry.parameters})."]
        if adoption.required_message():
            said.append(adoption.required_message() + ".")
        said.append("Only workbench.toml is written; nothing else in the folder changes.")
        self.status.setText(" ".join(said))
        self.write_button.setEnabled(True)

    def _failed(self, error: Exception) -> None:
        self.status.setText(str(error))
        self.write_button.setEnabled(False)

    def write(self) -> None:
        from workbench.adopt.errors import AdoptError
        from workbench.adopt.project_setup import write_project_file

        if self.adoption is None:
            return
        try:
            path = write_project_file(self.adoption)
        except AdoptError as exc:
            self._failed(exc)
            return
        self.sig_written.emit(str(path))
        self.accept()

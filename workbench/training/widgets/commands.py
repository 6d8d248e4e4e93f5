"""The training commands: the Run menu, the palette, F5 and the Explorer's context menu.

Every command takes keyword arguments, so a script or a test runs it without a dialog
(``commands.execute("training.trainLocally", overrides=["learning_rate=0.01"])``). Commands that
call the run service return its ``Operation`` (``finished``, ``result``, ``error``); the call
itself runs off the GUI thread.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from workbench.qt.tasks import Operation
from workbench.training.script_args import is_adopted
from workbench.training.widgets.hparams_check import HPARAMS_SUFFIX
from workbench.training.widgets.session import RunRow, TrainingSession

STOPPABLE = ("starting", "running")


def open_folder(path: str) -> None:
    """Show a folder in the system's file manager."""
    from PySide6.QtCore import QUrl
    from PySide6.QtGui import QDesktopServices

    QDesktopServices.openUrl(QUrl.fromLocalFile(path))


class TrainingCommands:
    """Declares the commands of one window and runs them through its session and panel."""

    def __init__(self, window, session: TrainingSession, panel, dock):
        self.window = window
        self.session = session
        self.panel = panel
        self.dock = dock
        self.reveal: Callable[[str], None] = open_folder
        """Shows a run folder (replaceable in tests)."""
        self.confirm: Callable[[str], bool] = self._confirm_terminate
        """Asks whether to terminate, given the question (replaceable in tests)."""
        self.last_overrides: list[str] = []
        self.last_nproc = 1
        """What "Train with Hyper-parameters…" was last given (or had typed when cancelled):
        its next opening starts from them, for as long as the window is open."""
        self.last_resume_overrides: list[str] = []
        """Likewise for "Resume as New Run…"."""
        self.last_argument_values: dict[str, str] = {}
        """Likewise for an adopted script's fields, by parameter name."""
        self.dialog = None
        """The "Train with Hyper-parameters" dialog while it is open."""

    # --- registration -------------------------------------------------------------------------

    def register(self) -> list[str]:
        """Add every command to the window's registry; returns their ids."""
        add = self.window.commands.add
        target_state = lambda *states: lambda: self._state_of_target() in states  # noqa: E731
        entries = [
            ("training.trainLocally", "Train Locally", self.train_locally,
             dict(shortcut="F5")),
            ("training.trainWithHparams", "Train with Hyper-parameters…", self.train_with_hparams,
             dict(shortcut="Ctrl+F5")),
            ("training.stopRun", "Stop Run", self.stop_run,
             dict(enabled=target_state(*STOPPABLE))),
            ("training.resumeRun", "Resume Run", self.resume_run,
             dict(enabled=lambda: self._target_can("can_resume"))),
            ("training.resumeAsNewRun", "Resume as New Run…", self.resume_as_new_run,
             dict(enabled=lambda: self._target_can("can_resume_as_new"))),
            ("training.terminateRun", "Terminate Run", self.terminate_run,
             dict(enabled=target_state("starting", "running", "stopping"))),
            ("training.compareRuns", "Compare Runs", self.compare_runs,
             dict(enabled=lambda: len(self.panel.selected_runs()) >= 2)),
            ("training.showRuns", "Show Runs", self.show_runs, {}),
            ("training.openRunFolder", "Open Run Folder", self.open_run_folder,
             dict(enabled=lambda: self._target() is not None)),
        ]
        ids = []
        for command_id, title, run, options in entries:
            add(command_id, title, run, category="Training", menu="Run", **options)
            ids.append(command_id)
        add("training.trainWithFile", "Train with This File", self.train_with_file, category="Training",
            context=("explorer",), applies_to=lambda path: Path(path).suffix.lower() == HPARAMS_SUFFIX,
            in_palette=False)
        ids.append("training.trainWithFile")
        return ids

    # --- which run ----------------------------------------------------------------------------

    def _target(self, run_id: str | None = None) -> RunRow | None:
        """The run a command acts on: ``run_id``, else the one selected run, else (with nothing
        selected) the newest active run."""
        if run_id is not None:
            return self.session.row(run_id)
        selected = self.panel.selected_rows()
        if len(selected) == 1:
            return selected[0]
        if not selected:
            return next((row for row in self.session.rows if row.info.is_active), None)
        return None

    def _state_of_target(self) -> str | None:
        target = self._target()
        return target.info.state if target is not None else None

    def _target_can(self, what: str) -> bool:
        target = self._target()
        return target is not None and bool(getattr(target, what))

    def _run_id(self, run_id: str | None) -> str | None:
        if run_id is not None:
            return run_id
        target = self._target()
        if target is None:
            self.window.show_error("Select a run in the Runs panel first.")
            return None
        return target.id

    # --- starting -----------------------------------------------------------------------------

    def current_hparams_file(self) -> str | None:
        """The current editor's file when it is a hyper-parameter file."""
        current = getattr(self.window, "current_editor", lambda: None)()
        if current is not None and current.path.suffix.lower() == HPARAMS_SUFFIX:
            return str(current.path)
        return None

    def train_locally(self, hparams_file: str | None = None, overrides: list[str] | tuple = (),
                      nproc: int = 1, versions: dict | None = None) -> Operation:
        """Start a run with ``hparams_file`` (else the current editor's .hparams file, else the
        project's default), after saving the open files so the run uses what is on screen."""
        if hparams_file is None and not is_adopted(self.window.project.settings.get("training", {}) or {}):
            hparams_file = self.current_hparams_file()
        if "file.saveAll" in self.window.commands:
            self.window.commands.execute("file.saveAll")
        self.show_runs()
        return self.session.start(str(hparams_file) if hparams_file else None, tuple(overrides), int(nproc),
                                  versions=versions)

    def train_with_file(self, path: str | Path) -> Operation:
        """The Explorer's "Train with This File" on a .hparams file."""
        return self.train_locally(str(path))

    def train_with_hparams(self, hparams_file: str | None = None, overrides: list[str] | None = None,
                           nproc: int | None = None, dataset_version: str | None = None) -> Operation | None:
        """Ask for the file, overrides and processes in a small dialog (or take them as
        arguments), then start the run. ``dataset_version`` comes chosen in the dialog (the
        Registry's Train on This Version)."""
        if hparams_file is not None or overrides is not None or nproc is not None:
            versions = {"dataset_version": dataset_version} if dataset_version else None
            return self.train_locally(hparams_file, overrides or (), nproc or 1, versions)
        self.chosen_dataset_version = dataset_version
        settings = self.window.project.settings.get("training", {})
        if is_adopted(settings if isinstance(settings, dict) else {}):
            self._ask_arguments(dict(settings))
            return None
        current = self.current_hparams_file()
        self.session.find_hparams_files(lambda files, schema: self._ask(files, schema, current))
        return None

    def _ask_arguments(self, settings: dict) -> None:
        """The adopted script's parameters are read off the GUI thread (a script whose code
        does not say its flags is asked --help), then shown as fields."""
        from workbench.adopt import read_parameters

        root = Path(self.session.project_dir)

        def show(reading) -> None:
            from workbench.training.widgets.arguments_dialog import ArgumentsDialog

            dialog = ArgumentsDialog(root, settings, reading.parameters, self.last_argument_values,
                                     self.last_nproc, self.window, problem=reading.problem)
            self.dialog = dialog

            def accepted() -> None:
                overrides, nproc = dialog.values()
                self.last_argument_values = dict(o.split("=", 1) for o in overrides)
                self.last_nproc = nproc
                self.train_locally(None, overrides, nproc)

            dialog.accepted.connect(accepted)
            dialog.finished.connect(lambda _result: setattr(self, "dialog", None))
            dialog.open()

        self.window.tasks.run("training.readParameters", lambda: read_parameters(root, settings), on_done=show,
                              on_error=lambda exc: self.window.show_error(str(exc)))

    def _ask(self, files: list[str], schema, current: str | None) -> None:
        from workbench.training.widgets.train_dialog import TrainDialog, read_version_choices

        root = Path(self.session.project_dir)
        if current is not None:
            try:
                current = Path(current).resolve().relative_to(root.resolve()).as_posix()
            except ValueError:
                pass
        elif files:
            default = str(self.window.project.settings.get("training", {}).get("hparams", "") or "")
            current = default if default in files else files[0]
        choices = read_version_choices(root, self.window.project.settings)
        dialog = TrainDialog(root, files, current, self.last_overrides, self.last_nproc, schema, self.window,
                             versions=choices)
        dialog.choose_dataset_version(getattr(self, "chosen_dataset_version", None))
        self.chosen_dataset_version = None
        self.dialog = dialog

        def accepted() -> None:
            hparams_file, overrides, nproc = dialog.values()
            self.last_overrides, self.last_nproc = overrides, nproc
            if hparams_file is not None and not Path(hparams_file).is_absolute():
                hparams_file = str(root / hparams_file)
            self.train_locally(hparams_file, overrides, nproc, dialog.version_values())

        def rejected() -> None:
            # What was typed is kept for next time, as typed: closing the dialog to look
            # something up must not lose it.
            self.last_overrides = dialog.typed_overrides()
            self.last_nproc = dialog.nproc.value()

        dialog.accepted.connect(accepted)
        dialog.rejected.connect(rejected)
        dialog.finished.connect(lambda _result: setattr(self, "dialog", None))
        dialog.open()

    # --- controlling --------------------------------------------------------------------------

    def stop_run(self, run_id: str | None = None) -> Operation | None:
        """Ask the run to checkpoint and exit."""
        run_id = self._run_id(run_id)
        return self.session.stop(run_id) if run_id else None

    def terminate_run(self, run_id: str | None = None, confirmed: bool = False) -> Operation | None:
        """Kill the run's processes at once (no checkpoint), once the user agrees (or
        ``confirmed``)."""
        run_id = self._run_id(run_id)
        if not run_id:
            return None
        if not confirmed and not self.confirm(self.terminate_question(run_id)):
            return None
        return self.session.terminate(run_id)

    def terminate_question(self, run_id: str) -> str:
        """What Terminate asks: what is lost, up to the run's last checkpoint."""
        row = self.session.row(run_id)
        step = row.checkpoint_step if row is not None else None
        if row is not None and row.info.is_cluster:
            # Its checkpoints are written there and come back here only now and then, so the
            # last one here may be long behind the job's.
            return (f"Terminate run {run_id}? Its job is ended at once; progress since its last "
                    "checkpoint on the cluster is lost.")
        if step is None:
            return (f"Terminate run {run_id}? It is killed at once; it has no checkpoint yet, so "
                    "everything it trained is lost.")
        return (f"Terminate run {run_id}? It is killed at once; progress since its last checkpoint "
                f"(step {step}) is lost.")

    def _confirm_terminate(self, question: str) -> bool:
        from PySide6.QtWidgets import QMessageBox

        box = QMessageBox(QMessageBox.Icon.Warning, "Terminate Run", question, QMessageBox.StandardButton.NoButton,
                          self.window)
        box.setObjectName("terminate-question")
        box.setInformativeText("To keep its progress, use Stop instead: the run checkpoints, then exits.")
        terminate = box.addButton("Terminate", QMessageBox.ButtonRole.DestructiveRole)
        cancel = box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(cancel)
        box.setEscapeButton(cancel)
        box.exec()
        return box.clickedButton() is terminate

    def resume_run(self, run_id: str | None = None) -> Operation | None:
        """Continue the run from its last checkpoint, in the same run."""
        run_id = self._run_id(run_id)
        return self.session.resume(run_id) if run_id else None

    def resume_as_new_run(self, run_id: str | None = None, overrides: list[str] | None = None) -> Operation | None:
        """Start a new run from the run's last checkpoint, with ``overrides`` ("key=value", e.g.
        ``num_epochs=20`` to train further); without them, ask for them in the dialog of "Train
        with Hyper-parameters…"."""
        run_id = self._run_id(run_id)
        if not run_id:
            return None
        if overrides is not None:
            return self.session.resume(run_id, new_run=True, overrides=tuple(overrides))
        self.session.read_resume_point(run_id, lambda schema, step: self._ask_resume(run_id, schema, step))
        return None

    def _ask_resume(self, run_id: str, schema, step: int | None) -> None:
        from workbench.training.widgets.train_dialog import TrainDialog

        row = self.session.row(run_id)
        dialog = TrainDialog(Path(self.session.project_dir), [], None, self.last_resume_overrides, 1, schema,
                             self.window, resume_from=(run_id, step, row.info.hparams if row is not None else {}))
        self.dialog = dialog

        def accepted() -> None:
            _file, overrides, _nproc = dialog.values()
            self.last_resume_overrides = overrides
            self.session.resume(run_id, new_run=True, overrides=tuple(overrides))

        dialog.accepted.connect(accepted)
        dialog.rejected.connect(lambda: setattr(self, "last_resume_overrides", dialog.typed_overrides()))
        dialog.finished.connect(lambda _result: setattr(self, "dialog", None))
        dialog.open()

    def compare_runs(self, run_ids: list[str] | None = None) -> list[str]:
        """Overlay the curves of the selected runs (or ``run_ids``) and list what differs."""
        if run_ids is not None:
            self.panel.select_runs(list(run_ids))
        elif len(self.panel.selected_runs()) < 2:
            self.window.show_error("Select two or more runs in the Runs panel (Ctrl+click) to compare them.")
        self.show_runs()
        return self.panel.selected_runs()

    def show_runs(self) -> None:
        """Show the Runs panel in front."""
        self.dock.show()
        self.dock.raise_()

    def open_run_folder(self, run_id: str | None = None) -> str | None:
        """Show the run's folder in the file manager; returns its path."""
        target = self._target(run_id)
        if target is None:
            self.window.show_error("Select a run in the Runs panel first.")
            return None
        self.reveal(target.info.run_dir)
        return target.info.run_dir


def install_commands(window, session: TrainingSession, panel, dock) -> TrainingCommands:
    commands = TrainingCommands(window, session, panel, dock)
    commands.register()
    return commands

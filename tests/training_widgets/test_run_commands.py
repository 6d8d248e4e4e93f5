"""The run commands that ask first: Terminate asks before killing (Stop does not), "Train with
Hyper-parameters…" remembers what it was given, and "Resume as New Run…" takes overrides in the
same dialog; Resume follows the run's can_resume, Resume as New its checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import QEvent, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from tests.training_widgets.conftest import finish, run_state, wait_for
from tests.training_widgets.test_runs_panel import SLOW, enabled
from workbench.training.widgets import commands_of, panel_of, session_of


def relist(qtbot, window) -> None:
    """The user comes back to the window: the runs are listed again."""
    session = session_of(window)
    before = session.rows
    QApplication.sendEvent(window, QEvent(QEvent.Type.WindowActivate))
    wait_for(qtbot, lambda: session.rows is not before)


def write_checkpoint(run_dir: str, step: int) -> None:
    checkpoints = Path(run_dir) / "checkpoints"
    checkpoints.mkdir(exist_ok=True)
    name = f"step-{step:08d}.pt"
    (checkpoints / name).write_text(json.dumps({"step": step}))
    (checkpoints / "latest.json").write_text(json.dumps({"file": name, "step": step, "epoch": step // 10}))


def answer_question(qtbot, button_text: str, seen: list) -> None:
    """Once the question box is up, note its text and press ``button_text``."""
    def press():
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(20, press)
            return
        seen.append((box.windowTitle(), box.text(), box.informativeText(),
                     sorted(b.text() for b in box.buttons()), box.defaultButton().text()))
        next(b for b in box.buttons() if b.text() == button_text).click()

    QTimer.singleShot(20, press)


def test_terminate_asks_first_naming_the_last_checkpoint_and_stop_does_not(qtbot, open_window, toy_project):
    window = open_window(toy_project)
    panel = panel_of(window)
    info = finish(qtbot, window.commands.execute("training.trainLocally", overrides=SLOW))
    wait_for(qtbot, lambda: panel.selected_runs() == [info.id] and run_state(window, info.id) == "running")
    write_checkpoint(info.run_dir, 7)  # as a trainer that checkpoints every few steps would
    relist(qtbot, window)
    wait_for(qtbot, lambda: session_of(window).row(info.id).checkpoint_step == 7)

    seen = []
    answer_question(qtbot, "Cancel", seen)
    panel.buttons["training.terminateRun"].click()
    assert seen == [("Terminate Run",
                     f"Terminate run {info.id}? It is killed at once; progress since its last checkpoint "
                     "(step 7) is lost.",
                     "To keep its progress, use Stop instead: the run checkpoints, then exits.",
                     ["Cancel", "Terminate"], "Cancel")]
    relist(qtbot, window)
    assert run_state(window, info.id) == "running"  # cancelled: it goes on

    commands = commands_of(window)
    ask_the_user = commands.confirm
    asked = []
    commands.confirm = lambda question: asked.append(question) or False
    assert window.commands.execute("training.terminateRun") is None  # the palette asks too
    assert len(asked) == 1 and info.id in asked[0]
    assert run_state(window, info.id) == "running"

    commands.confirm = ask_the_user
    seen = []
    answer_question(qtbot, "Terminate", seen)
    operation = window.commands.execute("training.terminateRun")
    assert len(seen) == 1
    finish(qtbot, operation)
    wait_for(qtbot, lambda: run_state(window, info.id) == "terminated")


def test_stop_needs_no_confirmation(qtbot, open_window, toy_project):
    window = open_window(toy_project)
    panel = panel_of(window)
    commands = commands_of(window)
    asked = []
    commands.confirm = lambda question: asked.append(question) or False
    info = finish(qtbot, window.commands.execute("training.trainLocally", overrides=SLOW))
    wait_for(qtbot, lambda: panel.selected_runs() == [info.id] and run_state(window, info.id) == "running")
    wait_for(qtbot, lambda: "training.stopRun" in enabled(panel))
    panel.buttons["training.stopRun"].click()
    wait_for(qtbot, lambda: run_state(window, info.id) == "stopped")
    assert asked == []
    assert "no checkpoint yet" in commands.terminate_question("unknown-run")


def test_terminate_of_a_cluster_run_names_no_checkpoint_step_from_here(open_window, toy_project):
    """A cluster run's checkpoints come back here only now and then: the last one here may be
    far behind the job's, so the question does not name it."""
    from workbench.training.run_info import RunInfo
    from workbench.training.widgets.session import RunRow

    window = open_window(toy_project)
    info = RunInfo(id="20260101-120000-000", state="running", run_dir=str(toy_project / "runs" / "r"),
                   project_dir=str(toy_project), backend="slurm", cluster="lab", job_id="7")
    session_of(window).rows.append(RunRow(info, can_resume=False, checkpoint_step=505))
    question = commands_of(window).terminate_question(info.id)
    assert "step 505" not in question and "last checkpoint on the cluster is lost" in question


def test_train_with_hyper_parameters_starts_from_what_it_was_last_given(qtbot, open_window, toy_project, tmp_path):
    window = open_window(toy_project)
    commands = commands_of(window)

    def open_dialog():
        window.menus.actions["training.trainWithHparams"].trigger()
        wait_for(qtbot, lambda: commands.dialog is not None)
        return commands.dialog

    dialog = open_dialog()
    assert dialog.overrides.toPlainText() == "" and dialog.nproc.value() == 1
    dialog.overrides.setPlainText("num_epochs=1\nlearning_rate=0.05")
    dialog.nproc.setValue(2)
    dialog.reject()  # closed to look something up: what was typed is kept
    wait_for(qtbot, lambda: commands.dialog is None)
    dialog = open_dialog()
    assert dialog.overrides.toPlainText() == "num_epochs=1\nlearning_rate=0.05"
    assert dialog.nproc.value() == 2

    dialog.overrides.setPlainText("num_epochs=1 step_seconds=0")
    dialog.nproc.setValue(1)
    dialog.accept()
    wait_for(qtbot, lambda: session_of(window).rows)
    run = session_of(window).rows[0]
    wait_for(qtbot, lambda: run_state(window, run.id) == "completed")
    dialog = open_dialog()
    assert dialog.overrides.toPlainText() == "num_epochs=1\nstep_seconds=0"
    assert dialog.nproc.value() == 1
    dialog.reject()

    other_root = tmp_path / "other"
    other_root.mkdir()
    (other_root / "workbench.toml").write_text((toy_project / "workbench.toml").read_text())
    (other_root / "train.py").write_text((toy_project / "train.py").read_text())
    (other_root / "toy.hparams").write_text("num_epochs=1\n")
    other = open_window(other_root)
    other_commands = commands_of(other)
    other.menus.actions["training.trainWithHparams"].trigger()
    wait_for(qtbot, lambda: other_commands.dialog is not None)
    assert other_commands.dialog.overrides.toPlainText() == ""  # another project starts afresh
    other_commands.dialog.reject()


def test_a_completed_run_resumes_only_as_a_new_run_with_the_overrides_given(qtbot, open_window, toy_project):
    window = open_window(toy_project)
    panel = panel_of(window)
    commands = commands_of(window)
    info = finish(qtbot, window.commands.execute("training.trainLocally", overrides=["num_epochs=1", "step_seconds=0"]))
    wait_for(qtbot, lambda: run_state(window, info.id) == "completed")
    panel.select_runs([info.id])
    assert not enabled(panel) & {"training.resumeRun", "training.resumeAsNewRun"}  # no checkpoint
    write_checkpoint(info.run_dir, 10)  # a trainer that checkpoints at each epoch's end
    relist(qtbot, window)
    wait_for(qtbot, lambda: "training.resumeAsNewRun" in enabled(panel))
    assert "training.resumeRun" not in enabled(panel)  # its end has run: train further as a new run
    assert window.menus.actions["training.resumeAsNewRun"].text() == "Resume as New Run…"

    panel.buttons["training.resumeAsNewRun"].click()
    wait_for(qtbot, lambda: commands.dialog is not None)
    dialog = commands.dialog
    assert dialog.resume_from[:2] == (info.id, 10)
    assert f"run {info.id} at step 10" in dialog.summary.text()
    assert dialog.overrides.placeholderText().startswith("num_epochs=2")
    assert dialog.file.isHidden() and dialog.nproc.isHidden()
    dialog.overrides.setPlainText("num_epochs=nine")
    dialog.accept()
    assert dialog.isVisible() and "num_epochs" in dialog.error.text()  # checked like Ctrl+F5's
    dialog.overrides.setPlainText("num_epochs=3")
    dialog.accept()
    wait_for(qtbot, lambda: panel.selected_runs() and panel.selected_runs() != [info.id])
    [copy] = panel.selected_runs()
    row = session_of(window).row(copy)
    assert row.info.resumed_from == f"{info.id}@10"
    assert row.info.hparams["num_epochs"] == 3
    wait_for(qtbot, lambda: run_state(window, copy) == "completed")
    wait_for(qtbot, lambda: session_of(window).row(copy).info.final_metrics.get("step") == 30)

    panel.select_runs([info.id])
    operation = window.commands.execute("training.resumeAsNewRun", run_id=info.id, overrides=["num_epochs=2"])
    result = finish(qtbot, operation)  # scripted: no dialog
    assert result.hparams["num_epochs"] == 2 and commands.dialog is None

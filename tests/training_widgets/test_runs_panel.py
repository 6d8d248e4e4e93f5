"""The Runs panel lists runs, its buttons follow the selected run's state, runs started
elsewhere appear, and runs outlive the window."""

from __future__ import annotations

from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication

from tests.training_widgets.conftest import finish, run_state, wait_for
from workbench.training.widgets import commands_of, panel_of, session_of
from workbench.training.widgets.runs_panel import NO_RUNS_TEXT
from workbench.training.widgets.status import ActiveRunsButton

SLOW = ["num_epochs=100", "step_seconds=0.05"]  # 1000 steps, 50 s: stopped long before


def enabled(panel) -> set[str]:
    return {command_id for command_id, button in panel.buttons.items() if button.isEnabled()}


def test_an_empty_project_says_how_to_start_a_run(qtbot, open_window, toy_project):
    window = open_window(toy_project)
    panel = panel_of(window)
    assert panel.list_stack.currentWidget() is panel.no_runs
    assert panel.no_runs.text() == NO_RUNS_TEXT
    assert enabled(panel) == {"training.trainLocally"}
    run_menu = [a.text() for a in window.menus._menus["Run"].actions()]
    assert run_menu[:2] == ["Train Locally", "Train with Hyper-parameters…"]
    assert window.menus.actions["training.trainLocally"].shortcut().toString() == "F5"
    assert window.menus.actions["training.trainWithHparams"].shortcut().toString() == "Ctrl+F5"


def test_stop_resume_and_terminate_buttons_follow_the_selected_runs_state(qtbot, open_window, toy_project):
    window = open_window(toy_project)
    panel = panel_of(window)
    info = finish(qtbot, window.commands.execute("training.trainLocally", overrides=SLOW))
    wait_for(qtbot, lambda: panel.selected_runs() == [info.id] and run_state(window, info.id) == "running")
    assert panel.list_stack.currentWidget() is panel.table
    assert enabled(panel) >= {"training.stopRun", "training.terminateRun", "training.openRunFolder"}
    assert not enabled(panel) & {"training.resumeRun", "training.resumeAsNewRun", "training.compareRuns"}
    status = window.findChild(ActiveRunsButton, "training-active-runs")
    assert status is not None and status.isVisible() and info.id in status.text()

    wait_for(qtbot, lambda: panel.details.curves.plotted(info.id, "loss") >= 3)
    panel.buttons["training.stopRun"].click()
    wait_for(qtbot, lambda: run_state(window, info.id) == "stopped")
    wait_for(qtbot, lambda: {"training.resumeRun", "training.resumeAsNewRun"} <= enabled(panel))
    assert not enabled(panel) & {"training.stopRun", "training.terminateRun"}
    wait_for(qtbot, lambda: "stopped at step" in panel.details.log.text.toPlainText())
    stopped_at = session_of(window).row(info.id).info.final_metrics["step"]
    opened = []
    commands_of(window).reveal = opened.append
    panel.buttons["training.openRunFolder"].click()
    assert opened == [session_of(window).row(info.id).info.run_dir]

    commands = commands_of(window)
    asked = []
    commands.confirm = lambda question: asked.append(question) or True
    panel.buttons["training.resumeAsNewRun"].click()  # asks for overrides first, as Ctrl+F5 does
    wait_for(qtbot, lambda: commands.dialog is not None)
    assert commands.dialog.resume_from[:2] == (info.id, stopped_at)
    commands.dialog.accept()
    wait_for(qtbot, lambda: panel.selected_runs() and panel.selected_runs() != [info.id])
    [copy] = panel.selected_runs()
    assert session_of(window).row(copy).info.resumed_from == f"{info.id}@{stopped_at}"
    wait_for(qtbot, lambda: "resumed at step" in panel.details.log.text.toPlainText())
    window.commands.execute("training.terminateRun")
    wait_for(qtbot, lambda: run_state(window, copy) == "terminated")
    assert len(asked) == 1 and asked[0].startswith(f"Terminate run {copy}?")

    panel.select_runs([info.id])
    panel.buttons["training.resumeRun"].click()
    wait_for(qtbot, lambda: run_state(window, info.id) == "running")
    wait_for(qtbot, lambda: "training.terminateRun" in enabled(panel))
    wait_for(qtbot, lambda: max(panel.details.curves.points(info.id, "loss")[0], default=0) > stopped_at)
    panel.buttons["training.terminateRun"].click()
    wait_for(qtbot, lambda: run_state(window, info.id) == "terminated")
    wait_for(qtbot, lambda: not enabled(panel) & {"training.stopRun", "training.terminateRun"})
    assert not status.isVisible()


def test_a_run_started_from_the_command_line_appears_in_the_panel(qtbot, open_window, toy_project):
    from workbench.training import RunService

    window = open_window(toy_project)
    panel = panel_of(window)
    info = RunService(toy_project).start(overrides=["num_epochs=1"])
    QApplication.sendEvent(window, QEvent(QEvent.Type.WindowActivate))  # the user comes back
    wait_for(qtbot, lambda: session_of(window).row(info.id) is not None)
    assert panel.table.topLevelItem(0).text(0) == info.id  # newest first


def test_a_run_outlives_its_window_and_the_next_window_follows_its_curves(qtbot, open_window, toy_project):
    first = open_window(toy_project)
    info = finish(qtbot, first.commands.execute("training.trainLocally", overrides=SLOW))
    wait_for(qtbot, lambda: panel_of(first).details.curves.plotted(info.id, "loss") >= 2)
    first.close()

    second = open_window(toy_project)
    panel = panel_of(second)
    assert run_state(second, info.id) == "running"
    wait_for(qtbot, lambda: panel.selected_runs() == [info.id])  # shown at once: it is still going
    wait_for(qtbot, lambda: panel.details.curves.plotted(info.id, "loss") >= 5)
    before = panel.details.curves.plotted(info.id, "loss")
    wait_for(qtbot, lambda: panel.details.curves.plotted(info.id, "loss") > before + 3)


def test_compare_overlays_the_runs_and_lists_the_hyper_parameter_that_differs(qtbot, open_window, toy_project):
    window = open_window(toy_project)
    panel = panel_of(window)
    slow = finish(qtbot, window.commands.execute("training.trainLocally", overrides=["learning_rate=0.01"]))
    fast = finish(qtbot, window.commands.execute("training.trainLocally", overrides=["learning_rate=0.05"]))
    for run in (slow, fast):
        wait_for(qtbot, lambda run=run: run_state(window, run.id) == "completed")
    panel.select_runs([slow.id, fast.id])
    assert "training.compareRuns" in enabled(panel)
    assert window.commands.execute("training.compareRuns") == [fast.id, slow.id]  # newest first
    assert panel.detail_stack.currentWidget() is panel.compare
    compare = panel.compare
    assert compare.cell_text("learning_rate", slow.id) == "0.01"
    assert compare.cell_text("learning_rate", fast.id) == "0.05"
    assert compare.cell_text("num_epochs", slow.id) is None  # the same in both: not listed
    assert compare.cell_text("val_acc", fast.id) not in (None, "", "—")
    compare.setCurrentWidget(compare.curves)
    wait_for(qtbot, lambda: compare.curves.plotted(slow.id, "loss") == 30 and compare.curves.plotted(fast.id, "loss") == 30)
    legend = compare.curves.runs_legend
    assert legend.isVisible() and fast.id in legend.text() and slow.id in legend.text()
    assert compare.curves.legend_labels("loss") == []  # one legend for the runs, not one per plot

    panel.select_runs([slow.id])
    assert panel.detail_stack.currentWidget() is panel.details
    assert "training.compareRuns" not in enabled(panel)


def test_train_with_hyper_parameters_asks_for_overrides_and_checks_them(qtbot, open_window, toy_project):
    window = open_window(toy_project)
    commands = commands_of(window)
    assert window.commands.execute("training.trainWithHparams") is None
    wait_for(qtbot, lambda: commands.dialog is not None)
    dialog = commands.dialog
    assert dialog.file.currentText() == "toy.hparams"
    dialog.overrides.setPlainText("learnin_rate=0.5")
    dialog.accept()
    assert dialog.isVisible() and "learning_rate" in dialog.error.text()  # the suggestion
    dialog.overrides.setPlainText("learning_rate=0.05 num_epochs=1")
    dialog.accept()
    assert not dialog.isVisible()
    session = session_of(window)
    wait_for(qtbot, lambda: session.rows and session.rows[0].info.overrides)
    info = session.rows[0].info
    assert info.overrides == ["learning_rate=0.05", "num_epochs=1"]
    assert info.hparams_file.endswith("toy.hparams")


def test_the_explorer_offers_train_with_this_file_on_hparams_files_only(qtbot, open_window, toy_project):
    window = open_window(toy_project)
    other = toy_project / "fast.hparams"
    other.write_text("num_epochs=1\n")
    ids = [c.id for c in window.commands.for_context("explorer", other)]
    assert "training.trainWithFile" in ids
    assert "training.trainWithFile" not in [c.id for c in window.commands.for_context("explorer", toy_project / "train.py")]
    info = finish(qtbot, window.commands.execute("training.trainWithFile", path=str(other)))
    assert info.hparams_file.endswith("fast.hparams")


def final_metric(details, name: str) -> str | None:
    """The Details tab's "Final metrics" row of ``name``, as shown."""
    for index in range(details.info.topLevelItemCount()):
        group = details.info.topLevelItem(index)
        if group.text(0) == "Final metrics":
            rows = {group.child(i).text(0): group.child(i).text(1) for i in range(group.childCount())}
            return rows.get(name)
    return None


def test_the_details_metrics_keep_up_with_an_active_run_as_the_table_does(qtbot, open_window, toy_project,
                                                                          monkeypatch):
    window = open_window(toy_project)
    panel = panel_of(window)
    session = session_of(window)
    info = finish(qtbot, window.commands.execute("training.trainLocally", overrides=SLOW))
    wait_for(qtbot, lambda: panel.details.run_id == info.id and final_metric(panel.details, "step") is not None)
    # From now on the runs are not listed again (as when a listing is slow): what moves the
    # table must move the Details tab too.
    monkeypatch.setattr(session, "refresh", lambda: None)
    listed_step = int(final_metric(panel.details, "step"))
    curves = panel.details.curves
    wait_for(qtbot, lambda: max(curves.points(info.id, "loss")[0], default=0) >= listed_step + 15)
    last_step = int(max(curves.points(info.id, "loss")[0]))
    assert final_metric(panel.details, "step") == str(last_step)
    assert final_metric(panel.details, "loss") == panel.table.topLevelItem(0).text(5)
    assert final_metric(panel.details, "val_loss") is not None

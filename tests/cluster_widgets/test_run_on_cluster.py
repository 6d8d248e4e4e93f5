"""Run ▸ Run on Cluster…: what will be synced, the start with its stages, and the run in the Runs
panel with its cluster columns, its model notice and Pull Products, through the real sshd."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from PySide6.QtWidgets import QFrame

from tests.cluster_widgets.conftest import TIMEOUT_MS, profile_values, screenshot, trust_host
from workbench.cluster.last_choice import read_choice
from workbench.cluster.profiles import ClusterProfile, save_profile
from workbench.cluster.widgets import commands_of
from workbench.training.widgets import panel_of, session_of


def open_run_dialog(qtbot, window):
    dialog = commands_of(window).run_on_cluster()
    with qtbot.waitSignal(dialog.sig_plan_shown, timeout=60_000):
        pass
    return dialog


def column_texts(table, run_id: str) -> dict[str, str]:
    """``{column title: text}`` of the run's row, for the columns on screen, in their order there."""
    item = next(table.topLevelItem(i) for i in range(table.topLevelItemCount())
                if table.topLevelItem(i).text(0) == run_id)
    titles, header = table.headerItem(), table.header()
    columns = [header.logicalIndex(visual) for visual in range(table.columnCount())]
    return {titles.text(c): item.text(c) for c in columns if not table.isColumnHidden(c)}


def test_the_run_dialog_lists_what_will_be_synced(qtbot, open_window, project, sshd_server, tmp_path):
    trust_host(sshd_server)
    save_profile(ClusterProfile(**profile_values(sshd_server, tmp_path / "remote")))
    window = open_window(project)

    dialog = open_run_dialog(qtbot, window)

    assert dialog.profile.currentText() == "box"
    shown = dialog.plan.groups()
    assert shown["send"] == ["data/labels.txt", "data/train.csv"]
    assert "data/scratch.tmp" in shown["excluded"]
    assert shown["skipped"] == ["data/elsewhere"]
    assert dialog.plan_status.text() == "2 to send (2.0 KB), 0 unchanged, 1 skipped, 1 excluded"
    assert dialog.plan_target.full_text().startswith(f"Into {tmp_path / 'remote' / 'data'}/")
    assert dialog.hparams.currentText() == "hparams/tiny.hparams"  # the project's default file
    assert not dialog.nodes.isEnabled() and not dialog.partition.isEnabled()  # a plain SSH host
    assert dialog.start_button.isEnabled()
    screenshot(dialog, "run-on-cluster-dialog")
    dialog.reject()


def test_a_host_not_trusted_yet_is_trusted_from_the_run_dialog(qtbot, open_window, project, sshd_server, tmp_path):
    save_profile(ClusterProfile(**profile_values(sshd_server, tmp_path / "remote")))
    window = open_window(project)
    dialog = open_run_dialog(qtbot, window)
    assert "is not known yet" in dialog.plan_status.text() and dialog.trust_button.isVisibleTo(dialog)
    assert dialog.plan.groups() == {}
    asked = []
    dialog.ask_trust = lambda parent, error: asked.append(error) or True

    with qtbot.waitSignal(dialog.sig_plan_shown, timeout=60_000):
        dialog.trust_button.click()

    assert len(asked) == 1 and dialog.plan.groups()["send"] == ["data/labels.txt", "data/train.csv"]
    dialog.reject()


def test_a_run_started_from_the_dialog_shows_in_the_runs_panel_and_brings_its_model_back(
        qtbot, open_window, project, sshd_server, tmp_path):
    trust_host(sshd_server)
    save_profile(ClusterProfile(**profile_values(sshd_server, tmp_path / "remote")))
    window = open_window(project)
    produced = []
    window.on_event("model.produced", produced.append)
    dialog = open_run_dialog(qtbot, window)
    dialog.overrides.setPlainText("stop_at_step=30")
    dialog.cpus.setValue(2)
    stages_seen = []
    dialog.session._sig_report.connect(lambda _key, report: stages_seen.append(getattr(report, "stage", "")))

    started = []
    dialog.sig_run_started.connect(started.append)
    dialog.start()
    qtbot.waitUntil(lambda: bool(started or dialog.error.text()), timeout=120_000)
    assert started, dialog.error.text()
    info = started[0]

    assert info.cluster == "box" and info.job_id and info.backend == "ssh"
    assert [s for s in dict.fromkeys(stages_seen) if s] == ["connect", "code", "trainkit", "data", "submit", "follow"]
    assert {name: label.property("stage_state") for name, label in dialog.stage_labels.items()} == {
        "connect": "done", "code": "done", "trainkit": "done", "data": "done", "submit": "done"}
    assert read_choice(project).profile == "box" and read_choice(project).resources["box"]["cpus"] == 2

    panel = panel_of(window)
    qtbot.waitUntil(lambda: session_of(window).row(info.id) is not None, timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: panel.selected_runs() == [info.id], timeout=TIMEOUT_MS)
    # Listed as it was being prepared (no job yet), then with its job.
    qtbot.waitUntil(lambda: "Job" in column_texts(panel.table, info.id), timeout=TIMEOUT_MS)
    cells = column_texts(panel.table, info.id)
    assert cells["Cluster"] == "box" and cells["Job"] == info.job_id
    assert cells["Scheduler"] in ("pending", "running", "exited", "completed")
    assert list(cells)[:5] == ["Run", "State", "Cluster", "Job", "Scheduler"]
    details = panel.details.info
    section = next(details.topLevelItem(i) for i in range(details.topLevelItemCount())
                   if details.topLevelItem(i).text(0) == "Cluster")
    rows = {section.child(i).text(0): section.child(i).text(1) for i in range(section.childCount())}
    assert rows["Profile"] == "box" and rows["Job"] == info.job_id and rows["Resources"] == "1 node, 2 CPUs"

    # The run ends on the host; its model comes back and the panel says so.
    notice = panel.findChild(QFrame, "cluster-product-notice")
    qtbot.waitUntil(notice.isVisible, timeout=120_000)
    assert notice.message == f"Model produced: runs/{info.id}/outputs/model.pt"
    model = Path(info.run_dir) / "outputs" / "model.pt"
    assert model.read_text() == "weights"
    assert produced == [{"path": str(model)}]
    revealed = []
    notice.reveal = revealed.append
    notice.reveal_button.click()
    assert revealed == [str(model)]
    assert session_of(window).row(info.id).info.state == "completed"
    qtbot.waitUntil(lambda: column_texts(panel.table, info.id)["State"] == "completed", timeout=TIMEOUT_MS)
    assert column_texts(panel.table, info.id)["Scheduler"] == "exited (status 0)"
    screenshot(window, "runs-panel-with-a-cluster-run")
    panel.details.tabs.setCurrentWidget(panel.details.info)
    screenshot(panel, "runs-panel-cluster-details")

    # Pull Products fetches what is missing here again.
    model.unlink()
    assert window.commands.get("cluster.pullProducts").is_enabled()
    operation = window.commands.execute("cluster.pullProducts")
    qtbot.waitUntil(lambda: operation.finished, timeout=60_000)
    assert operation.error is None, operation.error
    assert "outputs/model.pt" in operation.result.fetched and model.read_text() == "weights"
    assert notice.isVisible() and notice.message == f"Model produced: runs/{info.id}/outputs/model.pt"


def test_a_start_that_fails_on_the_cluster_shows_the_services_message_and_can_be_tried_again(
        qtbot, open_window, project, sshd_server, tmp_path):
    trust_host(sshd_server)
    save_profile(ClusterProfile(**profile_values(sshd_server, Path("/proc/no-such-place"))))
    window = open_window(project)
    dialog = commands_of(window).run_on_cluster()
    qtbot.waitUntil(lambda: dialog.start_button.isEnabled(), timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: not window.tasks.is_running("cluster.planSync"), timeout=60_000)

    dialog.start()
    qtbot.waitUntil(lambda: bool(dialog.error.text()), timeout=60_000)

    states = {name: label.property("stage_state") for name, label in dialog.stage_labels.items()}
    assert states["connect"] == "done" and "failed" in states.values()
    assert "/proc/no-such-place" in dialog.error.text()
    assert dialog.progress_text.text() == "The run did not start."
    assert dialog.start_button.isEnabled() and dialog.isVisible()
    assert not list((project / "runs").glob("2*"))  # nothing of the run is left
    screenshot(dialog, "run-on-cluster-error")
    dialog.reject()


def test_the_dialog_takes_the_profile_last_used_here_and_each_profiles_resources(
        qtbot, open_window, project, sshd_server, tmp_path):
    from workbench.cluster.last_choice import remember_choice

    trust_host(sshd_server)
    save_profile(ClusterProfile(**profile_values(sshd_server, tmp_path / "remote")))
    save_profile(ClusterProfile(**profile_values(sshd_server, tmp_path / "remote", name="hpc", scheduler="slurm",
                                                 partition="debug")))
    remember_choice(project, "hpc", {"nodes": 2, "gpus_per_node": 1, "cpus": 4, "mem": "8G", "time": "30",
                                     "partition": "long"}, None, ["stop_at_step=5"])
    window = open_window(project)

    dialog = open_run_dialog(qtbot, window)

    assert dialog.profile.currentText() == "hpc"
    assert (dialog.nodes.value(), dialog.gpus.value(), dialog.cpus.value()) == (2, 1, 4)
    assert (dialog.mem.text(), dialog.time.text(), dialog.partition.text()) == ("8G", "30", "long")
    assert dialog.nodes.isEnabled() and dialog.partition.isEnabled()
    assert dialog.hparams.currentText() == "(none: the schema's defaults)"
    assert dialog.overrides.toPlainText() == "stop_at_step=5"

    dialog.profile.setCurrentIndex(dialog.profile.findText("box"))  # never used here: its defaults
    assert (dialog.nodes.value(), dialog.cpus.value(), dialog.partition.text()) == (1, 1, "")
    assert not dialog.nodes.isEnabled()
    with qtbot.waitSignal(dialog.sig_plan_shown, timeout=60_000):
        pass
    assert dialog.values()[:2] == ("box", {"nodes": 1, "gpus_per_node": 0, "cpus": 1, "mem": "", "time": "",
                                           "partition": "", "account": "", "qos": ""})
    dialog.reject()


def test_the_dialog_takes_the_profile_a_run_was_last_started_on_from_the_command_line(
        qtbot, open_window, project, sshd_server, tmp_path):
    trust_host(sshd_server)
    save_profile(ClusterProfile(**profile_values(sshd_server, tmp_path / "remote", name="aaa")))
    save_profile(ClusterProfile(**profile_values(sshd_server, tmp_path / "remote")))
    started = subprocess.run([sys.executable, "-m", "workbench", "train", str(project), "--cluster", "box",
                              "--cpus", "2", "--set", "stop_at_step=3", "--detach"],
                             capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    window = open_window(project)

    dialog = open_run_dialog(qtbot, window)

    assert dialog.profile.currentText() == "box" and dialog.cpus.value() == 2
    assert dialog.hparams.currentText() == "hparams/tiny.hparams"
    assert dialog.overrides.toPlainText() == "stop_at_step=3"
    dialog.reject()


def test_overrides_that_do_not_check_out_are_refused_before_anything_is_sent(qtbot, open_window, project,
                                                                              sshd_server, tmp_path):
    trust_host(sshd_server)
    save_profile(ClusterProfile(**profile_values(sshd_server, tmp_path / "remote")))
    window = open_window(project)
    dialog = open_run_dialog(qtbot, window)
    dialog.overrides.setPlainText("step_seconds=fast")

    dialog.start()

    assert dialog.error.text().startswith("Overrides: ") and "step_seconds" in dialog.error.text()
    assert not window.tasks.is_running("cluster.startRun") and dialog.start_button.isEnabled()
    dialog.reject()

"""What the runs table and the Details tab show of a run: metrics to 4 significant digits in
columns wide enough for them, the whole source in a tooltip, the service's duration and start,
and plots only for metrics that have points."""

from __future__ import annotations

import time

from PySide6.QtWidgets import QWidget

from workbench.training.run_info import RunInfo
from workbench.training.widgets.curves import CurvesView
from workbench.training.widgets.run_details import RunDetails
from workbench.training.widgets.runs_table import (
    COLUMN_ACC,
    COLUMN_DURATION,
    COLUMN_LOSS,
    COLUMN_SOURCE,
    COLUMN_STARTED,
    COLUMN_STATE,
    COLUMN_VAL_ACC,
    RunsTable,
    format_started,
)
from workbench.training.widgets.session import RunRow


def run_info(tmp_path, run_id: str, **fields) -> RunInfo:
    run_dir = tmp_path / "runs" / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    now = time.time()
    values = dict(state="completed", run_dir=str(run_dir), project_dir=str(tmp_path), created_at=now - 100,
                  started_at=now - 100, ended_at=now - 10, hparams_file="toy.hparams")
    values.update(fields)
    return RunInfo(id=run_id, **values)


def tree_rows(details: RunDetails, group: str) -> dict[str, str]:
    for index in range(details.info.topLevelItemCount()):
        top = details.info.topLevelItem(index)
        if top.text(0) == group:
            return {top.child(i).text(0): top.child(i).text(1) for i in range(top.childCount())}
    return {}


def test_small_losses_show_four_significant_digits_in_columns_wide_enough_for_them(qtbot, tmp_path):
    table = RunsTable()
    qtbot.addWidget(table)
    table.resize(1000, 200)
    table.show()
    rows = [
        RunRow(run_info(tmp_path, "20260101-000003-000", final_metrics={"loss": 0.0001234, "acc": 0.94690001,
                                                                         "val_acc": 0.9}), False),
        RunRow(run_info(tmp_path, "20260101-000002-000", final_metrics={"loss": 1.23e-05, "acc": 1.0}), False),
        RunRow(run_info(tmp_path, "20260101-000001-000", final_metrics={"loss": 0.0012345678}), False),
    ]
    table.set_rows(rows)
    texts = [[table.topLevelItem(i).text(c) for c in (COLUMN_LOSS, COLUMN_ACC, COLUMN_VAL_ACC)] for i in range(3)]
    assert texts == [["0.0001234", "0.9469", "0.9"], ["1.23e-05", "1", ""], ["0.001235", "", ""]]
    for column in (COLUMN_LOSS, COLUMN_ACC, COLUMN_VAL_ACC):
        assert table.columnWidth(column) >= table.sizeHintForColumn(column)  # nothing cut to "0.000…"

    table.show_live_metrics("20260101-000003-000", {"loss": -1.2346e-07})  # a wider value while it runs
    assert table.topLevelItem(0).text(COLUMN_LOSS) == "-1.235e-07"
    assert table.columnWidth(COLUMN_LOSS) >= table.sizeHintForColumn(COLUMN_LOSS)
    assert table.topLevelItem(0).toolTip(COLUMN_LOSS) == "-1.2346e-07"  # every digit on hover


def test_runs_of_a_project_of_one_s_own_show_the_metrics_they_log_in_the_metric_columns(qtbot, tmp_path):
    table = RunsTable()
    qtbot.addWidget(table)
    metric_columns = (COLUMN_LOSS, COLUMN_ACC, COLUMN_VAL_ACC)
    headers = lambda: [table.headerItem().text(column) for column in metric_columns]
    table.set_rows([RunRow(run_info(tmp_path, "20260101-000002-000", state="running", final_metrics={}), False),
                    RunRow(run_info(tmp_path, "20260101-000001-000", final_metrics={
                        "loss": 0.0023, "test_average_loss": 0.0, "test_accuracy": 1.0}), False)])
    # A standard name keeps its place; the others fill the columns it leaves.
    assert headers() == ["loss", "test_average_loss", "test_accuracy"]
    assert [table.topLevelItem(1).text(column) for column in metric_columns] == ["0.0023", "0", "1"]
    for column in metric_columns:  # the header's name is not cut
        assert table.columnWidth(column) > table.header().fontMetrics().horizontalAdvance(table.headerItem().text(column))

    table.set_rows([RunRow(run_info(tmp_path, "20260101-000002-000", state="running", final_metrics={}), False)])
    assert headers() == ["loss", "acc", "val_acc"]  # no metric yet: the usual names
    table.show_live_metrics("20260101-000002-000", {"step": 3, "train_loss": 0.0837})  # Lightning's name
    assert headers()[0] == "train_loss" and table.topLevelItem(0).text(COLUMN_LOSS) == "0.0837"


def test_the_cut_off_source_column_has_the_whole_text_in_its_tooltip(qtbot, tmp_path):
    table = RunsTable()
    qtbot.addWidget(table)
    info = run_info(tmp_path, "20260101-000001-000", hparams_file="hparams/a-long-name.hparams", nproc=2,
                    overrides=["learning_rate=0.001", "num_epochs=20", "optimizer=adamw"])
    table.set_rows([RunRow(info, False)])
    item = table.topLevelItem(0)
    assert item.text(COLUMN_SOURCE) == "a-long-name.hparams  learning_rate=0.001  num_epochs=20  optimizer=adamw  ×2 processes"
    assert item.toolTip(COLUMN_SOURCE) == ("hparams/a-long-name.hparams\nlearning_rate=0.001\nnum_epochs=20\n"
                                           "optimizer=adamw\n×2 processes")


def test_a_resumed_run_shows_the_services_duration_and_its_first_start(qtbot, tmp_path):
    now = time.time()
    # Resumed a minute ago after training 2 minutes; it first started 2 hours ago, and its first
    # segment's end is still recorded until this one ends.
    info = run_info(tmp_path, "20260101-000001-000", state="running", started_at=now - 7200,
                    segment_started_at=now - 60, active_seconds=120.0, ended_at=now - 3000,
                    resumes=[{"step": 40, "time": now - 60}])
    assert 179 <= info.duration <= 182
    table = RunsTable()
    qtbot.addWidget(table)
    table.set_rows([RunRow(info, False)])
    item = table.topLevelItem(0)
    assert item.text(COLUMN_DURATION) in ("3:00", "3:01", "3:02")
    assert item.text(COLUMN_STARTED) == format_started(now - 7200)

    details = RunDetails()
    qtbot.addWidget(details)
    details.show_run(RunRow(info, False))
    assert any(f" · {d} " in details.header.text() or details.header.text().endswith(f" · {d}")
               for d in ("3:00", "3:01", "3:02"))
    run = tree_rows(details, "Run")
    assert run["Started"] == time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now - 7200))
    assert run["Resumed"].startswith("at step 40, ")
    assert "Ended" not in run  # it is running again: the first segment's end is not its end


def test_a_plot_without_points_for_the_shown_runs_gives_its_room_to_the_others(qtbot):
    curves = CurvesView()
    qtbot.addWidget(curves)
    curves.resize(900, 300)
    curves.show()
    curves.set_runs(["r1"])
    curves.add_records("r1", [{"step": 1, "loss": 1.0, "acc": 0.1}, {"step": 2, "loss": 0.5, "acc": 0.3}])

    def shown() -> list[str]:
        return [plot_id for plot_id in ("loss", "acc", "lr")
                if not curves.findChild(QWidget, f"curves-{plot_id}").isHidden()]

    wait = qtbot.waitUntil
    wait(lambda: curves.findChild(QWidget, "curves-loss") is not None)
    assert shown() == ["loss", "acc"]  # this run reports no learning rate
    curves.add_records("r1", [{"step": 3, "loss": 0.4, "lr": 0.01}])
    assert shown() == ["loss", "acc", "lr"]  # and back when it does
    curves.set_runs(["r2"])
    curves.add_records("r2", [{"step": 1, "loss": 2.0}])
    assert shown() == ["loss"]
    assert curves.findChild(QWidget, "curves-loss").width() > 600  # the one plot takes the room


def test_a_run_whose_cluster_is_out_of_reach_reads_running_reconnecting_with_a_note_for_people(qtbot, tmp_path):
    now = time.time()
    lost = run_info(tmp_path, "20260101-000001-000", state="running", backend="slurm", cluster="lab", job_id="2",
                    ended_at=None, error="Lost the connection to lab (No existing session); reconnecting…",
                    outage={"kind": "connection", "since": now - 60, "last_try": now - 2, "next_try": now + 8})
    table = RunsTable()
    qtbot.addWidget(table)
    table.set_rows([RunRow(lost, False)])
    item = table.topLevelItem(0)
    assert item.text(COLUMN_STATE) == "running · reconnecting"
    since = time.strftime("%H:%M", time.localtime(now - 60))
    assert item.toolTip(COLUMN_STATE).startswith(f"Lost the connection to lab at {since}; reconnecting (last try ")
    assert "next in 8 s). The job keeps running on the cluster." in item.toolTip(COLUMN_STATE)

    details = RunDetails()
    qtbot.addWidget(details)
    details.show_run(RunRow(lost, False))
    header = details.header.text()
    assert "running · reconnecting" in header and f"Lost the connection to lab at {since}" in header
    assert "No existing session" not in header

    back = run_info(tmp_path, "20260101-000001-000", state="running", backend="slurm", cluster="lab", job_id="2",
                    ended_at=None)
    table.set_rows([RunRow(back, False)])
    assert item.text(COLUMN_STATE) == "running" and item.toolTip(COLUMN_STATE) == "running"


def test_a_killed_run_says_by_what_rather_than_a_bare_exit_code(qtbot, tmp_path):
    details = RunDetails()
    qtbot.addWidget(details)
    details.show_run(RunRow(run_info(tmp_path, "20260101-000001-000", state="terminated", exit_code=-9), False))
    assert tree_rows(details, "Run")["Exit code"] == "-9 (killed by SIGKILL)"


def test_a_run_on_versions_names_its_dataset_its_parent_and_the_version_it_became(qtbot, tmp_path):
    details = RunDetails()
    qtbot.addWidget(details)
    details.show_run(RunRow(run_info(tmp_path, "20260101-000001-000", state="completed", dataset_version="0005",
                                     from_version="0004", model_version="0006",
                                     registry_note="retention removed version 0003"), False))
    rows = tree_rows(details, "Run")
    assert rows["Dataset version"] == "0005" and rows["Fine-tuned from"] == "model version 0004"
    assert rows["Model version"] == "0006 (retention removed version 0003)"
    details.show_run(RunRow(run_info(tmp_path, "20260101-000002-000", state="completed",
                                     registry_note="not registered (--no-register)"), False))
    rows = tree_rows(details, "Run")
    assert rows["Model version"] == "none: not registered (--no-register)" and "Dataset version" not in rows

"""How cluster runs read in the Runs panel and the sync list, without a window: the scheduler's
state and reason, the resources, the model among a run's products, the groups of a sync plan."""

from __future__ import annotations

from workbench.cluster.data_selection import DataRef, LeftOut
from workbench.cluster.data_sync import PlannedFile, SyncPlan
from workbench.cluster.widgets.product_notice import model_among
from workbench.cluster.widgets.runs_extension import (
    cluster_rows, job_text, product_model, resources_text, scheduler_text,
)
from workbench.cluster.widgets.sync_preview import format_size, plan_groups
from workbench.training.run_info import RunInfo


def run(**fields) -> RunInfo:
    return RunInfo(id="20260101-000000-000", state=fields.pop("state", "pending"), run_dir="/p/runs/x",
                   project_dir="/p", **fields)


def test_a_waiting_slurm_job_shows_the_schedulers_reason():
    info = run(backend="slurm", cluster="hpc", job_id="4711", scheduler_state="PENDING", scheduler_reason="Resources")
    assert scheduler_text(info) == "pending (Resources)"
    assert job_text(info) == "4711"
    assert scheduler_text(run(backend="slurm", cluster="hpc", state="running", scheduler_state="RUNNING")) == "running"
    assert scheduler_text(run(backend="ssh", state="completed", scheduler_state="EXITED", exit_code=0)) == \
        "exited (status 0)"
    assert scheduler_text(run(backend="slurm", state="starting")) == "starting"  # not submitted yet


def test_a_stop_asked_for_reads_as_such_not_as_a_job_that_merely_completed():
    stopped = run(backend="slurm", cluster="hpc", state="stopped", scheduler_state="COMPLETED", exit_code=0)
    assert scheduler_text(stopped) == "completed (stopped on request)"
    assert dict(cluster_rows(stopped))["State there"] == "completed (stopped on request)"
    assert scheduler_text(run(backend="ssh", state="stopped", scheduler_state="EXITED", exit_code=0)) == \
        "exited (stopped on request)"
    assert scheduler_text(run(backend="ssh", state="terminated", scheduler_state="GONE",
                              scheduler_reason="the job's processes ended without recording a status (killed, or "
                                               "the host restarted)")) == "gone (killed on request)"
    assert scheduler_text(run(backend="slurm", state="completed", scheduler_state="COMPLETED", exit_code=0)) == \
        "completed"


def test_a_local_run_has_no_cluster_cells_and_no_cluster_section():
    local = run(state="running")
    assert scheduler_text(local) == job_text(local) == ""
    assert cluster_rows(local) == []


def test_resources_read_as_a_person_would_say_them():
    assert resources_text({"nodes": 2, "gpus_per_node": 4, "cpus": 8, "mem": "16G", "time": "02:00:00",
                           "partition": "gpu", "account": "", "qos": ""}) == \
        "2 nodes × 4 GPUs, 8 CPUs, memory 16G, time limit 02:00:00, partition gpu"
    assert resources_text({"nodes": 1, "gpus_per_node": 0, "cpus": 1}) == "1 node, 1 CPU"
    assert resources_text({}) == ""


def test_the_model_among_the_products_is_the_file_a_model_tool_opens():
    assert model_among(["outputs/log.txt", "outputs/model.pt", "outputs/model.onnx"]) == "outputs/model.onnx"
    assert model_among(["outputs/model.pt"]) == "outputs/model.pt"
    assert model_among(["outputs/notes.txt"]) is None


def test_a_sync_plan_is_grouped_with_sizes_and_reasons_and_empty_groups_left_out():
    plan = SyncPlan(remote_dir="/data/key", send=[PlannedFile("data/a.bin", 3_000_000, "changed")],
                    unchanged=["data/b.bin"], skipped=[LeftOut("data/link", "symbolic link")],
                    refs=[DataRef("imagenet", "/shared/imagenet", exists=False)])
    groups = {key: (title, rows) for key, title, rows in plan_groups(plan)}
    assert list(groups) == ["send", "unchanged", "skipped", "refs"]
    assert groups["send"] == ("To send: 1 file(s), 3.0 MB", [("data/a.bin", "3.0 MB", "changed")])
    assert groups["skipped"][1] == [("data/link", "", "symbolic link")]
    assert groups["refs"][1] == [("imagenet", "", "→ /shared/imagenet (missing there)")]
    assert format_size(512) == "512 B"


def test_a_checkpoint_pulled_back_is_no_model_produced():
    assert product_model(["checkpoints/step-00000960.pt"]) is None
    assert product_model(["checkpoints/step-00000960.pt", "outputs/model.pt"]) == "outputs/model.pt"

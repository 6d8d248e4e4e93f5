"""Staging pushes against real agents and real digits runs: a pipeline's train step with
``staging`` switches the device's staging slot at the due epochs and ends with the run's last
checkpoint there, production untouched; a device that is down is a reported failure while the
run completes; a bad ``staging`` declaration is one error naming its line; and
``workbench pipeline stage`` pushes the last checkpoint of a run that ended."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.device.conftest import cli_env, free_port, run_cli
from workbench.device.deploy import list_slots
from workbench.device.link import pair_device
from workbench.pipeline import PipelineService
from workbench.pipeline.errors import PipelineError
from workbench.pipeline.staging import (StagingFollower, StagingPlan, declared_steps, declared_tool_params,
                                       stage_run)
from workbench.platform.file_hashes import hash_file
from workbench.registry import open_versions
from workbench.registry.deployments import deployment_log, served_slots
from workbench.training import RunService
from workbench_device.inference import InferenceClient

# Real runs and conversions: on a loaded machine an epoch of digits takes seconds.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
# Smaller batches give the follower time to look between checkpoints; few epochs keep it short.
SLOW_EPOCHS = ["batch_size=16", "log_loss_every_n_iters=100"]

TRAIN_WITH_STAGING = """

[[pipeline.steps]]
tool = "train"
from = "scratch"
epochs = 4
set = {set}
staging = {{ devices = ["{device}"], every = 2, slot = "staging" }}
"""


def slot_agent(start_agent, name: str):
    port = free_port()
    agent = start_agent(name, False, "--inference-port", str(port))
    agent.inference_port = port
    return agent


def run_pipeline_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``workbench pipeline ARGS…`` in a new process, with the device tests' environment."""
    return subprocess.run([sys.executable, "-m", "workbench", "pipeline", *args], capture_output=True,
                          text=True, timeout=timeout, env=cli_env(), stdin=subprocess.DEVNULL)


def staging_log(project) -> list[dict]:
    """The staging lines of the project's deploy log."""
    folder = open_versions(project).models.settings.folder
    path = deployment_log(folder)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [line for line in lines if "staging" in line]


def served_model(agent, slot: str = "staging") -> str:
    import numpy as np

    with InferenceClient(port=agent.inference_port) as app:
        answer = app.run_detailed(slot, {"images": np.zeros((1, 1, 8, 8), np.float32)})
    return answer.model


def declare(project, text: str) -> None:
    path = project / "workbench.toml"
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def test_a_train_step_with_staging_switches_the_slot_at_the_due_epochs_and_ends_on_the_last(
        digits_project, start_agent):
    agent = slot_agent(start_agent, "Staging Phone")
    pair_device(agent.address, agent.code)
    declare(digits_project, TRAIN_WITH_STAGING.format(set=json.dumps(SLOW_EPOCHS), device=agent.address))
    lines: list[str] = []
    service = PipelineService(digits_project, say=lines.append)
    iteration = service.start()
    assert iteration.state == "done", (iteration.error, lines)

    train = iteration.steps[0].outputs
    pushes = [p for p in train["staging"]["pushes"] if p["state"] != "skipped"]
    # Epochs 2 and 4 fall due; 4 is also the run's last, so nothing more is pushed at the end.
    assert [(p["epoch"], p["state"]) for p in pushes] == [(2, "switched"), (4, "switched")], lines
    last = pushes[-1]
    run_dir = RunService(digits_project).get(train["run_id"]).run_dir
    assert last["model"].startswith(str(run_dir)) and last["model"].endswith("-epoch0004.onnx")
    assert hash_file(last["model"]) == last["sha256"]
    # The device serves the last checkpoint's model in its staging slot, and nothing else.
    name, _, slots = list_slots(agent.address)
    assert [(s["slot"], s["model"]) for s in slots] == [("staging", last["sha256"])]
    assert served_model(agent) == last["sha256"]
    assert slots[0]["name"] == f"{train['run_id']}-epoch0004.onnx"
    # The deploy log says staging of this run at epochs 2 and 4, with no version and no alias.
    logged = staging_log(digits_project)
    assert [(e["staging"]["run"], e["staging"]["epoch"]) for e in logged] == [
        (train["run_id"], 2), (train["run_id"], 4)]
    assert all(e["version"] == "" and e["alias"] == "" and e["slot"] == "staging" for e in logged)
    # No alias moved: the run registered a version, and production points nowhere.
    versions = open_versions(digits_project)
    assert "production" not in versions.models.aliases.all()
    assert not [s for s in served_slots(versions.models.settings.folder) if s.version]
    assert any(f"staging: run {train['run_id']} epoch 2 on slot staging" in line for line in lines), lines


def test_a_device_that_is_down_is_reported_and_the_run_completes(digits_project, start_agent):
    up = slot_agent(start_agent, "Staging Up")
    down = slot_agent(start_agent, "Staging Down")
    for agent in (up, down):
        pair_device(agent.address, agent.code)
    down.stop()
    runs = RunService(digits_project)
    run = runs.start(None, [*SLOW_EPOCHS, "num_epochs=3"], register=False)
    lines: list[str] = []
    follower = StagingFollower(digits_project, run.id,
                               StagingPlan([up.address, down.address], every=1), lines.append)
    report = follower.follow()
    assert runs.get(run.id).state == "completed"
    assert report.run_state == "completed"
    tried = [p for p in report.pushes if p.state != "skipped"]
    assert tried and tried[-1].epoch == 3, report.to_text()
    for push in tried:  # each push reached the device that is up, not the one that is down
        states = {d["address"]: d["state"] for d in push.devices}
        assert states == {up.address: "switched", down.address: "unreachable"}, push
        assert push.state == "partial" and down.address in push.reason
    # One line a failed push, saying training goes on.
    failures = [line for line in lines if "was not pushed to slot staging" in line]
    assert len(failures) == len(tried), lines
    assert all("training goes on" in line and "\n" not in line for line in failures)
    # Checkpoints that fell due while a push was under way were skipped, never queued.
    epochs = [p.epoch for p in report.pushes]
    assert epochs == sorted(epochs) and len(set(epochs)) == len(epochs)
    assert served_model(up) == tried[-1].sha256
    assert not report.ok


@pytest.mark.parametrize("staging, says", [
    ('{ devices = ["phone"], evry = 2 }', "has no key 'evry' (it takes devices, every, quantize, slot; did you mean every?)"),
    ('{ every = 2 }', "needs devices = [\"name\", ...]"),
    ('{ devices = ["phone"], every = 0 }', "needs every to be at least 1 epoch, not 0"),
    ('{ devices = ["phone"], quantize = "yes" }', "needs quantize to be true or false, not 'yes'"),
])
def test_a_bad_staging_declaration_is_one_error_naming_its_line_before_anything_runs(
        digits_project, staging, says):
    declare(digits_project, '\n[[pipeline.steps]]\ntool = "train"\nepochs = 2\n'
            f"staging = {staging}\n")
    line = len((digits_project / "workbench.toml").read_text(encoding="utf-8").splitlines())
    runs_before = {p.name for p in (digits_project / "runs").iterdir()}
    with pytest.raises(PipelineError) as raised:
        PipelineService(digits_project).start()
    message = str(raised.value)
    assert message.startswith(f"workbench.toml line {line}: key 'staging' of step 1 (train) ")
    assert says in message and "\n" not in message
    assert {p.name for p in (digits_project / "runs").iterdir()} == runs_before


def test_the_stage_command_pushes_the_last_checkpoint_of_a_run_that_ended(digits_project,
                                                                            start_agent):
    agent = slot_agent(start_agent, "Stage CLI Phone")
    assert run_cli("pair", agent.address, "--code", agent.code).returncode == 0
    runs = RunService(digits_project)
    run = runs.start(None, ["num_epochs=3"], register=False)
    assert runs.wait(run.id, timeout=300).state == "completed"

    done = run_pipeline_cli("stage", str(digits_project), run.id, "--device", agent.address, "--every", "2",
                   "--slot", "preview", "--json", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] and report["run_state"] == "completed"
    [push] = report["pushes"]  # epoch 2 was never seen live: the last checkpoint only
    assert (push["epoch"], push["state"]) == (3, "switched")
    listed = run_cli("slots", agent.address)
    assert listed.returncode == 0, listed.stderr
    assert f"preview          {run.id}-epoch0003.onnx ({push['sha256'][:12]})" in listed.stdout
    assert served_model(agent, "preview") == push["sha256"]

    # A device that is down: one error line naming it, exit status 1.
    agent.stop()
    failed = run_pipeline_cli("stage", str(digits_project), run.id, "--device", agent.address, timeout=300)
    assert failed.returncode == 1
    assert f"error: the last staging push of run {run.id} did not switch slot staging" in failed.stderr
    assert agent.address in failed.stderr


def test_a_staged_checkpoint_is_converted_and_quantized_with_the_declared_steps_parameters(
        digits_project, start_agent):
    agent = slot_agent(start_agent, "Quantized Phone")
    pair_device(agent.address, agent.code)
    declare(digits_project, '\n[[pipeline.steps]]\ntool = "train"\n'
            '\n[[pipeline.steps]]\ntool = "convert"\nopset = 17\nverify_samples = 2\n'
            '\n[[pipeline.steps]]\ntool = "quantize"\nmode = "dynamic"\nsamples = 50\nrepeats = 0\n')
    runs = RunService(digits_project)
    run = runs.start(None, ["num_epochs=2"], register=False)
    assert runs.wait(run.id, timeout=300).state == "completed"
    plan = StagingPlan([agent.address], every=1, quantize=True,
                       convert=declared_tool_params(declared_steps(digits_project), "convert"),
                       quantize_params=declared_tool_params(declared_steps(digits_project), "quantize"))
    report = stage_run(digits_project, run.id, plan)
    [push] = report.pushes
    assert (push.epoch, push.state) == (2, "switched"), report.to_text()
    model = Path(push.model)
    assert model.name == f"{run.id}-epoch0002.dynamic-int8.onnx"  # the quantize tool's own name
    import onnx

    float_model = onnx.load(str(model.with_name(f"{run.id}-epoch0002.onnx")))
    assert [o.version for o in float_model.opset_import if o.domain in ("", "ai.onnx")] == [17]
    assert served_model(agent) == hash_file(model) == push.sha256


def test_of_several_checkpoints_due_at_one_look_only_the_newest_is_pushed(digits_project,
                                                                          start_agent):
    agent = slot_agent(start_agent, "Newest Phone")
    pair_device(agent.address, agent.code)
    runs = RunService(digits_project)
    run = runs.start(None, ["num_epochs=4"], register=False)
    assert runs.wait(run.id, timeout=300).state == "completed"
    kept = sorted(p.name for p in (digits_project / "runs" / run.id / "checkpoints").glob("step-*.pt"))
    assert len(kept) >= 3  # epochs 2, 3 and 4 are all there, each due with every = 1
    looks = iter([False])  # the first look sees the run still going, the next one ended
    follower = StagingFollower(digits_project, run.id, StagingPlan([agent.address], every=1))
    report = follower.follow(lambda: next(looks, True))
    assert [(p.epoch, p.state) for p in report.pushes] == [(4, "switched")], report.to_text()
    assert served_model(agent) == report.pushes[0].sha256
    assert [e["staging"]["epoch"] for e in staging_log(digits_project)] == [4]

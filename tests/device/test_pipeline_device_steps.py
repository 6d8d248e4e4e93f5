"""The pipeline's verify and deploy steps against two real agents: an iteration's verify → gate →
deploy ends with both devices' ``classifier`` slot serving the new version and production moved
to it; a device that is down fails the deploy step naming it, production stays, and resume
finishes once the device is back."""

from __future__ import annotations

import sys

import pytest

from tests.device.conftest import AgentProcess, free_port
from tests.device.test_deploy import OTHER_BIAS, served
from tests.device_agent.conftest import tiny_onnx_bytes
from workbench.device.deploy import list_slots
from workbench.device.link import pair_device
from workbench.pipeline import PipelineService
from workbench.pipeline.iterations import DONE, Iteration, IterationStore, StepState
from workbench.platform.file_hashes import hash_file
from workbench.registry import open_versions

PROJECT = """
[training]
script = "train.py"
hparams = "tiny.hparams"

[registry]
folder = "registry"
"""
# The dataset the verify step feeds the devices: 4 numbers a sample, as the tiny model takes.
DATA_MODULE = """
import numpy as np
from workbench_trainkit import datasets


@datasets.register("tiny4")
def tiny4(hp):
    rng = np.random.default_rng(0)
    samples = [(rng.standard_normal(4).astype(np.float32), int(i % 3)) for i in range(40)]
    return {"train": samples, "val": samples, "test": samples}
"""
DECLARATION = PROJECT + """

[[pipeline.steps]]
tool = "train"

[[pipeline.steps]]
tool = "verify"
devices = {devices}
samples = 32

[[pipeline.steps]]
tool = "gate"
min_agreement = 99
max_p90_ms = 1000

[[pipeline.steps]]
tool = "deploy"
devices = {devices}
slot = "classifier"
"""


@pytest.fixture
def project(tmp_path):
    """Model versions 0000 (production) and 0001 (other weights), each with its ONNX model."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "workbench.toml").write_text(PROJECT, encoding="utf-8")
    (root / "tinydata.py").write_text(DATA_MODULE, encoding="utf-8")
    (root / "train.py").write_text("import tinydata  # noqa: F401\n", encoding="utf-8")
    (root / "tiny.hparams").write_text("dataset_name=tiny4\n", encoding="utf-8")
    models = open_versions(root, python=sys.executable).models
    for name, bias in (("a", None), ("b", OTHER_BIAS)):
        run = tmp_path / "runs" / name
        run.mkdir(parents=True)
        (run / "best.pt").write_bytes(f"weights {name}".encode())
        (run / "model.onnx").write_bytes(tiny_onnx_bytes() if bias is None else tiny_onnx_bytes(bias))
        models.register([(run / "best.pt", "weights"), (run / "model.onnx", "onnx")], {})
    models.set_alias("production", 0)
    return root


@pytest.fixture
def agents(start_agent):
    """Two agents with an inference endpoint each, paired with this process."""
    started = []
    for n in (1, 2):
        port = free_port()
        agent = start_agent(f"Pipeline Phone {n}", False, "--inference-port", str(port))
        agent.inference_port = port
        pair_device(agent.address, agent.code)
        started.append(agent)
    return started


def declare(project, verify_on: list[str], deploy_to: list[str]) -> None:
    """The project declares train → verify on ``verify_on`` → gate → deploy to ``deploy_to``."""
    def listed(addresses):
        return "[" + ", ".join(f'"{a}"' for a in addresses) + "]"

    text = DECLARATION.replace("{devices}", listed(verify_on), 1).replace("{devices}", listed(deploy_to), 1)
    (project / "workbench.toml").write_text(text, encoding="utf-8")


def trained_iteration(project, addresses: list[str]) -> PipelineService:
    """The project declares train → verify → gate → deploy to ``addresses``, and iteration 0002
    has its train step done as a run that registered version 0001 leaves it."""
    declare(project, addresses, addresses)
    service = PipelineService(project)
    model_file = service.versions.models.folder / "bestmodel_0001.onnx"
    assert model_file.is_file()
    steps = [StepState(0, "train", {}, DONE, 1.0, 2.0,
                       {"run_id": "r1", "model_version": "0001", "metrics": {},
                        "model_file": str(model_file)})]
    steps += [StepState(i, tool, {}) for i, tool in enumerate(("verify", "gate", "deploy"), 1)]
    IterationStore(service.versions.settings.folder).write(
        Iteration("0002", steps, state="failed", failed_step=1, production_at_start="0000"))
    return service


def production_of(project) -> int | None:
    return open_versions(project).models.aliases.all().get("production")


def test_verify_gate_and_deploy_switch_both_slots_and_move_production(project, agents):
    service = trained_iteration(project, [a.address for a in agents])
    lines: list[str] = []
    service.say = lines.append
    iteration = service.resume("0002")
    assert iteration.state == DONE, iteration.error
    for agent in agents:  # each device's switch, with its load and warm-up times
        assert any(line.strip().startswith(f"{agent.name}: switched, load ") and "warm-up" in line
                   for line in lines), lines
    verify, gate, deploy = iteration.steps[1:]
    assert set(verify.outputs["verifications"]) == {a.address for a in agents}
    assert [r["gate"] for r in gate.outputs["results"]] == ["min_agreement", "max_p90_ms"]
    assert all(r["passed"] for r in gate.outputs["results"])
    expected = hash_file(service.versions.models.folder / "bestmodel_0001.onnx")
    assert deploy.outputs["deploy"]["sha256"] == expected
    assert deploy.outputs["previous"] == "0000"
    assert deploy.outputs["deploy"]["alias"] == "production"  # what a rollback of it finds
    for agent in agents:
        _, _, slots = list_slots(agent.address)
        assert [(s["slot"], s["model"]) for s in slots] == [("classifier", expected)]
        assert served(agent)[0] == expected
    assert production_of(project) == 1


def test_a_device_that_is_down_fails_the_deploy_naming_it_and_resume_finishes(project, agents,
                                                                             request):
    up, down = agents
    service = trained_iteration(project, [a.address for a in agents])
    # Verified on the device that is up; the deploy goes to both.
    declare(project, [up.address], [up.address, down.address])
    down.stop()
    lines: list[str] = []
    service.say = lines.append
    failed = service.resume("0002")
    assert failed.state == "failed" and failed.failed_step == 3, failed.error
    assert down.address in failed.error and "did not switch" in failed.error
    assert f"{down.address}: unreachable, nothing answers" in "\n".join(lines)
    assert "production stays where it was" in failed.error
    recorded = {o["address"]: o["state"] for o in failed.steps[3].outputs["deploy"]["outcomes"]}
    assert recorded == {up.address: "switched", down.address: "unreachable"}
    assert production_of(project) == 0
    assert served(up)[0] == hash_file(service.versions.models.folder / "bestmodel_0001.onnx")

    # The same device again: its data folder (so still paired), its port, its endpoint.
    back = AgentProcess(down.data_dir, down.name, False, "--port", str(down.port),
                        "--inference-port", str(down.inference_port))
    back.inference_port = down.inference_port
    request.addfinalizer(back.stop)
    done = service.resume("0002")
    assert done.state == DONE, done.error
    assert done.steps[1].started_at == failed.steps[1].started_at  # verify is not run again
    expected = hash_file(service.versions.models.folder / "bestmodel_0001.onnx")
    for agent in (up, back):
        assert served(agent)[0] == expected
    assert production_of(project) == 1

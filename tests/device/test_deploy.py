"""Deploying a model version of a project's registry to the slots of real agents: the bundle,
parallel deploys, a device that is down, a model the device cannot load, the CLI."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.device.conftest import free_port, run_cli
from tests.device_agent.conftest import BIAS, reference, tiny_onnx_bytes
from workbench.device.deploy import FAILED, NO_PREPROCESSING, SWITCHED, UNREACHABLE, \
    build_bundle, deploy_to_devices, preprocessing_of
from workbench.device.errors import DeviceError
from workbench.device.link import pair_device
from workbench.platform.file_hashes import hash_file
from workbench.registry import open_versions
from workbench_device.inference import InferenceClient

OTHER_BIAS = np.array([1.0, 2.0, 3.0], np.float32)
X = np.random.default_rng(3).standard_normal((2, 4)).astype(np.float32)


def unloadable_onnx_bytes() -> bytes:
    """An ONNX model onnx reads but no runtime loads: an operator nobody defines."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("NoSuchOperator", ["x"], ["y"], domain="com.example.none")], "broken",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("com.example.none", 1)])
    model.ir_version = 8
    return model.SerializeToString()


@pytest.fixture
def project(tmp_path):
    """A project whose registry has versions 0000 (tiny model, with an int8 variant named so;
    production), 0001 (other weights), 0002 (a model no runtime loads) and 0003 (no ONNX file)."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "workbench.toml").write_text('[registry]\nfolder = "registry"\n', encoding="utf-8")
    registry = open_versions(root, python=sys.executable).models
    runs = tmp_path / "runs"
    runs.mkdir()

    def version(name: str, files: dict[str, bytes], info: dict) -> None:
        paths = []
        for file_name, data in files.items():
            (runs / f"{name}-{file_name}").write_bytes(data)
            paths.append((runs / f"{name}-{file_name}", file_name))
        registry.register(paths, info)

    version("a", {"best.pt": b"weights a", "model.onnx": tiny_onnx_bytes(OTHER_BIAS),
                  "model.int8.onnx": tiny_onnx_bytes()},
            {"hyper_parameters": {"lr": 0.1, "mean": [0.5], "std": [0.25]}})
    version("b", {"best.pt": b"weights b", "model.onnx": tiny_onnx_bytes(OTHER_BIAS)}, {})
    version("c", {"best.pt": b"weights c", "model.onnx": unloadable_onnx_bytes()}, {})
    version("d", {"best.pt": b"weights d"}, {})
    registry.set_alias("production", 0)
    return root


def start_slot_agents(start_agent, count: int = 2) -> list:
    """Agents, each with its inference endpoint on a free loopback port."""
    agents = []
    for n in range(1, count + 1):
        port = free_port()
        agent = start_agent(f"Deploy Phone {n}", False, "--inference-port", str(port))
        agent.inference_port = port
        agents.append(agent)
    return agents


@pytest.fixture
def slot_agents(start_agent):
    """Two agents paired with this process."""
    agents = start_slot_agents(start_agent)
    for agent in agents:
        pair_device(agent.address, agent.code)
    return agents


def served(agent, slot: str = "classifier"):
    with InferenceClient(port=agent.inference_port) as app:
        answer = app.run_detailed(slot, {"x": X})
    return answer.model, answer.outputs["y"]


def test_the_bundle_names_the_int8_model_its_sha256_shapes_and_preprocessing(project):
    bundle = build_bundle(project, "production")
    assert bundle.model.name == "bestmodel_0000.int8.onnx"
    assert bundle.yaml_path.name == "deployment_0000.yaml"
    assert bundle.yaml_path.parent == project / "registry" / "deployments"
    described = yaml.safe_load(bundle.yaml_path.read_text())
    assert described["model"]["sha256"] == hash_file(bundle.model) == bundle.sha256
    assert described["runtime"] == "onnxruntime"
    assert described["inputs"] == [{"name": "x", "shape": ["batch", 4], "dtype": "float32"}]
    assert [o["name"] for o in described["outputs"]] == ["y", "twice"]
    assert described["outputs"][0]["shape"] == ["batch", 3]
    assert described["preprocessing"] == {"mean": [0.5], "std": [0.25]}
    with zipfile.ZipFile(bundle.zip_path) as archive:
        assert sorted(archive.namelist()) == ["bestmodel_0000.int8.onnx", "deployment_0000.yaml"]
        assert archive.read("bestmodel_0000.int8.onnx") == bundle.model.read_bytes()
    assert "deployed_as" not in described
    # An app is told what to do to its inputs by the project when the record says nothing: the
    # [deploy.preprocessing] table; training-only keys (loss_scale, loader threads) are no part of it.
    toml = project / "workbench.toml"
    toml.write_text(toml.read_text() + '\n[deploy.preprocessing]\ndivide_by = 16\nlayout = "NCHW"\n')
    assert build_bundle(project, "0001").description["preprocessing"] == {"divide_by": 16, "layout": "NCHW"}
    toml.write_text(toml.read_text().replace("[deploy.preprocessing]\ndivide_by = 16\nlayout = \"NCHW\"\n", ""))
    assert preprocessing_of({"hyper_parameters": {"loss_scale": 1.0, "num_preprocessing_threads": 16,
                                                  "preprocessing_name": "", "image_size": 8}}) == {"image_size": 8}
    assert build_bundle(project, "0", deployed_as="production").description["deployed_as"] == "production"
    plain = build_bundle(project, "0001")
    # Its model is the same bytes as 0000's plain ONNX one: a link under its own name.
    assert plain.model.name == "bestmodel_0001.onnx" and plain.version == "0001"
    assert plain.model.stat().st_ino == (plain.model.parent / "bestmodel_0000.onnx").stat().st_ino
    assert plain.description["preprocessing"] == NO_PREPROCESSING
    with pytest.raises(DeviceError, match="no ONNX model to deploy.*convert it first"):
        build_bundle(project, "3")


def test_a_deploy_switches_two_devices_in_parallel_and_is_recorded(project, slot_agents):
    report = deploy_to_devices(project, "production", [a.address for a in slot_agents])
    assert [o.state for o in report.outcomes] == [SWITCHED, SWITCHED], report.to_text()
    assert report.ok and all(o.load_ms is not None for o in report.outcomes)
    for agent in slot_agents:
        model, outputs = served(agent)
        assert model == report.sha256
        np.testing.assert_allclose(outputs, reference(X, BIAS), rtol=1e-6)
    second = deploy_to_devices(project, "1", None)  # every paired device
    assert [o.state for o in second.outcomes] == [SWITCHED, SWITCHED]
    assert {o.previous for o in second.outcomes} == {report.sha256}
    for agent in slot_agents:
        assert served(agent)[0] == second.sha256
    lines = (project / "registry" / "deployments" / "deployments.jsonl").read_text().splitlines()
    assert [json.loads(line)["version"] for line in lines] == ["0000", "0001"]
    assert {d["state"] for d in json.loads(lines[1])["devices"]} == {SWITCHED}


def test_a_device_that_is_down_is_unreachable_while_the_other_switches(project, slot_agents):
    down, up = slot_agents
    down.stop()
    report = deploy_to_devices(project, "0", [down.address, up.address], timeout=20)
    states = {o.address: o.state for o in report.outcomes}
    assert states == {down.address: UNREACHABLE, up.address: SWITCHED}
    assert "nothing answers" in report.outcomes[0].reason
    assert served(up)[0] == report.sha256
    assert not report.ok


def test_a_model_the_device_cannot_load_fails_with_its_reason_and_the_old_one_serves(
        project, slot_agents):
    agent = slot_agents[0]
    first = deploy_to_devices(project, "0", [agent.address])
    report = deploy_to_devices(project, "2", [agent.address])
    [outcome] = report.outcomes
    assert outcome.state == FAILED
    assert "cannot load" in outcome.reason and "keeps its model" in outcome.reason
    assert served(agent)[0] == first.sha256


def test_the_cli_deploys_lists_slots_and_exits_1_naming_the_devices_that_failed(
        project, start_agent):
    one, two = start_slot_agents(start_agent)
    for agent in (one, two):  # paired by the commands' own keyring
        assert run_cli("pair", agent.address, "--code", agent.code).returncode == 0
    done = run_cli("deploy", str(project), "production", "--device", one.address, "--device",
                   two.address, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert data["ok"] and [o["state"] for o in data["outcomes"]] == [SWITCHED, SWITCHED]
    listed = run_cli("slots", one.address, "--json")
    assert listed.returncode == 0, listed.stderr
    [slot] = json.loads(listed.stdout)["slots"]
    assert slot["slot"] == "classifier" and slot["model"] == data["sha256"]
    failed = run_cli("deploy", str(project), "2", "--device", two.address)
    assert failed.returncode == 1
    assert "did not switch" in failed.stderr and "Deploy Phone 2 (failed)" in failed.stderr
    bad = run_cli("deploy", str(project), "0009", "--device", one.address)
    assert bad.returncode == 1 and "no model version 0009" in bad.stderr

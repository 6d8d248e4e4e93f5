"""Verifying a model on devices against this computer: two devices (two agents with their own
ports and data folders), the digits model on the project's dataset, the per-output table, the
latency table, and the history per model version."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from workbench.device.errors import DeviceError
from workbench.device.link import DeviceLink, pair_device
from workbench.device.verify import Verification, VerificationHistory, history_for, verify_model
from workbench.modeltools.data import load_npz

from .conftest import RUN_ID, run_cli


@pytest.fixture
def project_model(digits_project, digits_onnx):
    """The fp32 digits ONNX model in the digits project's run folder."""
    target = digits_project / "runs" / RUN_ID / "outputs" / "model.onnx"
    shutil.copy(digits_onnx, target)
    return target


def test_verify_on_two_devices_agrees_fully_for_the_fp32_digits_model(start_agent, project_model,
                                                                      digits_project):
    phones = [start_agent(name="Phone A"), start_agent(name="Phone B")]
    assert phones[0].port != phones[1].port and phones[0].data_dir != phones[1].data_dir
    results = []
    for phone in phones:
        pair_device(phone.address, phone.code)
        with DeviceLink.open(phone.address) as link:
            results.append(verify_model(link, project_model, samples=64, bench_runs=20))

    for phone, result in zip(phones, results):
        assert result.passed and result.device_name == phone.name
        assert result.address == phone.address and result.runtime == "onnxruntime"
        assert result.samples == 64 and "test split" in result.data_source
        [logits] = result.outputs
        assert logits.name == "logits" and logits.shape == [64, 10]
        assert logits.top1_agreement == 100.0 and logits.max_abs_diff <= 1e-5
        assert result.accuracy["device"] == result.accuracy["host"] > 80
        for side in ("device", "host"):
            figures = result.latency[side]
            assert figures["p50_ms"] <= figures["p90_ms"] <= figures["p99_ms"]
        text = result.to_text()
        assert text.startswith("PASS  model.onnx") and "100.0 %" in text
        assert "max abs diff" in text and "p99 ms" in text and "this computer" in text

    history = VerificationHistory(digits_project)
    assert history.path == digits_project / ".workbench" / "device-verifications.jsonl"
    recorded = history.entries(results[0].sha256)
    assert [e.device_name for e in recorded] == ["Phone A", "Phone B"]
    assert recorded[0].model == f"runs/{RUN_ID}/outputs/model.onnx"
    assert history.entries("0" * 64) == []


def test_verify_from_the_cli_prints_the_tables_and_records_the_version(start_agent, project_model,
                                                                      digits_project, digits_npz):
    phone = start_agent(name="CLI Phone")
    assert run_cli("pair", phone.address, "--code", phone.code).returncode == 0

    done = run_cli("verify", phone.address, str(project_model), "--npz", str(digits_npz),
                   "--samples", "32", "--runs", "10")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("PASS  model.onnx")
    assert "32 samples from" in done.stdout and "100.0 %" in done.stdout

    as_json = run_cli("verify", phone.address, str(project_model), "--samples", "16", "--runs",
                      "5", "--json")
    assert as_json.returncode == 0, as_json.stderr
    result = json.loads(as_json.stdout)
    assert result["passed"] and result["outputs"][0]["top1_agreement"] == 100.0
    assert set(result["latency"]) == {"device", "host"}

    history = run_cli("history", str(project_model), "--json")
    assert history.returncode == 0, history.stderr
    assert [e["samples"] for e in json.loads(history.stdout)] == [32, 16]
    shown = run_cli("history", str(project_model))
    assert shown.stdout.count("CLI Phone") == 2 and "PASS" in shown.stdout


def test_outputs_beyond_the_tolerance_fail_and_the_cli_exits_1(start_agent, project_model,
                                                              digits_npz):
    phone = start_agent()
    pair_device(phone.address, phone.code)
    data = load_npz(digits_npz)
    with DeviceLink.open(phone.address) as link:
        strict = verify_model(link, project_model, data, samples=16, atol=0.0, bench_runs=0,
                              record=False)
    # The same runtime on the same machine gives the same numbers: even 0 passes.
    assert strict.passed and strict.latency == {}

    class OffByOne:
        """A device whose every output is off by one (a stand-in for a broken runtime)."""

        def __init__(self, link):
            self.link = link
            self.name, self.device_id, self.address = link.name, link.device_id, link.address

        def load(self, *args):
            return self.link.load(*args)

        def run(self, loaded, inputs):
            outputs, ms = self.link.run(loaded, inputs)
            return {k: v + 1.0 for k, v in outputs.items()}, ms

    with DeviceLink.open(phone.address) as link:
        failed = verify_model(OffByOne(link), project_model, data, samples=16, bench_runs=0,
                              record=False)
    assert not failed.passed
    assert failed.outputs[0].max_abs_diff == pytest.approx(1.0)
    assert failed.outputs[0].top1_agreement == 100.0  # the classes agree, the values do not
    assert "FAIL" in failed.to_text()
    assert Verification.from_json(json.loads(json.dumps(failed.to_json()))).passed is False


def test_a_model_outside_any_project_is_verified_on_random_inputs_into_the_user_history(
        start_agent, digits_onnx, tmp_path):
    phone = start_agent()
    pair_device(phone.address, phone.code)
    with DeviceLink.open(phone.address) as link:
        with pytest.raises(DeviceError) as error:
            verify_model(link, digits_onnx, npz=tmp_path / "missing.npz")
        assert "does not exist" in str(error.value)
        result = verify_model(link, digits_onnx, samples=8, bench_runs=0)
    assert result.passed and result.data_source.startswith("random inputs")
    history = history_for(digits_onnx)
    assert history.project is None and history.path.parent == tmp_path / "data"
    assert [e.sha256 for e in history.entries()] == [result.sha256]
    assert np.isfinite(result.outputs[0].max_abs_diff)


def test_the_latency_table_writes_peak_memory_in_binary_units_and_unknowns_as_a_dash():
    from workbench.device.verify import latency_table

    figures = {"init_ms": 12.5, "p50_ms": 1.0, "p90_ms": 1.5, "p99_ms": 2.0, "mean_ms": 1.1,
               "runs": 20, "batch": 1}
    lines = latency_table({"device": dict(figures, peak_rss_bytes=300 * 2**20),
                           "host": dict(figures, init_ms=None, peak_rss_bytes=None)})
    device_row = next(line for line in lines if line.strip().startswith("device"))
    host_row = next(line for line in lines if line.strip().startswith("this computer"))
    assert device_row.rstrip().endswith("300.0 MiB") and " MB" not in device_row
    # Both unknown figures, init time and peak memory, show the one mark the panel uses.
    assert host_row.split()[2] == "–" and host_row.rstrip().endswith("–")
    assert "-" not in host_row.replace("this computer", "")

"""A model verified on a device that is a file of a model version in the project's registry:
the verification goes into that version's record (device, file, pass, agreement, max abs diff,
latency), from a real local agent; a damaged record never fails the verification, which says
why it was not recorded."""

from __future__ import annotations

import pytest

from tests.modeltools.version_helpers import damage_record, register_digits_version, version_record
from workbench.device.link import DeviceLink, pair_device
from workbench.device.verify import verify_model


@pytest.fixture
def models_folder(digits_project, digits_onnx):
    return register_digits_version(digits_project, digits_onnx)


def test_a_verification_of_a_version_s_file_goes_into_the_version_s_record(start_agent,
                                                                          models_folder):
    phone = start_agent(name="Registry Phone")
    pair_device(phone.address, phone.code)
    model = models_folder / "bestmodel_0000.onnx"
    with DeviceLink.open(phone.address) as link:
        result = verify_model(link, model, samples=32, bench_runs=5)
        unrecorded = verify_model(link, model, samples=8, bench_runs=0, record=False)

    assert result.passed and result.model_version == "0000" and result.registry_note == ""
    assert "recorded under model version 0000 in the registry" in result.to_text()
    [entry] = version_record(models_folder)["verifications"]
    assert entry["device"] == "Registry Phone" and entry["device_id"] == phone.device_id
    assert entry["model_file"] == "bestmodel_0000.onnx" and entry["passed"] is True
    assert entry["sha256"] == result.sha256 and entry["samples"] == 32
    assert entry["agreement"] == 100.0 and entry["max_abs_diff"] <= 1e-5
    assert 0 < entry["latency_p50_ms"] <= entry["latency_p90_ms"]
    assert entry["time"] and entry["runtime"] == "onnxruntime"
    # The version's files are as they were.
    assert [f["name"] for f in version_record(models_folder)["files"]] == \
        ["bestmodel_0000.pt", "bestmodel_0000.onnx"]
    assert unrecorded.model_version == "" and unrecorded.registry_note == ""


def test_a_damaged_version_record_does_not_fail_the_verification(start_agent, models_folder):
    phone = start_agent()
    pair_device(phone.address, phone.code)
    damaged = damage_record(models_folder)
    text = damaged.read_text()
    with DeviceLink.open(phone.address) as link:
        result = verify_model(link, models_folder / "bestmodel_0000.onnx", samples=16,
                              bench_runs=0)

    assert result.passed and result.model_version == "0000"
    assert result.registry_note.startswith("not recorded under model version 0000 in the registry: ")
    assert "neural_net_info_0000.yaml is damaged" in result.registry_note
    assert f"warning: {result.registry_note}" in result.to_text()
    assert damaged.read_text() == text


def test_a_model_of_no_version_is_verified_as_before(start_agent, models_folder, digits_project):
    phone = start_agent()
    pair_device(phone.address, phone.code)
    record = (models_folder / "neural_net_info_0000.yaml").read_text()
    outside = digits_project / "runs" / "bestmodel_0000.onnx"
    outside.write_bytes((models_folder / "bestmodel_0000.onnx").read_bytes())
    with DeviceLink.open(phone.address) as link:
        result = verify_model(link, outside, samples=8, bench_runs=0)

    assert result.passed and result.model_version == "" and result.registry_note == ""
    assert (models_folder / "neural_net_info_0000.yaml").read_text() == record

"""Verify in the Devices panel of a model version's file: the verdict says the verification went
into the version's record, and the record has it."""

from __future__ import annotations

from tests.modeltools.version_helpers import register_digits_version, version_record

from .conftest import TIMEOUT_MS


def test_verify_of_a_version_s_file_says_it_was_recorded_under_the_version(paired_window,
                                                                          digits_project,
                                                                          digits_onnx, qtbot):
    models_folder = register_digits_version(digits_project, digits_onnx)
    model = models_folder / "bestmodel_0000.onnx"
    phone, window, panel, session = paired_window(digits_project)

    with qtbot.waitSignal(session.sig_verified, timeout=TIMEOUT_MS) as verified:
        window.commands.execute("device.verifyFile", path=model, device=phone.address,
                                samples=16, bench_runs=5)

    assert verified.args[0].passed and verified.args[0].model_version == "0000"
    qtbot.waitUntil(lambda: "model version 0000" in panel.verdict.text(), timeout=TIMEOUT_MS)
    assert "Recorded under model version 0000 in the registry" in panel.verdict.text()
    [entry] = version_record(models_folder)["verifications"]
    assert entry["device"] == "Bench Phone" and entry["model_file"] == "bestmodel_0000.onnx"

"""What the device capability gives the rest of its window, on a real agent: "Verify on Device…"
in the Models panel's right-click menu of a model, and a status bar that lets go of a
verification's progress once it ended, while the device's log streams on."""

from __future__ import annotations

from workbench.device.widgets.session import LOGS_KEY
from workbench.modeltools.widgets import panel_of as models_panel_of

from .conftest import TIMEOUT_MS


def test_verify_on_device_in_the_models_panel_menu_verifies_that_model(
        paired_window, digits_project, project_model, qtbot):
    phone, window, panel, session = paired_window(digits_project)
    models = models_panel_of(window)
    qtbot.waitUntil(lambda: models.select_path(project_model), timeout=TIMEOUT_MS)
    assert panel.selected_address() == phone.address

    actions = {a.objectName(): a for a in models.context_menu_for([project_model]).actions()}
    assert actions["device.verifyFile"].text() == "Verify on Device…"
    assert actions["device.verifyFile"].isEnabled()
    panel.samples.setValue(16)
    with qtbot.waitSignal(session.sig_verified, timeout=TIMEOUT_MS) as verified:
        actions["device.verifyFile"].trigger()

    assert panel.model_path == project_model
    result = verified.args[0]
    assert result.passed and result.samples == 16 and result.device_name == "Bench Phone"
    assert window.findChild(type(window.explorer), "dock-devices").isVisible()

    checkpoint = digits_project / "weights.pt"
    checkpoint.write_bytes(b"pt")
    assert "device.verifyFile" not in {a.objectName() for a in models.context_menu_for([checkpoint]).actions()}


def test_the_status_bar_drops_a_finished_verification_while_the_log_streams(
        paired_window, digits_project, project_model, qtbot):
    phone, window, panel, session = paired_window(digits_project)
    panel.set_model(project_model)
    assert panel.select_device(phone.address)
    panel.follow_button.setChecked(True)
    assert session.is_busy(LOGS_KEY)
    said = []
    window.tasks.sig_progress.connect(said.append)

    with qtbot.waitSignal(session.sig_verified, timeout=TIMEOUT_MS):
        panel.verify(samples=16, bench_runs=50)

    assert any(line.startswith("Verifying model.onnx") for line in said)
    assert session.is_busy(LOGS_KEY) and panel.follow_button.isChecked()
    assert window.statusBar().currentMessage() == ""
    panel.follow_button.setChecked(False)
